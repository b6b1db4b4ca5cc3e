"""AudioDataset with spdl_torch.DataLoader and torch's DataLoader: one native call per batch, seeded crops
from (seed, epoch, index), samples ``(Waveform, label)`` collated by torch's default_collate into a padded
``Waveform(data, lengths)``, samples equal to the CLI's."""

from unittest import mock

import pytest
import torch

import spdl_torch
from spdl_torch.datasets import AudioDataset, Waveform, collate
from spdl_torch.io import decode_audio

from tests._utils import audio as A

pytestmark = pytest.mark.skipif(A.FFMPEG is None, reason="the ffmpeg CLI is not installed")


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = tmp_path_factory.mktemp("audio_ds")
    specs = [("pcm_s16le", 16000, 1, 1.2), ("flac16", 44100, 2, 0.7), ("mp3", 22050, 2, 1.5),
             ("vorbis", 48000, 1, 0.3), ("opus", 48000, 2, 1.0), ("pcm_f32le", 8000, 1, 2.0)]
    return [A.make_audio(root / f"{k}_{codec}{A.SYNTH_CODECS[codec][0]}", rate=r, channels=c, codec=codec,
                         seconds=s, source="noise")
            for k, (codec, r, c, s) in enumerate(specs)]


def test_loader_batches_equal_the_cli(files):
    ds = AudioDataset(files, labels=list(range(10, 16)), sample_rate=16000, num_channels=1)
    loader = spdl_torch.DataLoader(ds, batch_size=3, num_workers=2)
    seen = 0
    for audio, labels in loader:
        assert isinstance(audio, Waveform)
        samples, lengths = audio.data, audio.lengths
        assert samples.shape[:2] == (3, 1) and samples.shape[2] == int(lengths.max())
        for k in range(3):
            i = int(labels[k]) - 10
            ref = A.cli_samples(files[i], sample_rate=16000, num_channels=1)
            assert lengths[k] == ref.shape[1]
            assert torch.equal(samples[k, :, : ref.shape[1]], ref)
            seen += 1
    assert seen == 6


def test_one_native_call_per_batch_and_zero_copy_collate(files):
    ds = AudioDataset(files, sample_rate=16000, num_channels=2, duration=0.5, random_crop=True, seed=5)
    import spdl_torch.io._audio as mod

    real = torch.ops.spdl_torch.decode_audio_batch
    calls = []

    def spy(*a, **k):
        calls.append(len(a[1]) or len(a[0]))
        return real(*a, **k)

    with mock.patch.object(mod.torch.ops.spdl_torch, "decode_audio_batch", spy):
        items = ds.__getitems__([0, 1, 2, 3])
    assert calls == [4]
    assert all(isinstance(w, Waveform) and w.lengths == w.data.shape[1] for w, _ in items)
    audio, labels = collate(items)
    assert audio.data.shape == (4, 2, 8000) and audio.lengths.tolist() == [w.lengths for w, _ in items]
    assert audio.data.data_ptr() == items[0][0].data.data_ptr()  # the op's batch itself
    assert labels.tolist() == [0, 1, 2, 3]


def test_random_crops_seeded_by_seed_epoch_index(files):
    ds = AudioDataset(files, sample_rate=16000, num_channels=1, duration=0.25, random_crop=True, seed=1)
    a = [w.data for w, _ in ds.__getitems__([0, 2, 5])]
    b = [ds[i][0].data for i in (0, 2, 5)]  # one at a time: the same crops
    assert all(torch.equal(x, y) for x, y in zip(a, b))
    for k, i in enumerate((0, 2, 5)):  # each crop is a slice of the whole decode
        whole = decode_audio(files[i], sample_rate=16000, num_channels=1).data
        n = a[k].shape[1]
        assert n == min(4000, whole.shape[1])
        assert any(torch.equal(a[k], whole[:, s:s + n]) for s in range(whole.shape[1] - n + 1))
    ds.set_epoch(1)
    c = [w.data for w, _ in ds.__getitems__([0, 2, 5])]
    assert not all(torch.equal(x, y) for x, y in zip(a, c))
    # the same crops through the loader, any number of workers
    def run(workers):
        loader = spdl_torch.DataLoader(AudioDataset(files, sample_rate=16000, num_channels=1, duration=0.25,
                                                    random_crop=True, seed=3),
                                       batch_size=2, num_workers=workers)
        return [x[0].data for x in loader]
    one, three = run(0), run(2)
    assert all(torch.equal(x, y) for x, y in zip(one, three))


@pytest.mark.parametrize("collate_fn", [None, collate], ids=["default_collate", "spdl_torch-collate"])
def test_torch_dataloader_collates_waveforms(files, collate_fn):
    ds = AudioDataset(files[:4], sample_rate=8000, num_channels=1, duration=0.5)
    loader = torch.utils.data.DataLoader(ds, batch_size=4, collate_fn=collate_fn)
    audio, labels = next(iter(loader))
    samples, lengths = audio.data, audio.lengths
    assert samples.shape == (4, 1, 4000) and labels.tolist() == [0, 1, 2, 3]
    for k in range(4):
        whole = decode_audio(files[k], sample_rate=8000, num_channels=1).data
        assert lengths[k] == min(4000, whole.shape[1])
        assert torch.equal(samples[k, :, : lengths[k]], whole[:, : lengths[k]])
        assert torch.count_nonzero(samples[k, :, lengths[k]:]) == 0


def test_a_fixed_duration_pads_every_collate_to_its_width(files, tmp_path):
    """With ``duration``, N = round(duration * sample_rate) however the samples reach the collate: all rows of
    one decode, some of them (``on_error="skip"`` dropped a file), samples fetched one by one; without it, the
    longest waveform."""
    bad = tmp_path / "empty.wav"
    bad.write_bytes(b"")
    paths = [files[0], files[3], bad, files[1]]  # 1.2 s, 0.3 s, nothing, 0.7 s: all shorter than 4 s
    ds = AudioDataset(paths, sample_rate=16000, num_channels=1, duration=4.0)
    whole, _ = collate(ds.__getitems__([0, 1, 3]))
    assert whole.data.shape == (3, 1, 64000)
    one_by_one, _ = torch.utils.data.default_collate([ds[0], ds[1]])
    assert one_by_one.data.shape == (2, 1, 64000) and torch.equal(one_by_one.data, whole.data[:2])
    assert one_by_one.lengths.tolist() == whole.lengths[:2].tolist() == [ds[0][0].lengths, ds[1][0].lengths]
    assert 0 < min(whole.lengths.tolist()) and max(whole.lengths.tolist()) < 64000  # all padded
    with pytest.warns(UserWarning, match="empty.wav"):
        batches = list(spdl_torch.DataLoader(ds, batch_size=4, on_error="skip"))
    (audio, labels), = batches
    assert audio.data.shape == (3, 1, 64000) and labels.tolist() == [0, 1, 3]
    assert torch.equal(audio.data, whole.data) and audio.lengths.tolist() == whole.lengths.tolist()
    free = AudioDataset(paths, sample_rate=16000, num_channels=1)
    assert torch.utils.data.default_collate([free[0], free[1]])[0].data.shape == (2, 1, 19200)


def test_bad_file_names_its_path(files, tmp_path):
    bad = tmp_path / "broken.wav"
    bad.write_bytes(b"RIFF" + bytes(40))
    ds = AudioDataset([files[0], bad], sample_rate=16000, num_channels=1)
    with pytest.raises(spdl_torch.DecodeError, match="broken.wav") as info:
        ds.__getitems__([0, 1])
    assert info.value.path == str(bad)
    lenient = AudioDataset([files[0], bad], sample_rate=16000, num_channels=1, strict=False)
    items = lenient.__getitems__([0, 1])
    assert items[1][0].data.shape == (1, 0) and items[1][0].lengths == 0


def test_pipeline_engine_batches_equal_the_loaders(files):
    # The dataset as a stage of the pipeline engine: index batches in, one __getitems__ (one native call)
    # per batch on 2 threads, collate; the same batches as spdl_torch.DataLoader's, in order.
    from spdl_torch.pipeline import PipelineBuilder

    ds = AudioDataset(files, labels=list(range(6)), sample_rate=16000, num_channels=1, duration=0.4,
                      random_crop=True, seed=3)
    batches = [[0, 1, 2], [3, 4, 5]]
    p = (PipelineBuilder().add_source(batches)
         .pipe(ds.__getitems__, concurrency=2)
         .pipe(collate)
         .build())
    got = list(p)
    ref = list(spdl_torch.DataLoader(ds, batch_size=3, num_workers=2))
    assert len(got) == len(ref) == 2
    for (w, y), (rw, ry) in zip(got, ref):
        assert torch.equal(w.data, rw.data) and torch.equal(w.lengths, rw.lengths) and torch.equal(y, ry)
    for k in range(3):  # and each crop is a slice of the whole decode
        whole = decode_audio(files[k], sample_rate=16000, num_channels=1).data
        n = int(got[0][0].lengths[k])
        assert n == min(6400, whole.shape[1])
        crop = got[0][0].data[k, :, :n]
        assert any(torch.equal(crop, w) for w in whole.unfold(1, n, 1).permute(1, 0, 2))
