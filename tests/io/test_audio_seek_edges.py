"""Seeking where it could go wrong: a file rewritten in place after its packet index was cached, chained Ogg
streams and a page without a granule position, truncated files (their crops are drawn again from the decoded
length), windows past the end. Every window is compared with the whole decode (seek_mode="exact"), which equals
the ffmpeg CLI's."""

import os
import time

import pytest
import torch

from spdl_torch import DecodeError
from spdl_torch.io import decode_audio, decode_audio_batch
from spdl_torch.io._audio import window_samples

from tests._utils import audio as A

pytestmark = pytest.mark.skipif(A.FFMPEG is None, reason="the ffmpeg CLI is not installed")

# The documented bound (docs/audio.md) of |window - whole decode| for Ogg Opus with seek_mode="approximate".
OPUS_BOUND = 2e-5


def _windows_match(path, starts, *, rate, seconds=0.25, bound=0.0, mode="approximate", output=(None, None), cli=True):
    """Windows at `starts` equal the whole decode's samples (within `bound`); the whole decode equals the CLI's
    (`cli`). `rate`: the output rate (the stream's unless `output` = (rate, channels) resamples or mixes)."""
    out_rate, out_channels = output
    rate = out_rate or rate
    whole = decode_audio(path, sample_rate=out_rate, num_channels=out_channels, seek_mode="exact").data
    if cli:
        assert torch.equal(whole, A.cli_samples(path, sample_rate=out_rate, num_channels=out_channels))
    for a in starts:
        lo, hi = window_samples(a, rate), min(window_samples(a + seconds, rate), whole.shape[1])
        part = decode_audio(path, start_seconds=a, stop_seconds=a + seconds, seek_mode=mode, sample_rate=out_rate,
                            num_channels=out_channels).data
        assert part.shape[1] == hi - lo, a
        if bound == 0.0:
            assert torch.equal(part, whole[:, lo:hi]), a
        else:
            assert float((part - whole[:, lo:hi]).abs().max()) <= bound, a


def _settle(path):
    """Waits until the file's times are a moment old, so that an index built from it is kept in the cache (one of
    a file changed a moment before is used once, not kept)."""
    st = os.stat(path)
    time.sleep(max(0.0, 0.15 - (time.time() - max(st.st_mtime, st.st_ctime))))


def test_index_of_a_file_rewritten_in_place_with_the_same_size(tmp_path):
    # An Ogg Opus file rewritten with another pre-skip: the same size and packets, other whole-decode
    # positions (every sample moves by the pre-skip's change). A stale index would shift every window.
    path = A.make_long(tmp_path / "a.opus", seconds=6.0, codec_args=["-c:a", "libopus", "-b:a", "64k"])
    original = path.read_bytes()
    _settle(path)
    _windows_match(path, [2.5, 4.0], rate=48000, bound=OPUS_BOUND)  # indexes the file, and keeps the index
    with open(path, "r+b") as f:  # the same inode, the same size
        f.write(A.opus_set_pre_skip(original, 312 + 960))
    assert path.stat().st_size == len(original)
    _windows_match(path, [2.5, 4.0], rate=48000, bound=OPUS_BOUND)
    _settle(path)
    _windows_match(path, [3.3], rate=48000, bound=OPUS_BOUND)


def test_index_of_a_file_rewritten_with_other_content(tmp_path):
    path = A.make_long(tmp_path / "a.mp3", seconds=6.0, codec_args=["-c:a", "libmp3lame", "-q:a", "3"])
    _settle(path)
    _windows_match(path, [2.0, 4.5], rate=48000)
    other = A.make_long(tmp_path / "b.mp3", seconds=5.0, rate=48000, channels=1, codec_args=["-c:a", "libmp3lame"])
    with open(path, "r+b") as f:
        f.write(other.read_bytes())
        f.truncate()
    _windows_match(path, [2.0, 4.5], rate=48000)


def test_chained_ogg_windows_equal_the_whole_decode(tmp_path):
    # Two Ogg files back to back, each chain restarting its granule positions: windows in either chain are
    # slices of the whole decode (which decodes both).
    for codec, suffix, rate in (("libopus", ".opus", 48000), ("libvorbis", ".ogg", 48000)):
        first = A.make_long(tmp_path / f"first{suffix}", seconds=4.0, codec_args=["-c:a", codec])
        second = A.make_long(tmp_path / f"second{suffix}", seconds=3.0, channels=1, codec_args=["-c:a", codec])
        chained = tmp_path / f"chained{suffix}"
        chained.write_bytes(first.read_bytes() + second.read_bytes())
        assert decode_audio(chained).data.shape[1] > window_samples(6.0, rate)  # both chains are decoded
        _windows_match(chained, [1.0, 3.5, 5.0, 6.5], rate=rate)
        # Resampled: the second chain is mono, a configuration change (the resampler drained, a new one). The
        # CLI rebuilds its filter graph there, which differs for Vorbis by a few samples: the windows are checked
        # against the whole decode only.
        _windows_match(chained, [1.0, 3.5, 5.0, 6.5], rate=rate, output=(16000, 1), cli=codec == "libopus")


def test_ogg_page_without_a_granule_position(tmp_path):
    # A page on which no packet ends has granule position -1 (RFC 3533); rewriting a middle page's granule so
    # leaves the samples as they were, and windows on either side of it still equal the whole decode.
    path = A.make_long(tmp_path / "a.ogg", seconds=6.0, codec_args=["-c:a", "libvorbis"])
    data = path.read_bytes()
    pages = A.ogg_pages(data)
    hole = tmp_path / "hole.ogg"
    hole.write_bytes(A.ogg_set_granule(data, len(pages) // 2, -1))
    assert torch.equal(A.cli_samples(hole), A.cli_samples(path))
    _windows_match(hole, [1.0, 2.9, 3.1, 5.0], rate=48000)


def test_truncated_flac_late_window(tmp_path):
    full = A.make_long(tmp_path / "full.flac", seconds=12.0, rate=22050, codec_args=["-c:a", "flac"])
    cut = tmp_path / "cut.flac"
    raw = full.read_bytes()
    cut.write_bytes(raw[: len(raw) // 2])
    with pytest.raises(DecodeError, match=r"cut\.flac: (truncated flac stream|corrupt audio stream: the flac decoder)"):
        decode_audio(cut, start_seconds=9.0)  # past the data: the same error as a decode from the start
    lenient = decode_audio(cut, strict=False).data
    lo = window_samples(3.0, 22050)
    part = decode_audio(cut, start_seconds=3.0, stop_seconds=4.0, strict=False).data
    assert torch.equal(part, lenient[:, lo:lo + 22050])


@pytest.mark.parametrize("codec,suffix", [("pcm_s16le", ".wav"), ("libopus", ".opus"), ("libmp3lame", ".mp3")])
def test_window_past_the_end_of_a_long_file(tmp_path, codec, suffix):
    path = A.make_long(tmp_path / f"a{suffix}", seconds=12.0, codec_args=["-c:a", codec])
    for rate in (None, 16000):  # the length in the message is the whole decode's, resampled or not
        n = decode_audio(path, sample_rate=rate, seek_mode="exact").data.shape[1]
        for mode in ("exact", "approximate"):
            with pytest.raises(IndexError, match=f"has only {n} samples"):
                decode_audio(path, start_seconds=17.0, sample_rate=rate, seek_mode=mode)


# Random crops of a truncated file: the header states the whole length, the data holds half of it.
TRUNCATED = {  # key: (codec, sample format, rate, channels)
    "mp3": ("mp3", "fltp", 44100, 2),
    "flac": ("flac16", "s16", 22050, 1),
    "opus": ("opus", "flt", 48000, 2),
    "vorbis": ("vorbis", "fltp", 16000, 2),
    "wav": ("pcm_s16le", "s16", 16000, 1),
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
    for mode in ("exact", "approximate"):
        kwargs = dict(sample_rate=16000, num_channels=1, duration=0.5, seeds=list(range(count)), strict=False,
                      seek_mode=mode)
        b = decode_audio_batch([cut] * count, **kwargs)
        assert b.ok.all() and b.lengths.tolist() == [n] * count  # every crop full: the decoded half holds them
        offsets = b.offsets.tolist()
        for i, lo in enumerate(offsets):
            assert lo + n <= ref.shape[1], (i, lo)
            assert torch.count_nonzero(b.data[i]) > 0, i  # noise: never a silent crop
            if mode == "exact" or key != "opus":
                assert torch.equal(b.data[i], ref[:, lo:lo + n]), (i, lo)
            else:
                assert float((b.data[i] - ref[:, lo:lo + n]).abs().max()) <= OPUS_BOUND, (i, lo)
        # reproducible: the same seeds, the same crops (any thread count: the pool is shared)
        again = decode_audio_batch([cut] * count, **kwargs)
        assert torch.equal(again.offsets, b.offsets) and torch.equal(again.data, b.data)
    if key in ("opus", "vorbis", "wav"):  # their lengths come from what the file holds: not stale
        return
    # the header states the full length: the crops it gives that fit in the decoded half are kept, the
    # others (past the data, all zeros before) are drawn again from the decoded length
    header = decode_audio_batch([full] * count, **kwargs).offsets.tolist()
    kept = [i for i, lo in enumerate(header) if lo + n <= ref.shape[1]]
    assert 0 < len(kept) < count
    assert all(offsets[i] == header[i] for i in kept)
