"""WAV files, read by the native RIFF/WAVE reader where it takes them and by FFmpeg where not: every sample
format, WAVE_FORMAT_EXTENSIBLE layouts, odd chunks, data sizes of 0 / 0xFFFFFFFF / larger than the file, RF64,
and the formats left to FFmpeg (A-law, mu-law, ADPCM, S/PDIF data, 20-bit samples in 32-bit containers) all give
the ffmpeg CLI's samples, whole and in windows. Headers are built byte by byte around the CLI's own raw samples."""

import random
import struct
import subprocess

import pytest
import torch

from spdl_torch import DecodeError
from spdl_torch.io import decode_audio, decode_audio_batch
from spdl_torch.io._audio import window_samples

from tests._utils import audio as A

pytestmark = pytest.mark.skipif(A.FFMPEG is None, reason="the ffmpeg CLI is not installed")

RATE = 22050


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    """1.5 s of 5.1 (6 sines, one per channel) as 32-bit float: the raw samples every header wraps."""
    return A.make_audio(tmp_path_factory.mktemp("wav_src") / "src.wav", rate=RATE, channels=6, codec="pcm_f32le",
                        seconds=1.5)


def _pcm(source, tmp_path, channels, fmt):
    """`channels` channels of the source as raw `fmt` samples (the CLI's -ac mix; -af pan keeps the first ones)."""
    mono = tmp_path / f"src{channels}.wav"
    if not mono.exists():
        pan = "|".join(f"c{c}=c{c}" for c in range(channels))
        subprocess.run([A.FFMPEG, "-nostdin", "-v", "error", "-y", "-i", str(source), "-af",
                        f"pan={channels}c|{pan}", "-c:a", "pcm_f32le", str(mono)], check=True, capture_output=True)
    return A.raw_pcm(mono, fmt)


def _same_as_cli(path, *, windows=3, rate=RATE, resampled=False):
    """Whole decode (native rate, and 16 kHz mono when `resampled`) == the CLI's; windows at random starts ==
    slices of it."""
    whole = decode_audio(path).data
    assert torch.equal(whole, A.cli_samples(path)), path.name
    if resampled:
        assert torch.equal(decode_audio(path, sample_rate=16000, num_channels=1).data,
                           A.cli_samples(path, sample_rate=16000, num_channels=1)), path.name
    n = whole.shape[1]
    rng = random.Random(path.name)
    for _ in range(windows):
        a = rng.uniform(0.0, n / rate)
        lo, hi = window_samples(a, rate), min(window_samples(a + 0.2, rate), n)
        if lo >= n:
            continue
        assert torch.equal(decode_audio(path, start_seconds=a, stop_seconds=a + 0.2).data, whole[:, lo:hi]), a
    return whole


# (fmt chunk tag, bits, the CLI's raw format)
FORMATS = {"u8": (1, 8, "u8"), "s16": (1, 16, "s16le"), "s24": (1, 24, "s24le"), "s32": (1, 32, "s32le"),
           "f32": (3, 32, "f32le"), "f64": (3, 64, "f64le")}


def _fast(params, fast):
    """pytest params (tuples), those not in `fast` in the slow tier."""
    return [pytest.param(*p, marks=() if p in fast else pytest.mark.slow, id="-".join(map(str, p))) for p in params]


@pytest.mark.parametrize("name,channels", _fast([(n, c) for n in FORMATS for c in (1, 2)],
                                                {("u8", 1), ("s24", 2), ("f64", 2)}))
def test_every_sample_format(source, tmp_path, name, channels):
    tag, bits, fmt = FORMATS[name]
    path = tmp_path / f"{name}.wav"
    path.write_bytes(A.wav_file(A.wav_fmt(tag=tag, channels=channels, rate=RATE, bits=bits),
                                _pcm(source, tmp_path, channels, fmt)))
    _same_as_cli(path, resampled=True)


@pytest.mark.parametrize("mask,name", _fast([(m, n) for m in (0x3F, 0x60F, 0) for n in ("s16", "s24", "f32")],
                                             {(0x60F, "s16"), (0, "f32")}))  # 5.1, 5.1(side), no speaker mask
def test_extensible_layouts_mix_as_the_cli(source, tmp_path, mask, name):
    # The speaker mask decides the downmix: 5.1 and 5.1(side) to stereo differ; without a mask the CLI guesses.
    tag, bits, fmt = FORMATS[name]
    path = tmp_path / f"ext_{name}_{mask:x}.wav"
    path.write_bytes(A.wav_file(A.wav_fmt(tag=tag, channels=6, rate=RATE, bits=bits, extensible=(bits, mask)),
                                _pcm(source, tmp_path, 6, fmt)))
    _same_as_cli(path, resampled=True)
    assert torch.equal(decode_audio(path, num_channels=2).data, A.cli_samples(path, num_channels=2))


ODD = ["list_first", "fact_junk", "chunks_after", "fmt_with_cb_size"]


@pytest.mark.parametrize("case", _fast([(c,) for c in ODD], {("fact_junk",), ("chunks_after",)}))
def test_odd_chunks_pad_bytes_and_trailing_chunks(source, tmp_path, case):
    pcm = _pcm(source, tmp_path, 1, "u8")[:-1]  # an odd number of bytes: the data chunk gets a pad byte
    fmt = A.wav_fmt(tag=1, channels=1, rate=RATE, bits=8)
    info = A.riff_chunk(b"LIST", b"INFOISFT" + struct.pack("<I", 5) + b"test\0")  # odd-sized subchunk, padded
    fact = A.riff_chunk(b"fact", struct.pack("<I", len(pcm)))
    junk = A.riff_chunk(b"junk", b"abc")  # odd size: a pad byte follows
    data = {
        "list_first": lambda: A.wav_file(fmt, pcm, before=[info]),
        "fact_junk": lambda: A.wav_file(fmt, pcm, before=[fact, junk]),
        "chunks_after": lambda: A.wav_file(fmt, pcm, after=[info, junk]),
        "fmt_with_cb_size": lambda: A.wav_file(A.wav_fmt(tag=1, channels=1, rate=RATE, bits=8, cb_size=0), pcm),
    }[case]()
    path = tmp_path / f"{case}.wav"
    path.write_bytes(data)
    assert _same_as_cli(path, windows=1).shape[1] == len(pcm)


@pytest.mark.parametrize("data_size", [0, 0xFFFFFFFF, 0x7FFFF000])
def test_data_size_0_or_unknown_reads_to_the_end(source, tmp_path, data_size):
    # A WAV written to a pipe (0x7FFFF000: what some streaming writers put there, as the corpus' linphone sounds
    # have it): the data runs to the end of the file, whatever follows. Strict mode too.
    pcm = _pcm(source, tmp_path, 2, "s16le")
    path = tmp_path / "streamed.wav"
    path.write_bytes(A.wav_file(A.wav_fmt(tag=1, channels=2, rate=RATE, bits=16), pcm, data_size=data_size)
                     + b"\x01\x02\x03")  # a trailing partial sample frame: not a sample
    whole = _same_as_cli(path)
    assert whole.shape[1] == len(pcm) // 4


def test_pipe_written_by_the_cli(tmp_path):
    raw = subprocess.run([A.FFMPEG, "-nostdin", "-v", "error", "-f", "lavfi", "-i", "sine=d=0.7:sample_rate=16000",
                          "-f", "wav", "-"], check=True, capture_output=True).stdout
    assert raw[4:8] == b"\xff\xff\xff\xff"  # what FFmpeg writes when it cannot seek back
    path = tmp_path / "pipe.wav"
    path.write_bytes(raw)
    _same_as_cli(path, rate=16000)


def test_data_larger_than_the_file_is_truncated(source, tmp_path):
    pcm = _pcm(source, tmp_path, 2, "s16le")
    path = tmp_path / "cut.wav"
    for stated in (len(pcm) + 4096 * 4, 0x7FFFEFFF):  # a cut file; a header that overstates its data
        path.write_bytes(A.wav_file(A.wav_fmt(tag=1, channels=2, rate=RATE, bits=16), pcm, data_size=stated))
        for start in (0.0, 1.0):  # from the start, or after a seek
            with pytest.raises(DecodeError, match=r"cut\.wav: truncated pcm_s16le stream: the header states "
                                                  rf"{stated // 4} samples .*the data holds {len(pcm) // 4}"):
                decode_audio(path, start_seconds=start)
        whole = decode_audio(path, strict=False).data
        assert torch.equal(whole, A.cli_samples(path))
        lo = window_samples(1.0, RATE)
        assert torch.equal(decode_audio(path, start_seconds=1.0, strict=False).data, whole[:, lo:])
        # crops are drawn from what the file holds
        b = decode_audio_batch([path] * 8, sample_rate=RATE, num_channels=2, duration=0.5, seeds=list(range(8)),
                               strict=False)
        assert b.lengths.tolist() == [window_samples(0.5, RATE)] * 8
        for i, o in enumerate(b.offsets.tolist()):
            assert torch.equal(b.data[i], whole[:, o:o + window_samples(0.5, RATE)])


def test_rf64(source, tmp_path):
    path = tmp_path / "rf64.wav"
    path.write_bytes(A.wav_file(A.wav_fmt(tag=3, channels=2, rate=RATE, bits=32), _pcm(source, tmp_path, 2, "f32le"),
                                rf64=True))
    _same_as_cli(path)
    cli = tmp_path / "cli_rf64.wav"  # and the CLI's own RF64
    subprocess.run([A.FFMPEG, "-nostdin", "-v", "error", "-y", "-i", str(path), "-rf64", "always", str(cli)],
                   check=True, capture_output=True)
    assert cli.read_bytes()[:4] == b"RF64"
    _same_as_cli(cli)


def _spdif_wav(tmp_path):
    """AC-3 in IEC 61937 bursts (the CLI's spdif muxer), inside a 16-bit stereo PCM WAV."""
    burst = subprocess.run([A.FFMPEG, "-nostdin", "-v", "error", "-f", "lavfi", "-i", "sine=d=1:sample_rate=48000",
                            "-ac", "2", "-c:a", "ac3", "-f", "spdif", "-"], check=True, capture_output=True).stdout
    return A.wav_file(A.wav_fmt(tag=1, channels=2, rate=48000, bits=16), burst)


@pytest.mark.parametrize("case", _fast([(c,) for c in ("alaw", "mulaw", "adpcm", "valid20", "spdif")],
                                     {("valid20",), ("spdif",)}))
def test_formats_left_to_ffmpeg(source, tmp_path, case):
    path = tmp_path / f"{case}.wav"
    if case == "valid20":
        # 20-bit samples in 32-bit containers: FFmpeg reads them as packed 24-bit ones (its last packet is then
        # no whole number of samples: the CLI, like strict=False, skips it); the native reader leaves them
        pcm = _pcm(source, tmp_path, 2, "s32le")
        path.write_bytes(A.wav_file(A.wav_fmt(tag=1, channels=2, rate=RATE, bits=32, extensible=(20, 3)), pcm))
    elif case == "spdif":
        path.write_bytes(_spdif_wav(tmp_path))
        assert A.probe(path)["codec_name"] == "ac3"
    else:
        codec = {"alaw": "pcm_alaw", "mulaw": "pcm_mulaw", "adpcm": "adpcm_ms"}[case]
        subprocess.run([A.FFMPEG, "-nostdin", "-v", "error", "-y", "-i", str(source), "-ac", "2", "-c:a", codec,
                        str(path)], check=True, capture_output=True)
    whole = decode_audio(path, strict=case != "valid20").data
    assert torch.equal(whole, A.cli_samples(path)), case
