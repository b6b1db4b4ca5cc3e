"""decode_audio against the ffmpeg CLI on real files (Debian packages: WAV, FLAC, MP3, Ogg Vorbis, Opus,
Matroska): bit-exact at the native rate and at 16 kHz mono. A stratified subsample (40 files across the
suffixes) is in the test tiers (`make test` the smallest of each suffix, the slow tier the rest); every file,
and a batch drawn from all of them, is the ``corpus`` tier (`make test-audio-corpus`, ~1 h on 2 cores)."""

import subprocess

import pytest
import torch

from spdl_torch import DecodeError
from spdl_torch.io import audio_metadata, decode_audio, decode_audio_batch

from tests._utils import audio as A
from tests._utils import corpus

SUBSAMPLE = 40
FAST_PER_SUFFIX = 1


def _subsample(paths):
    if not paths:
        return paths
    by_suffix = {}
    for p in paths:
        by_suffix.setdefault(p.suffix.lower(), []).append(p)
    per = max(1, SUBSAMPLE // len(by_suffix))
    out = []
    for group in by_suffix.values():
        step = max(1, len(group) // per)
        out += group[::step][:per]
    return sorted(out)


EVERY_FILE = corpus.files("audio")
FILES = _subsample(EVERY_FILE)


def _fast_tier(files):
    """The FAST_PER_SUFFIX smallest files of each suffix: every codec and container stays in the fast tier."""
    seen = {}
    for p in sorted(files, key=lambda p: p.stat().st_size):
        seen.setdefault(p.suffix.lower(), []).append(p)
    return {p for group in seen.values() for p in group[:FAST_PER_SUFFIX]}


FAST = _fast_tier(FILES)


def _params(files):
    """The subsample (fast or slow), then every file (the corpus tier, ids ``corpus-<name>``)."""
    sub = [p if p.values[0] is None or p.values[0] in FAST else pytest.param(*p.values, id=p.id, marks=pytest.mark.slow)
           for p in corpus.params(files)]
    return sub + corpus.params(EVERY_FILE, marks=[pytest.mark.corpus], prefix="corpus-")


pytestmark = pytest.mark.skipif(A.FFMPEG is None, reason="the ffmpeg CLI is not installed")


@pytest.mark.parametrize("path", _params(FILES))
def test_real_file_equals_cli(path):
    try:
        ref = A.cli_samples(path)
    except subprocess.CalledProcessError as e:  # the CLI refuses it (a codec FFmpeg has no decoder for): so must we
        with pytest.raises(DecodeError):
            decode_audio(path)
        assert e.stderr, "the CLI failed without saying why"
        return
    out = decode_audio(path).data
    assert out.shape == ref.shape
    assert torch.equal(out, ref)
    ref16 = A.cli_samples(path, sample_rate=16000, num_channels=1)
    out16 = decode_audio(path, sample_rate=16000, num_channels=1).data
    assert torch.equal(out16, ref16)
    meta = audio_metadata(path)
    assert meta.num_channels == ref.shape[0] and meta.sample_rate > 0


@pytest.mark.parametrize("pool", [FILES, pytest.param(EVERY_FILE, marks=pytest.mark.corpus)],
                         ids=["subsample", "corpus"])
def test_real_files_in_one_batch(pool):
    files = pool[:: max(1, len(pool) // 12)][:12]
    if not files:
        pytest.skip("no media corpus")
    b = decode_audio_batch(files, sample_rate=16000, num_channels=1, duration=1.0, seeds=list(range(len(files))))
    for i, p in enumerate(files):
        whole = decode_audio(p, sample_rate=16000, num_channels=1).data
        lo, k = int(b.offsets[i]), int(b.lengths[i])
        assert k == min(16000, whole.shape[1] - lo)
        assert torch.equal(b.data[i, :, :k], whole[:, lo:lo + k]), p
