"""decode_audio against the ffmpeg CLI on synthetic files: every encoder / sample format here, every rate
(8k to 48k) and layout (mono, stereo, 5.1); bit-exact (the same libavcodec and libswresample)."""

import pytest
import torch

import spdl_torch
from spdl_torch.io import audio_metadata, decode_audio

from tests._utils import audio as A

pytestmark = pytest.mark.skipif(A.FFMPEG is None, reason="the ffmpeg CLI is not installed")

RATES = [8000, 16000, 22050, 44100, 48000]
# (codec key, sample format): every format each encoder takes; rates and layouts rotate over them.
FORMATS = [(c, f) for c, (_, _, fmts) in A.SYNTH_CODECS.items() for f in fmts]


def _combos():
    out = []
    for k, (codec, fmt) in enumerate(FORMATS):
        rate = 48000 if codec == "opus" else RATES[k % len(RATES)]
        channels = [1, 2, 6][k % 3]
        if codec == "mp3" and channels > 2:
            channels = 2  # LAME encodes at most 2 channels
        source = "noise" if k % 2 else "sine"
        out.append(pytest.param((codec, fmt, rate, channels, source), id=f"{codec}-{fmt}-{rate}-{channels}ch-{source}"))
    return out


COMBOS = _combos()


@pytest.fixture(scope="session")
def synth(tmp_path_factory):
    root = tmp_path_factory.mktemp("audio_synth")
    cache = {}

    def get(combo):
        if combo not in cache:
            codec, fmt, rate, channels, source = combo
            if not A.have_encoder(A.SYNTH_CODECS[codec][1]):
                pytest.skip(f"no {A.SYNTH_CODECS[codec][1]} encoder in this ffmpeg")
            path = root / f"{codec}_{fmt}_{rate}_{channels}_{source}{A.SYNTH_CODECS[codec][0]}"
            cache[combo] = A.make_audio(path, rate=rate, channels=channels, codec=codec, sample_fmt=fmt,
                                        seconds=0.4, source=source)
        return cache[combo]

    return get


@pytest.mark.parametrize("combo", COMBOS)
def test_native_equals_cli(synth, combo):
    path = synth(combo)
    ref = A.cli_samples(path)
    out = decode_audio(path).data
    assert out.dtype == torch.float32 and out.shape == ref.shape
    assert torch.equal(out, ref)
    assert out.shape[0] == combo[3]


@pytest.mark.parametrize("combo", COMBOS)
def test_resample_and_mix_equal_cli(synth, combo):
    path = synth(combo)
    for rate, channels in [(16000, 1), (44100, 2)]:
        ref = A.cli_samples(path, sample_rate=rate, num_channels=channels)
        out = decode_audio(path, sample_rate=rate, num_channels=channels).data
        assert out.shape == ref.shape, (rate, channels)
        assert torch.equal(out, ref), (rate, channels)


def test_resampler_reused_for_the_same_configuration_equals_cli(tmp_path):
    """A thread keeps its resampler contexts for the next decode of the same rates and formats: a context left
    with buffered input (a window that stopped mid-stream) converts the next file exactly as a new one, as the
    CLI's fresh process does, for whole files and windows alike."""
    sine = A.make_audio(tmp_path / "sine.wav", rate=44100, channels=2, codec="pcm_s16le", seconds=0.5)
    noise = A.make_audio(tmp_path / "noise.wav", rate=44100, channels=2, codec="pcm_s16le", seconds=0.5,
                         source="noise")
    refs = {p: A.cli_samples(p, sample_rate=16000, num_channels=1) for p in (sine, noise)}
    for path, start, stop in [(sine, 0.1, 0.2), (noise, 0.0, None), (sine, 0.0, None), (noise, 0.25, 0.3),
                              (sine, 0.0, None)]:
        out = decode_audio(path, sample_rate=16000, num_channels=1, start_seconds=start, stop_seconds=stop).data
        first = round(start * 16000)
        last = refs[path].shape[-1] if stop is None else round(stop * 16000)
        assert torch.equal(out, refs[path][:, first:last]), (path.name, start, stop)


@pytest.mark.parametrize("combo", COMBOS[::3])
def test_int16_equals_cli(synth, combo):
    path = synth(combo)
    assert torch.equal(decode_audio(path, dtype=torch.int16).data, A.cli_samples(path, dtype=torch.int16))
    ref = A.cli_samples(path, sample_rate=22050, num_channels=1, dtype=torch.int16)
    assert torch.equal(decode_audio(path, sample_rate=22050, num_channels=1, dtype=torch.int16).data, ref)


@pytest.mark.parametrize("combo", COMBOS)
def test_metadata_matches_ffprobe(synth, combo):
    path = synth(combo)
    probe = A.probe(path)
    meta = audio_metadata(path)
    assert meta.sample_rate == int(probe["sample_rate"])
    assert meta.num_channels == int(probe["channels"]) == combo[3]
    assert meta.codec == probe["codec_name"]
    assert meta.sample_format == probe["sample_fmt"]
    if probe.get("duration", "N/A") != "N/A":
        assert meta.duration_seconds == pytest.approx(float(probe["duration"]), abs=1e-3)
    assert audio_metadata(path.read_bytes()) == meta


def test_five_one_to_stereo_uses_the_cli_matrix(synth):
    path = synth(("pcm_s16le", "s16", 48000, 6, "sine"))
    ref = A.cli_samples(path, num_channels=2)
    out = decode_audio(path, num_channels=2).data
    assert torch.equal(out, ref)
    # and it is a real mix: the left output carries the centre channel (FFmpeg's default matrix)
    src = decode_audio(path).data
    assert not torch.equal(out[0], src[0])


def test_bytes_tensor_and_path_agree(synth):
    path = synth(("flac16", "s16", 44100, 2, "sine"))
    want = decode_audio(path, sample_rate=16000).data
    data = path.read_bytes()
    assert torch.equal(decode_audio(data, sample_rate=16000).data, want)
    assert torch.equal(decode_audio(bytearray(data), sample_rate=16000).data, want)
    tensor = torch.frombuffer(bytearray(data), dtype=torch.uint8)
    assert torch.equal(decode_audio(tensor, sample_rate=16000).data, want)
    assert torch.equal(spdl_torch.io.decode_audio(str(path), sample_rate=16000).data, want)
