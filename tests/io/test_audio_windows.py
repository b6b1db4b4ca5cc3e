"""Windows and batches: round(d * r) samples, whole == concatenated windows (the resampler's delay and
lead-in), a window past the end, per-file resamplers in one batch, seeded random crops."""

import random

import pytest
import torch

from spdl_torch.io import decode_audio, decode_audio_batch
from spdl_torch.io._audio import window_samples

from tests._utils import audio as A

pytestmark = pytest.mark.skipif(A.FFMPEG is None, reason="the ffmpeg CLI is not installed")

FILES = {  # key: (codec, sample format, rate, channels)
    "wav": ("pcm_s16le", "s16", 44100, 2),
    "flac": ("flac24", "s32", 22050, 1),
    "mp3": ("mp3", "fltp", 48000, 2),
    "vorbis": ("vorbis", "fltp", 16000, 1),
    "opus": ("opus", "flt", 48000, 2),
}
OUTPUTS = [(None, None), (16000, 1), (8000, 2), (44100, 1)]


@pytest.fixture(scope="session")
def long_files(tmp_path_factory):
    root = tmp_path_factory.mktemp("audio_windows")
    out = {}
    for key, (codec, fmt, rate, channels) in FILES.items():
        path = root / f"{key}{A.SYNTH_CODECS[codec][0]}"
        out[key] = A.make_audio(path, rate=rate, channels=channels, codec=codec, sample_fmt=fmt, seconds=2.0,
                                source="noise")
    return out


def _index(t, r):
    return window_samples(t, r)


@pytest.mark.parametrize("key", list(FILES))
@pytest.mark.parametrize("rate,channels", OUTPUTS, ids=[f"{r}-{c}" for r, c in OUTPUTS])
def test_whole_equals_concatenated_windows(long_files, key, rate, channels):
    path = long_files[key]
    whole = decode_audio(path, sample_rate=rate, num_channels=channels).data
    ref = A.cli_samples(path, sample_rate=rate, num_channels=channels)
    assert torch.equal(whole, ref)
    r = rate or FILES[key][2]
    rng = random.Random(f"{key}{rate}{channels}")
    cuts = sorted(rng.uniform(0.0, 2.0) for _ in range(5)) + [0.75]  # 0.75 s: inside the lead-in's reach
    bounds = [0.0] + sorted(cuts) + [None]
    parts = [decode_audio(path, sample_rate=rate, num_channels=channels, start_seconds=a, stop_seconds=b).data
             for a, b in zip(bounds[:-1], bounds[1:])]
    for (a, b), part in zip(zip(bounds[:-1], bounds[1:]), parts):
        lo = _index(a, r)
        hi = whole.shape[1] if b is None else min(_index(b, r), whole.shape[1])
        assert part.shape[1] == max(hi - lo, 0), (a, b)
        assert torch.equal(part, whole[:, lo:hi]), (a, b)
    assert torch.equal(torch.cat(parts, dim=1), whole)


@pytest.mark.parametrize("rate", [8000, 16000, 22050, 44100, 48000])
def test_window_of_d_seconds_has_round_d_r_samples(long_files, rate):
    for d in [0.1, 0.25, 1.0 / 3.0, 0.77777, 1.5]:
        out = decode_audio(long_files["wav"], sample_rate=rate, start_seconds=0.2, stop_seconds=0.2 + d).data
        # start * r is whole for these rates and 0.2 s, so the length is round(d * r)
        assert out.shape[1] == int(d * rate + 0.5)


def test_window_past_the_end(long_files):
    path = long_files["flac"]
    whole = decode_audio(path).data
    n = whole.shape[1]
    tail = decode_audio(path, start_seconds=1.5, stop_seconds=9.0).data  # cut at the end
    assert torch.equal(tail, whole[:, _index(1.5, 22050):])
    with pytest.raises(IndexError, match=r"flac: decode_audio.*starts at sample 66150 .*only 44100 samples"):
        decode_audio(path, start_seconds=3.0)
    with pytest.raises(IndexError, match="only"):
        decode_audio(path.read_bytes(), start_seconds=n / 22050 + 0.01)
    # in a batch, a window past the end is zero padding and its length says so
    b = decode_audio_batch([path], sample_rate=22050, num_channels=1, duration=1.0, starts=[1.5])
    k = n - _index(1.5, 22050)
    assert b.lengths.tolist() == [k]
    assert torch.equal(b.data[0, :, :k], whole[:, -k:])
    assert torch.count_nonzero(b.data[0, :, k:]) == 0
    b = decode_audio_batch([path], sample_rate=22050, num_channels=1, duration=0.5, starts=[5.0])
    assert b.lengths.tolist() == [0] and torch.count_nonzero(b.data) == 0


def test_batch_whole_files_with_different_rates(long_files):
    keys = list(FILES)
    paths = [long_files[k] for k in keys]
    b = decode_audio_batch(paths, sample_rate=16000, num_channels=1)
    assert b.data.shape[:2] == (len(paths), 1) and b.ok.all()
    for i, p in enumerate(paths):
        ref = A.cli_samples(p, sample_rate=16000, num_channels=1)
        assert b.lengths[i] == ref.shape[1]
        assert torch.equal(b.data[i, :, : ref.shape[1]], ref), keys[i]
        assert torch.count_nonzero(b.data[i, :, ref.shape[1]:]) == 0
    assert b.data.shape[2] == int(b.lengths.max())
    # bytes give the same batch
    b2 = decode_audio_batch([p.read_bytes() for p in paths], sample_rate=16000, num_channels=1)
    assert torch.equal(b2.data, b.data) and torch.equal(b2.lengths, b.lengths)


def test_batch_windows_and_random_crops_are_slices_of_the_whole(long_files):
    paths = [long_files[k] for k in FILES]
    wholes = [decode_audio(p, sample_rate=16000, num_channels=2).data for p in paths]
    starts = [0.0, 0.3, 1.0, 0.55, 1.9]
    b = decode_audio_batch(paths, sample_rate=16000, num_channels=2, duration=0.4, starts=starts)
    assert b.data.shape == (5, 2, 6400)
    for i, w in enumerate(wholes):
        lo = _index(starts[i], 16000)
        assert b.offsets[i] == lo
        k = min(6400, w.shape[1] - lo)
        assert b.lengths[i] == k
        assert torch.equal(b.data[i, :, :k], w[:, lo:lo + k])
    seeds = torch.tensor([11, -5, 2**62, 7, 123456789], dtype=torch.int64)
    c1 = decode_audio_batch(paths, sample_rate=16000, num_channels=2, duration=1.0, seeds=seeds)
    c2 = decode_audio_batch(paths, sample_rate=16000, num_channels=2, duration=1.0, seeds=seeds)
    assert torch.equal(c1.data, c2.data) and torch.equal(c1.offsets, c2.offsets)
    for i, w in enumerate(wholes):
        lo = int(c1.offsets[i])
        assert 0 <= lo <= w.shape[1]
        k = int(c1.lengths[i])
        assert torch.equal(c1.data[i, :, :k], w[:, lo:lo + k])
        assert k == min(16000, w.shape[1] - lo)
    c3 = decode_audio_batch(paths, sample_rate=16000, num_channels=2, duration=1.0, seeds=seeds + 1)
    assert not torch.equal(c3.offsets, c1.offsets)  # other seeds, other crops (5 files, 16000 choices each)


def test_batch_int16_and_thread_count_independence(long_files):
    import spdl_torch

    paths = [long_files[k] for k in FILES]
    before = spdl_torch.io.get_num_threads()
    try:
        spdl_torch.io.set_num_threads(1)
        one = decode_audio_batch(paths, sample_rate=8000, num_channels=1, dtype=torch.int16)
        spdl_torch.io.set_num_threads(3)
        three = decode_audio_batch(paths, sample_rate=8000, num_channels=1, dtype=torch.int16)
    finally:
        spdl_torch.io.set_num_threads(before)
    assert one.data.dtype == torch.int16 and torch.equal(one.data, three.data)
    ref = A.cli_samples(paths[2], sample_rate=8000, num_channels=1, dtype=torch.int16)
    assert torch.equal(one.data[2, :, : ref.shape[1]], ref)
