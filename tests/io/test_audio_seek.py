"""Windows anywhere in a file hold the whole decode's samples [round(start * r), round(stop * r)), for every
codec that is reached by seeking (WAV, FLAC, MP3 with and without a Xing header, Ogg Vorbis, AAC-LC in M4A: bit for
bit; Ogg Opus: within the documented bound with seek_mode="approximate"; AAC with noise substitution: other noise
in those bands), and bit for bit for all with seek_mode="exact"; the whole decode itself equals the ffmpeg CLI's. The fast tier takes a handful of starts on 12 s files, the slow tier 100
starts per codec on 60 s files and the media corpus."""

import random
import subprocess

import pytest
import torch

from spdl_torch.io import decode_audio, decode_audio_batch
from spdl_torch.io._audio import window_samples

from tests._utils import audio as A
from tests._utils import corpus

pytestmark = pytest.mark.skipif(A.FFMPEG is None, reason="the ffmpeg CLI is not installed")

# The documented bound (docs/audio.md) of |window - whole decode| for Ogg Opus with seek_mode="approximate".
OPUS_BOUND = 2e-5

CODECS = {  # key: (suffix, CLI encoder arguments, rate, channels)
    "wav_s16": (".wav", ["-c:a", "pcm_s16le"], 44100, 2),
    "wav_f32": (".wav", ["-c:a", "pcm_f32le"], 16000, 1),
    "wav_s24": (".wav", ["-c:a", "pcm_s24le"], 22050, 1),
    "flac": (".flac", ["-c:a", "flac", "-sample_fmt", "s32"], 22050, 2),
    "mp3": (".mp3", ["-c:a", "libmp3lame", "-b:a", "96k"], 44100, 1),
    "mp3_vbr_no_xing": (".mp3", ["-c:a", "libmp3lame", "-q:a", "4", "-write_xing", "0"], 44100, 2),
    "vorbis": (".ogg", ["-c:a", "libvorbis"], 16000, 2),
    "opus": (".opus", ["-c:a", "libopus", "-b:a", "48k"], 48000, 2),
    "aac": (".m4a", ["-c:a", "aac", "-b:a", "96k", "-aac_pns", "0"], 44100, 2),
    # FFmpeg's encoder substitutes noise in some bands (PNS) by default: the decoder draws it from a generator
    # that runs through the whole stream, so an approximate window's noise bands hold other noise.
    "aac_pns": (".m4a", ["-c:a", "aac", "-b:a", "96k"], 44100, 2),
}
# How far an approximate window may be from the whole decode's samples (0: not at all; None: unchecked).
APPROXIMATE = {"opus": OPUS_BOUND, "aac_pns": None}
OUTPUTS = [(None, None), (16000, 1)]


def _make(root, key, seconds):
    suffix, args, rate, channels = CODECS[key]
    return A.make_long(root / f"{key}{suffix}", seconds=seconds, rate=rate, channels=channels, codec_args=args)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = tmp_path_factory.mktemp("audio_seek")
    return {key: _make(root, key, 12.0) for key in CODECS}


def _check_windows(path, starts, *, rate, channels, native_rate, bound=0.0, seconds=0.5, sources=None):
    """Windows [a, a + seconds) at each start against the whole decode: bit for bit with seek_mode "exact"; with
    "approximate" too (bound 0), within `bound`, or unchecked values (None). Returns the largest difference of
    the approximate windows."""
    whole = decode_audio(path, sample_rate=rate, num_channels=channels, seek_mode="exact").data
    r = rate or native_rate
    worst = 0.0
    for a in starts:
        lo, hi = window_samples(a, r), min(window_samples(a + seconds, r), whole.shape[1])
        for src in sources or (path,):
            for mode in ("exact", "approximate"):
                part = decode_audio(src, sample_rate=rate, num_channels=channels, start_seconds=a,
                                    stop_seconds=a + seconds, seek_mode=mode).data
                assert part.shape == (whole.shape[0], hi - lo), (path.name, a, mode)
                if mode == "exact" or bound == 0.0:
                    assert torch.equal(part, whole[:, lo:hi]), (path.name, a, mode)
                elif bound is not None:
                    worst = max(worst, float((part - whole[:, lo:hi]).abs().max()))
                    assert worst <= bound, (path.name, a, worst)
    return worst


@pytest.mark.parametrize("key", list(CODECS))
@pytest.mark.parametrize("rate,channels", OUTPUTS, ids=["native", "16k-mono"])
def test_windows_at_random_starts_equal_the_whole_decode(files, key, rate, channels):
    path = files[key]
    whole = decode_audio(path, sample_rate=rate, num_channels=channels, seek_mode="exact").data
    assert torch.equal(whole, A.cli_samples(path, sample_rate=rate, num_channels=channels))
    rng = random.Random(f"{key}{rate}")
    starts = [rng.uniform(1.0, 11.0) for _ in range(4)] + [11.9]  # 11.9: the window runs past the end
    data = torch.frombuffer(bytearray(path.read_bytes()), dtype=torch.uint8)
    _check_windows(path, starts, rate=rate, channels=channels, native_rate=CODECS[key][2],
                   bound=APPROXIMATE.get(key, 0.0), sources=(path, data))


@pytest.mark.parametrize("key", ["wav_s16", "flac", "mp3", "vorbis", "opus", "aac", "aac_pns"])
def test_random_crops_late_in_the_file_equal_slices(files, key):
    paths = [files[key]] * 6
    whole = decode_audio(files[key], sample_rate=16000, num_channels=1, seek_mode="exact").data
    for mode in ("exact", "approximate"):
        b = decode_audio_batch(paths, sample_rate=16000, num_channels=1, duration=0.75, seeds=list(range(6)),
                               seek_mode=mode)
        offsets = [int(o) for o in b.offsets]
        assert max(offsets) > 16000 * 2, offsets  # some crops start late enough to seek
        for i, lo in enumerate(offsets):
            assert int(b.lengths[i]) == 12000
            crop, ref = b.data[i, :, :12000], whole[:, lo:lo + 12000]
            bound = APPROXIMATE.get(key, 0.0)
            if mode == "exact" or bound == 0.0:
                assert torch.equal(crop, ref), (mode, i, lo)
            elif bound is not None:
                assert float((crop - ref).abs().max()) <= bound, (i, lo)


def test_opus_speech_windows_within_the_bound_and_exact_in_exact_mode(tmp_path):
    # Low-bitrate speech-like audio: SILK frames, whose decoder state after a seek stays slightly off.
    path = tmp_path / "speech.opus"
    subprocess.run([A.FFMPEG, "-nostdin", "-v", "error", "-y", "-f", "lavfi", "-i",
                    "aevalsrc='0.4*sin(2*PI*(150+20*sin(2*PI*0.3*t))*t)+0.2*sin(2*PI*450*t)*sin(2*PI*2*t)':"
                    "s=48000:d=8", "-ac", "1", "-c:a", "libopus", "-b:a", "24k", str(path)],
                   check=True, capture_output=True)
    rng = random.Random(3)
    _check_windows(path, [rng.uniform(1.5, 7.0) for _ in range(8)], rate=None, channels=None, native_rate=48000,
                   bound=OPUS_BOUND, seconds=0.1)


def test_seek_mode_is_checked(files):
    for bad in ("fast", "", None, 1):
        with pytest.raises(ValueError, match="expected seek_mode 'exact' or 'approximate'"):
            decode_audio(files["opus"], start_seconds=1.0, seek_mode=bad)
        with pytest.raises(ValueError, match="expected seek_mode 'exact' or 'approximate'"):
            decode_audio_batch([files["opus"]], sample_rate=16000, num_channels=1, seek_mode=bad)
    with pytest.raises(ValueError, match="expected seek_mode 'exact' or 'approximate'"):
        torch.ops.spdl_torch.decode_audio_file(str(files["opus"]), seek_mode="fast")


# The slow tier: 100 starts per codec over 60 s files, and over the media corpus' files of each codec.
@pytest.mark.slow
@pytest.mark.parametrize("key", list(CODECS))
def test_100_starts_on_long_files(tmp_path, key):
    path = _make(tmp_path, key, 60.0)
    rng = random.Random(key)
    _check_windows(path, [rng.uniform(0.5, 59.0) for _ in range(100)], rate=None, channels=None,
                   native_rate=CODECS[key][2], bound=APPROXIMATE.get(key, 0.0), seconds=0.3)


def _corpus(suffix, codec, count):
    """`count` corpus files of `suffix` whose codec is `codec`: the longest half (the long tracks) and the rest
    spread over the others (other encoders)."""
    paths = [p for p in sorted(corpus.files("audio", suffix), key=lambda p: -p.stat().st_size)
             if A.probe(p).get("codec_name") == codec]
    longest = paths[: count // 2]
    rest = paths[count // 2:]
    return longest + rest[:: max(1, len(rest) // max(1, count - len(longest)))][: count - len(longest)]


@pytest.mark.slow
@pytest.mark.corpus
@pytest.mark.parametrize("suffix,codec", [(".wav", "pcm_s16le"), (".flac", "flac"), (".mp3", "mp3"),
                                          (".ogg", "vorbis"), (".opus", "opus")])
def test_100_starts_on_corpus_files(suffix, codec):
    corpus.require_corpus()
    paths = _corpus(suffix, codec, 10)
    if not paths:
        pytest.skip(f"no {codec} file in the corpus")
    for path in paths:
        info = A.probe(path)
        seconds = float(info["duration"])
        rng = random.Random(path.name)
        starts = [rng.uniform(0.0, max(seconds - 0.3, 0.0)) for _ in range(100 // len(paths) + 1)]
        _check_windows(path, starts, rate=None, channels=None, native_rate=int(info["sample_rate"]),
                       bound=OPUS_BOUND if codec == "opus" else 0.0, seconds=0.3)
