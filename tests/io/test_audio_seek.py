"""Late windows reached by seeking (PCM in WAV, FLAC) hold exactly the samples of the whole decode, which
equals the ffmpeg CLI's; so do the inputs that decode from the start instead (MP3, Vorbis, Opus, a chained
Ogg file, a streamed WAV whose header overstates its data); random crops of truncated files."""

import random
import shutil
import subprocess
import struct

import pytest
import torch

from spdl_torch import DecodeError
from spdl_torch.io import decode_audio, decode_audio_batch
from spdl_torch.io._audio import window_samples

from tests._utils import audio as A

pytestmark = pytest.mark.skipif(A.FFMPEG is None, reason="the ffmpeg CLI is not installed")

SECONDS = 12.0
FILES = {  # key: (codec, sample format, rate, channels)
    "wav_s16": ("pcm_s16le", "s16", 44100, 2),
    "wav_f32": ("pcm_f32le", "flt", 16000, 1),
    "wav_s24": ("pcm_s24le", "s32", 22050, 1),
    "flac": ("flac24", "s32", 22050, 2),
    "opus_stereo": ("opus", "flt", 48000, 2),
    "opus_mono": ("opus", "s16", 48000, 1),
    "mp3": ("mp3", "fltp", 44100, 1),
    "vorbis": ("vorbis", "fltp", 16000, 2),
}
OUTPUTS = [(None, None), (16000, 1)]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = tmp_path_factory.mktemp("audio_seek")
    out = {}
    for key, (codec, fmt, rate, channels) in FILES.items():
        path = root / f"{key}{A.SYNTH_CODECS[codec][0]}"
        out[key] = A.make_audio(path, rate=rate, channels=channels, codec=codec, sample_fmt=fmt,
                                seconds=SECONDS, source="noise")
    return out


def _windows(key, rate):
    rng = random.Random(f"{key}{rate}")
    out = [(SECONDS - 1.0, SECONDS - 0.5), (6.0, None), (1.2, 1.3)]  # late, to the end, just past the threshold
    out += [(a, a + rng.uniform(0.01, 1.0)) for a in (rng.uniform(1.0, SECONDS - 1.5) for _ in range(5))]
    return out


@pytest.mark.parametrize("key", list(FILES))
@pytest.mark.parametrize("rate,channels", OUTPUTS, ids=["native", "16k-mono"])
def test_late_windows_equal_slices_of_the_whole(files, key, rate, channels):
    path = files[key]
    whole = decode_audio(path, sample_rate=rate, num_channels=channels).data
    assert torch.equal(whole, A.cli_samples(path, sample_rate=rate, num_channels=channels))
    r = rate or FILES[key][2]
    data = torch.frombuffer(bytearray(path.read_bytes()), dtype=torch.uint8)
    for a, b in _windows(key, r):
        lo = window_samples(a, r)
        hi = whole.shape[1] if b is None else window_samples(b, r)
        for src in (path, data):  # the file, and the same bytes in memory
            part = decode_audio(src, sample_rate=rate, num_channels=channels, start_seconds=a, stop_seconds=b).data
            assert torch.equal(part, whole[:, lo:hi]), (key, a, b, type(src).__name__)


@pytest.mark.parametrize("key", ["wav_s16", "flac", "opus_stereo", "vorbis"])
def test_random_crops_late_in_the_file_equal_slices(files, key):
    paths = [files[key]] * 6
    b = decode_audio_batch(paths, sample_rate=16000, num_channels=1, duration=0.75, seeds=list(range(6)))
    whole = decode_audio(files[key], sample_rate=16000, num_channels=1).data
    offsets = [int(o) for o in b.offsets]
    assert max(offsets) > 16000 * 2, offsets  # some crops start late enough to seek
    for i, lo in enumerate(offsets):
        assert int(b.lengths[i]) == 12000
        assert torch.equal(b.data[i, :, :12000], whole[:, lo:lo + 12000])


def test_chained_ogg_decodes_from_the_start(files, tmp_path):
    # Two Ogg Opus files back to back: the second chain restarts its granule positions, so a seek by
    # timestamp would land in the wrong chain. The windows must still be slices of the whole decode.
    other = A.make_audio(tmp_path / "other.opus", rate=48000, channels=2, codec="opus", seconds=4.0)
    chained = tmp_path / "chained.opus"
    chained.write_bytes(files["opus_stereo"].read_bytes() + other.read_bytes())
    whole = decode_audio(chained).data
    assert torch.equal(whole, A.cli_samples(chained))
    assert whole.shape[1] > window_samples(SECONDS + 3.0, 48000)  # both chains are decoded
    for a in (SECONDS + 1.0, SECONDS - 2.0, 5.0):
        lo = window_samples(a, 48000)
        part = decode_audio(chained, start_seconds=a, stop_seconds=a + 0.5).data
        assert torch.equal(part, whole[:, lo:lo + 24000]), a


def _streamed_wav(src, dst, *, whole_packets):
    """`src` with the RIFF and data sizes of a WAV written to a pipe (0x7ffff000), its data cut to whole
    4096-byte demuxer reads, or to 1000 bytes more."""
    raw = bytearray(src.read_bytes())
    at = raw.index(b"data")
    raw[4:8] = struct.pack("<I", 0x7FFFF024)
    raw[at + 4:at + 8] = struct.pack("<I", 0x7FFFF000)
    data = len(raw) - (at + 8)
    keep = data - data % 4096 - (0 if whole_packets else 4096 - 1000)
    dst.write_bytes(bytes(raw[:at + 8 + keep]))
    return dst


def test_streamed_wav_windows_equal_the_whole_in_strict_mode(files, tmp_path):
    # A read from the start ends exactly at the end of the data; a seek elsewhere must keep the same packet
    # boundaries, or its last read comes up short and is flagged corrupt.
    path = _streamed_wav(files["wav_s16"], tmp_path / "streamed.wav", whole_packets=True)
    whole = decode_audio(path).data
    for a in (2.0, 8.0, 11.5):
        lo = window_samples(a, 44100)
        assert torch.equal(decode_audio(path, start_seconds=a).data, whole[:, lo:]), a


def test_streamed_wav_ending_inside_a_read_fails_alike(files, tmp_path):
    path = _streamed_wav(files["wav_s16"], tmp_path / "streamed.wav", whole_packets=False)
    for start in (0.0, 8.0):  # strict: the short last read is a truncation, from the start or after a seek
        with pytest.raises(DecodeError, match="truncated"):
            decode_audio(path, start_seconds=start)
    whole = decode_audio(path, strict=False).data
    for a in (2.0, 8.0):
        lo = window_samples(a, 44100)
        assert torch.equal(decode_audio(path, start_seconds=a, strict=False).data, whole[:, lo:])


def test_truncated_flac_late_window(files, tmp_path):
    cut = tmp_path / "cut.flac"
    raw = files["flac"].read_bytes()
    cut.write_bytes(raw[: len(raw) // 2])
    with pytest.raises(DecodeError, match="truncated"):
        decode_audio(cut, start_seconds=9.0)  # past the data: the same error as a decode from the start
    lenient = decode_audio(cut, strict=False).data
    lo = window_samples(3.0, 22050)
    assert torch.equal(decode_audio(cut, start_seconds=3.0, stop_seconds=4.0, strict=False).data, lenient[:, lo:lo + 22050])


@pytest.mark.skipif(shutil.which("ffprobe") is None, reason="ffprobe is not installed")
def test_window_past_the_end_of_a_long_file(files):
    with pytest.raises(IndexError, match="has only"):
        decode_audio(files["opus_mono"], start_seconds=SECONDS + 5.0)
    with pytest.raises(IndexError, match="has only"):
        decode_audio(files["wav_s16"], start_seconds=SECONDS + 5.0)


# Random crops of a truncated file: the header states the whole length, the data holds half of it.
TRUNCATED = {  # key: (codec, sample format, rate, channels)
    "mp3": ("mp3", "fltp", 44100, 2),
    "flac": ("flac16", "s16", 22050, 1),
    "opus": ("opus", "flt", 48000, 2),
}


@pytest.mark.parametrize("key", list(TRUNCATED))
def test_random_crops_of_a_truncated_file_come_from_its_decoded_length(tmp_path, key):
    codec, fmt, rate, channels = TRUNCATED[key]
    full = A.make_audio(tmp_path / f"full{A.SYNTH_CODECS[codec][0]}", rate=rate, channels=channels, codec=codec,
                        sample_fmt=fmt, seconds=8.0, source="noise")
    cut = tmp_path / f"cut{full.suffix}"
    raw = full.read_bytes()
    cut.write_bytes(raw[: len(raw) // 2])
    ref = A.cli_samples(cut, sample_rate=16000, num_channels=1)  # what the CLI decodes of the half file
    n, count = window_samples(0.5, 16000), 64
    assert ref.shape[1] > 3 * n
    kwargs = dict(sample_rate=16000, num_channels=1, duration=0.5, seeds=list(range(count)), strict=False)
    b = decode_audio_batch([cut] * count, **kwargs)
    assert b.ok.all() and b.lengths.tolist() == [n] * count  # every crop full: the decoded half holds them
    offsets = b.offsets.tolist()
    for i, lo in enumerate(offsets):
        assert lo + n <= ref.shape[1], (i, lo)
        assert torch.count_nonzero(b.data[i]) > 0, i  # noise: never a silent crop
        assert torch.equal(b.data[i], ref[:, lo:lo + n]), (i, lo)
    # reproducible: the same seeds, the same crops (any thread count: the pool is shared)
    again = decode_audio_batch([cut] * count, **kwargs)
    assert torch.equal(again.offsets, b.offsets) and torch.equal(again.data, b.data)
    if key == "opus":  # Ogg's length is the last remaining page's: the header of the half file is not stale
        return
    # the header states the full length: the crops it gives that fit in the decoded half are kept, the
    # others (past the data, all zeros before) are drawn again from the decoded length
    header = decode_audio_batch([full] * count, **kwargs).offsets.tolist()
    kept = [i for i, lo in enumerate(header) if lo + n <= ref.shape[1]]
    assert 0 < len(kept) < count
    assert all(offsets[i] == header[i] for i in kept)


# Ogg Opus contents whose decoder state after a seek takes longest to become the whole decode's: low-bitrate
# speech-like audio (SILK / hybrid frames) and a low-pitched harmonic tone (CELT's pitch post-filter, an IIR
# comb filter with a period of up to 1022 samples).
OPUS_SIGNALS = {
    "speech_24k": ("0.4*sin(2*PI*(150+20*sin(2*PI*0.3*t))*t)+0.2*sin(2*PI*450*t)*sin(2*PI*2*t)", ["-b:a", "24k"]),
    "low_pitch_128k": ("0.5*(sin(2*PI*47*t)+0.7*sin(2*PI*94*t)+0.5*sin(2*PI*141*t)+0.3*sin(2*PI*188*t))"
                       "*(0.6+0.4*sin(2*PI*0.2*t))", ["-b:a", "128k"]),
}


@pytest.mark.parametrize("kind", [k if k != "low_pitch_128k" else pytest.param(k, marks=pytest.mark.slow)  # ~3 s
                                  for k in OPUS_SIGNALS])
def test_opus_windows_reached_by_seeking_equal_the_whole_decode_exactly(tmp_path, kind):
    expr, options = OPUS_SIGNALS[kind]
    path = tmp_path / f"{kind}.opus"
    subprocess.run([A.FFMPEG, "-nostdin", "-v", "error", "-y", "-f", "lavfi", "-i", f"aevalsrc='{expr}':s=48000:d=20",
                    "-ac", "1", "-c:a", "libopus", *options, str(path)], check=True, capture_output=True)
    whole = decode_audio(path).data
    assert torch.equal(whole, A.cli_samples(path))
    rng = random.Random(kind)
    starts = [rng.uniform(1.2, 19.5) for _ in range(60)]
    for a in starts:
        lo = window_samples(a, 48000)
        part = decode_audio(path, start_seconds=a, stop_seconds=a + 0.02).data
        assert part.shape[1] == 960 and torch.equal(part, whole[:, lo:lo + 960]), a
