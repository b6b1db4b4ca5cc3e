"""Audio and video members of tar shards (dict mode, ``AudioBatchDecoder`` / ``VideoClipBatchDecoder``): one
native call per batch and member, samples equal to the ffmpeg CLI's (audio) and to ``VideoClipDataset`` on the
same files (video, itself checked against the CLI), crops drawn from (seed, epoch, index), bad members named by
shard, key and member under both error policies, and ``Waveform`` collated by torch's ``default_collate``."""

from __future__ import annotations

import os
from unittest import mock

import pytest
import torch
from torch.utils.data import default_collate
from torchvision.transforms import v2

import spdl_torch
import spdl_torch.io
from spdl_torch.datasets import AudioDataset, VideoClipDataset, Waveform, collate, write_shards
from spdl_torch.datasets.shards import AudioBatchDecoder, BatchDecoder, VideoClipBatchDecoder
from spdl_torch.datasets import TarShardDataset
from spdl_torch import DecodeError

from tests._utils import audio as A
from tests._utils import video as vm

pytestmark = pytest.mark.skipif(A.FFMPEG is None, reason="the ffmpeg CLI is not installed")

# (rate, channels, seconds) of the flac members: other rates and layouts than the output's, other lengths.
AUDIO = [(16000, 1, 0.5), (44100, 2, 0.7), (22050, 2, 0.3), (48000, 1, 0.45), (8000, 1, 0.9), (32000, 2, 0.2),
         (11025, 1, 0.6), (24000, 2, 0.35)]
VIDEOS = ["h264_bframes", "h264_10fps", "h264_gop1", "h264_bframes", "h264_10fps", "h264_gop1"]


def _write(root, name, samples):
    out = root / name
    write_shards(samples, out, shard_size=60_000)  # several shards: the samples span shard boundaries
    return os.path.join(out, "index.json")


@pytest.fixture(scope="module")
def media(tmp_path_factory):
    root = tmp_path_factory.mktemp("media_members")
    audio = [A.make_audio(root / f"a{i}.flac", rate=r, channels=c, codec="flac16", seconds=s, source="noise")
             for i, (r, c, s) in enumerate(AUDIO)]
    videos = [vm.make_video(n) for n in VIDEOS]
    audio_index = _write(root, "audio", [(f"a/{i:03d}", {"flac": p.read_bytes(), "cls": str(i % 3).encode()})
                                         for i, p in enumerate(audio)])
    video_index = _write(root, "video", [(f"v/{i:03d}", {"mp4": p.read_bytes(), "flac": audio[i].read_bytes(),
                                                         "cls": str(i).encode()}) for i, p in enumerate(videos)])
    return audio, videos, audio_index, video_index


def _counting(name):
    """Patches spdl_torch.io.<name> with a wrapper that records each call's batch size."""
    real = getattr(spdl_torch.io, name)
    sizes = []

    def wrapper(srcs, *args, **kwargs):
        sizes.append(len(srcs))
        return real(srcs, *args, **kwargs)

    return mock.patch.object(spdl_torch.io, name, wrapper), sizes


def test_audio_members_equal_the_cli_in_one_call_per_batch(media):
    audio, _, index, _ = media
    ds = TarShardDataset(index, decoders={"flac": AudioBatchDecoder(sample_rate=16000)},
                         batch_size=3, shuffle=False)
    patch, sizes = _counting("decode_audio_batch")
    with patch:
        samples = list(ds)
    assert sizes == [3, 3, 2]
    assert [s["__index__"] for s in samples] == list(range(len(audio)))
    for s in samples:
        i = s["__index__"]
        ref = A.cli_samples(audio[i], sample_rate=16000, num_channels=1)
        w = s["flac"]
        assert isinstance(w, Waveform) and w.lengths == ref.shape[1] and torch.equal(w.data, ref)
        assert s["cls"] == i % 3


@pytest.mark.parametrize("num_workers", [0, 2])
def test_loader_batches_pad_waveforms_with_lengths(media, num_workers):
    audio, _, index, _ = media
    ds = TarShardDataset(index, decoders={"flac": AudioBatchDecoder(sample_rate=16000)},
                         batch_size=3, seed=1)
    seen = []
    for batch in spdl_torch.DataLoader(ds, batch_size=3, num_workers=num_workers):
        w = batch["flac"]
        assert isinstance(w, Waveform) and w.data.shape[:2] == (len(batch["__key__"]), 1)
        assert w.data.shape[2] == int(w.lengths.max())
        for k, i in enumerate(batch["__index__"].tolist()):
            ref = A.cli_samples(audio[i], sample_rate=16000, num_channels=1)
            assert w.lengths[k] == ref.shape[1] and torch.equal(w.data[k, :, : ref.shape[1]], ref)
            assert not w.data[k, :, ref.shape[1]:].any()  # zero padding
            assert batch["cls"][k] == i % 3
            seen.append(i)
    assert sorted(seen) == list(range(len(audio)))


def test_torch_dataloader_collates_waveforms(media):
    audio, _, index, _ = media
    ds = TarShardDataset(index, decoders={"flac": AudioBatchDecoder(sample_rate=8000, num_channels=2), "cls": None},
                         batch_size=4, shuffle=False)
    batches = list(torch.utils.data.DataLoader(ds, batch_size=4))
    assert [b["__index__"].tolist() for b in batches] == [[0, 1, 2, 3], [4, 5, 6, 7]]
    for b in batches:
        for k, i in enumerate(b["__index__"].tolist()):
            ref = A.cli_samples(audio[i], sample_rate=8000, num_channels=2)
            assert torch.equal(b["flac"].data[k, :, : b["flac"].lengths[k]], ref)
        assert b["cls"].dtype == torch.uint8  # its default decoder dropped: the raw member bytes (one digit each)


def test_random_crops_follow_seed_epoch_and_index(media):
    audio, _, index, _ = media
    dec = AudioBatchDecoder(sample_rate=16000, duration=0.25, random_crop=True)
    ds = TarShardDataset(index, decoders={"flac": dec}, batch_size=3, seed=5)
    ref = AudioDataset(audio, sample_rate=16000, duration=0.25, random_crop=True, seed=5)
    crops = {}
    for epoch in (0, 1):
        ds.set_epoch(epoch)
        ref.set_epoch(epoch)
        for s in ds:
            i = s["__index__"]
            want = ref[i][0].data
            assert s["flac"].lengths == want.shape[1] == min(4000, round(AUDIO[i][2] * 16000))
            assert torch.equal(s["flac"].data, want)
            crops[epoch, i] = want
    assert any(not torch.equal(crops[0, i], crops[1, i]) for i in range(len(audio)))  # new crops each epoch
    loader = spdl_torch.DataLoader(ds, batch_size=2, num_workers=2)  # another split and other batch boundaries
    for epoch in (0, 1):  # the loader sets the dataset's epoch
        by_threads = {}
        for b in loader:
            w = b["flac"]
            for k, i in enumerate(b["__index__"].tolist()):
                by_threads[i] = w.data[k, :, : w.lengths[k]]
        assert sorted(by_threads) == list(range(len(audio)))
        assert all(torch.equal(by_threads[i], crops[epoch, i]) for i in by_threads)


def test_video_members_equal_video_clip_dataset(media):
    _, videos, _, index = media
    t = v2.Compose([v2.Resize(32, antialias=True), v2.CenterCrop(28)])
    dec = VideoClipBatchDecoder(num_frames_per_clip=4, num_indices_between_frames=2, num_clips=2, transform=t)
    assert dec.plan is not None and dec.plan.rest is None
    ds = TarShardDataset(index, decoders={"mp4": dec, "flac": AudioBatchDecoder(sample_rate=8000)},
                         batch_size=4, shuffle=False)
    ref = VideoClipDataset(videos, num_frames_per_clip=4, num_indices_between_frames=2, num_clips=2, transform=t)
    patch, sizes = _counting("decode_video_clips")
    with patch:
        samples = list(ds)
    assert sizes == [4, 2]
    assert [s["__index__"] for s in samples] == list(range(len(videos)))
    audio = media[0]
    for s in samples:
        i = s["__index__"]
        assert s["mp4"].shape == (2, 4, 3, 28, 28) and torch.equal(s["mp4"], ref[i][0])
        assert torch.equal(s["flac"].data, A.cli_samples(audio[i], sample_rate=8000, num_channels=1))
        assert s["cls"] == i


def test_fused_video_members_collate_without_a_copy(media):
    _, videos, _, index = media
    t = v2.Compose([v2.Resize(32, antialias=True), v2.CenterCrop(28)])
    ds = TarShardDataset(index, decoders={"mp4": VideoClipBatchDecoder(num_frames_per_clip=2, transform=t),
                                          "flac": AudioBatchDecoder()},
                         batch_size=3, shuffle=False)
    items = list(ds)[:3]
    batch = collate(items)
    assert batch["mp4"].shape == (3, 1, 2, 3, 28, 28) and batch["mp4"].data_ptr() == items[0]["mp4"].data_ptr()
    assert batch["cls"].tolist() == [0, 1, 2] and batch["__key__"] == ["v/000", "v/001", "v/002"]
    assert batch["flac"].data.data_ptr() == items[0]["flac"].data.data_ptr()  # one audio batch, too
    ref = VideoClipDataset(videos, num_frames_per_clip=2, transform=t)
    seen = []
    for b in spdl_torch.DataLoader(ds, batch_size=3, num_workers=2):
        for k, i in enumerate(b["cls"].tolist()):
            assert torch.equal(b["mp4"][k], ref[i][0])
            seen.append(i)
    assert sorted(seen) == list(range(len(videos)))


def test_random_video_clips_follow_the_sample_seeds(media):
    _, videos, _, index = media
    t = v2.Compose([v2.RandomResizedCrop(24, antialias=True), v2.RandomHorizontalFlip()])
    dec = VideoClipBatchDecoder(num_frames_per_clip=3, num_clips=2, transform=t)
    ds = TarShardDataset(index, decoders={"mp4": dec}, batch_size=4, seed=11)
    ref = VideoClipDataset(videos, num_frames_per_clip=3, num_clips=2, transform=t, seed=11)
    for epoch in (0, 2):
        ds.set_epoch(epoch)
        ref.set_epoch(epoch)
        got = {s["__index__"]: s["mp4"] for s in ds}
        assert sorted(got) == list(range(len(videos)))
        assert all(torch.equal(got[i], ref[i][0]) for i in got)


def test_unfused_video_members_keep_their_own_size(media):
    _, videos, _, index = media
    ds = TarShardDataset(index, decoders={"mp4": VideoClipBatchDecoder(num_frames_per_clip=2, num_indices_between_frames=3)}, batch_size=4,
                         shuffle=False)
    ref = VideoClipDataset(videos, num_frames_per_clip=2, num_indices_between_frames=3)
    for s in ds:
        i = s["__index__"]
        assert torch.equal(s["mp4"], ref[i][0])
        assert s["mp4"].shape[-2:] == (vm.probe(videos[i])["height"], vm.probe(videos[i])["width"])


@pytest.fixture(scope="module")
def bad_index(media, tmp_path_factory):
    audio = media[0]
    samples = [(f"a/{i:03d}", {"flac": p.read_bytes(), "cls": b"1"}) for i, p in enumerate(audio)]
    samples.insert(4, ("a/bad", {"flac": b"this is not an audio file " * 40, "cls": b"1"}))
    return _write(tmp_path_factory.mktemp("bad_members"), "bad", samples)


def test_a_bad_audio_member_is_named(bad_index):
    ds = TarShardDataset(bad_index, decoders={"flac": AudioBatchDecoder()}, batch_size=3, shuffle=False)
    with pytest.raises(DecodeError) as info:
        list(ds)
    msg = str(info.value)
    assert "'a/bad'" in msg and "'a/bad.flac'" in msg and ".tar" in msg


def test_a_bad_audio_member_is_skipped_and_the_rest_delivered_once(media, bad_index):
    audio = media[0]
    ds = TarShardDataset(bad_index, decoders={"flac": AudioBatchDecoder()}, batch_size=3, shuffle=False,
                         on_error="skip")
    with pytest.warns(RuntimeWarning, match="a/bad.flac"):
        samples = list(ds)
    assert [s["__key__"] for s in samples] == [f"a/{i:03d}" for i in range(len(audio))]
    for s, path in zip(samples, audio):
        assert torch.equal(s["flac"].data, A.cli_samples(path, sample_rate=16000, num_channels=1))
    assert len(ds.skipped) == 1 and "a/bad" in ds.skipped[0]


def test_waveform_collate_pads_and_keeps_one_batch_without_a_copy(media):
    audio = media[0]
    a, b = torch.ones(2, 5), torch.full((2, 3), 2.0)
    out = default_collate([{"w": Waveform(a, 5)}, {"w": Waveform(b, 3)}])["w"]
    assert isinstance(out, Waveform) and out.lengths.tolist() == [5, 3]
    assert torch.equal(out.data, torch.stack([a, torch.cat([b, torch.zeros(2, 2)], 1)]))
    values = AudioBatchDecoder(sample_rate=16000).decode_batch(
        [torch.frombuffer(bytearray(p.read_bytes()), dtype=torch.uint8) for p in audio[:3]], torch.zeros(3, dtype=torch.int64))
    out = default_collate(values)
    assert out.data.data_ptr() == values[0].data.data_ptr() and out.data.shape[0] == 3


@pytest.fixture(scope="module")
def bad_video_index(media, tmp_path_factory):
    videos = media[1]
    samples = [(f"v/{i:03d}", {"mp4": p.read_bytes(), "cls": str(i).encode()}) for i, p in enumerate(videos[:4])]
    samples.insert(2, ("v/bad", {"mp4": b"\x00\x00\x00\x18ftypmp42 but nothing more" * 20, "cls": b"9"}))
    return _write(tmp_path_factory.mktemp("bad_video"), "bad", samples)


@pytest.mark.parametrize("transform", [None, "unfused"])
def test_a_bad_video_member_is_named_and_skipped_without_a_fused_transform(media, bad_video_index, transform):
    """Without a fused transform each video is probed for its size first: that probe's failure was raised bare
    (no sample index), so neither policy could name or skip the member."""
    videos = media[1]
    t = None if transform is None else v2.Compose([v2.Grayscale(3), v2.Resize(16, antialias=True)])
    dec = VideoClipBatchDecoder(num_frames_per_clip=2, transform=t, warn_unfused=False)
    with pytest.raises(DecodeError, match=r"sample 'v/bad', member 'v/bad\.mp4'"):
        list(TarShardDataset(bad_video_index, decoders={"mp4": dec}, batch_size=4, shuffle=False))
    ds = TarShardDataset(bad_video_index, decoders={"mp4": dec}, batch_size=4, shuffle=False, on_error="skip")
    with pytest.warns(RuntimeWarning, match="v/bad.mp4"):
        got = list(ds)
    assert [s["__key__"] for s in got] == [f"v/{i:03d}" for i in range(4)] and len(ds.skipped) == 1
    ref = VideoClipDataset(videos[:4], num_frames_per_clip=2, transform=t, warn_unfused=False)
    assert all(torch.equal(s["mp4"], ref[i][0]) for i, s in enumerate(got))


class _Lengths(BatchDecoder):
    """A user's batch decoder: the member's byte count; a member starting with b"!" is bad data."""

    def __init__(self, extra=0):
        self.extra, self.calls = extra, []

    def decode_batch(self, datas, seeds):
        self.calls.append(len(datas))
        if any(len(d) and int(d[0]) == ord("!") for d in datas):
            raise ValueError("a member starting with '!'")
        return [len(d) for d in datas] + [0] * self.extra


def test_a_users_batch_decoder_failure_is_narrowed_to_its_member(tmp_path):
    samples = [(f"k{i}", {"bin": (b"!" if i == 3 else b"x") * (i + 1)}) for i in range(6)]
    index = _write(tmp_path, "user", samples)
    dec = _Lengths()
    with pytest.raises(DecodeError, match=r"sample 'k3', member 'k3\.bin': ValueError: a member starting with '!'"):
        list(TarShardDataset(index, decoders={"bin": dec}, batch_size=6, shuffle=False))
    ds = TarShardDataset(index, decoders={"bin": dec}, batch_size=6, shuffle=False, on_error="skip")
    with pytest.warns(RuntimeWarning, match="k3.bin"):
        got = {s["__key__"]: s["bin"] for s in ds}
    assert got == {f"k{i}": i + 1 for i in range(6) if i != 3}
    clean = _write(tmp_path, "clean", [(f"k{i}", {"bin": b"x"}) for i in range(6)])
    with pytest.raises(ValueError, match=r"_Lengths object .*\.decode_batch returned 7 values for 6 members"):
        list(TarShardDataset(clean, decoders={"bin": _Lengths(extra=1)}, batch_size=6, shuffle=False,
                             on_error="skip"))


def test_batch_decoders_check_their_arguments_when_made():
    for kw in (dict(duration=0), dict(sample_rate=0), dict(dtype=torch.float64), dict(num_channels=0)):
        with pytest.raises(ValueError, match="AudioDataset: expected"):
            AudioBatchDecoder(**kw)
    for kw in (dict(num_frames_per_clip=0), dict(num_indices_between_frames=0), dict(seek_mode="bogus"), dict(seconds_between_frames=-1.0)):
        with pytest.raises(ValueError, match="VideoClipDataset: expected"):
            VideoClipBatchDecoder(**kw)


def test_collate_refuses_dict_samples_with_other_keys():
    a = {"__key__": "a", "x": torch.ones(1)}
    with pytest.raises(KeyError, match=r"sample 1 has the keys \['__key__'\], sample 0 \['__key__', 'x'\]"):
        collate([a, {"__key__": "b"}])
    with pytest.raises(KeyError, match="sample 1 has the keys"):  # torch's default_collate drops 'x' here
        collate([{"__key__": "b"}, a])


class _NoneForEmpty(BatchDecoder):
    def decode_batch(self, datas, seeds):
        return [None if len(d) == 0 else len(d) for d in datas]


def test_a_batch_decoders_none_is_a_value_not_a_skip(tmp_path):
    index = _write(tmp_path, "none", [(f"k{i}", {"bin": b"x" * (i % 2)}) for i in range(4)])
    got = [s["bin"] for s in TarShardDataset(index, decoders={"bin": _NoneForEmpty()}, batch_size=4, shuffle=False)]
    assert got == [None, 1, None, 1]
