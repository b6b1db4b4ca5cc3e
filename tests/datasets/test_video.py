"""VideoClipDataset: one native call per batch, fused torchvision v2 transforms equal to the op's own
arguments, the unfused path equal to the transform run on the decoded clips, spdl_torch.DataLoader batches
independent of the worker count, labels and errors; augmentations stay per clip (``decode_video_clips`` takes
no augment rows)."""

from __future__ import annotations

import pytest
import torch
from torchvision.transforms import v2

import spdl_torch
from spdl_torch.datasets import VideoClipDataset, collate
from spdl_torch.io import decode_video_clips
from spdl_torch.transforms import FusedPlan, fuse

from tests._utils import video as vm

NAMES = ["h264_bframes", "h264_gop250", "vp9", "h264_10fps"]


@pytest.fixture(scope="module")
def paths():
    return [vm.make_video(n) for n in NAMES]


def test_eval_transform_is_fused_and_matches_the_op(paths):
    t = v2.Compose([v2.Resize(32, antialias=True), v2.CenterCrop(28)])
    ds = VideoClipDataset(paths, labels=[3, 1, 4, 1], num_frames_per_clip=4, num_indices_between_frames=2, num_clips=2, transform=t)
    assert ds.plan is not None and ds.plan.rest is None and ds.sampling == "regular"
    assert ds.plan == spdl_torch.transforms.fuse(ds.transform, op="decode_video_clips") and ds.plan.op == "decode_video_clips"
    with pytest.raises(ValueError, match="fuse: expected op 'decode_images' or 'decode_video_clips', got op='x'"):
        spdl_torch.transforms.fuse(ds.transform, op="x")
    items = ds.__getitems__([2, 0])
    batch, labels = collate(items)
    assert batch.shape == (2, 2, 4, 3, 28, 28) and labels.tolist() == [4, 3]
    assert batch.data_ptr() == items[0][0].data_ptr()  # collated without a copy
    ref = decode_video_clips([paths[2], paths[0]], num_frames_per_clip=4, num_indices_between_frames=2, num_clips=2, height=28, width=28,
                             resize_shorter=32).data
    assert torch.equal(batch, ref)
    clips, label = ds[1]
    assert torch.equal(clips, decode_video_clips([paths[1]], num_frames_per_clip=4, num_indices_between_frames=2, num_clips=2, height=28,
                                                 width=28, resize_shorter=32).data[0]) and label == 1


def test_train_transform_draws_from_the_sample_seeds(paths):
    t = v2.Compose([v2.RandomResizedCrop(24, antialias=True), v2.RandomHorizontalFlip()])
    ds = VideoClipDataset(paths, num_frames_per_clip=3, num_clips=2, transform=t, seed=11)
    assert ds.plan.random and ds.sampling == "random"
    (a, _), (b, _) = ds.__getitems__([1, 3])
    ref = decode_video_clips([paths[1], paths[3]], num_frames_per_clip=3, num_clips=2, height=24, width=24,
                             geometry="train", hflip_prob=0.5, sampling="random", seeds=FusedPlan.sample_seeds(11, 0, [1, 3])).data
    assert torch.equal(a, ref[0]) and torch.equal(b, ref[1])
    ds.set_epoch(1)
    assert not torch.equal(ds[1][0], a)


def test_unfused_transform_runs_per_clip(paths):
    t = v2.Compose([v2.Resize(32, antialias=True), v2.CenterCrop(28), v2.Grayscale(num_output_channels=3)])
    with pytest.warns(UserWarning, match="partly fused"):
        ds = VideoClipDataset(paths, num_frames_per_clip=2, transform=t)
    clips, _ = ds[0]
    fused = decode_video_clips([paths[0]], num_frames_per_clip=2, height=28, width=28, resize_shorter=32).data[0]
    assert torch.equal(clips, torch.stack([v2.Grayscale(num_output_channels=3)(c) for c in fused]))
    plain = VideoClipDataset(paths, num_frames_per_clip=2)  # no transform: each video at its own size
    (c0, _), (c1, _) = plain.__getitems__([0, 1])
    assert c0.shape == (1, 2, 3, 48, 64) and c1.shape == (1, 2, 3, 120, 160)


def test_dataloader_batches_do_not_depend_on_workers(paths):
    t = v2.Compose([v2.RandomResizedCrop(16, antialias=True)])

    def epoch(workers):
        ds = VideoClipDataset(paths * 2, labels=list(range(8)), num_frames_per_clip=2, num_clips=2, transform=t, seed=5)
        loader = spdl_torch.DataLoader(ds, batch_size=4, num_workers=workers, collate_fn=collate)
        return [(x.clone(), y.clone()) for x, y in loader]

    a, b = epoch(0), epoch(2)
    assert len(a) == 2
    for (xa, ya), (xb, yb) in zip(a, b):
        assert xa.shape == (4, 2, 2, 3, 16, 16)
        assert torch.equal(xa, xb) and torch.equal(ya, yb)


def test_bad_video_is_named(tmp_path, paths):
    bad = tmp_path / "bad.mp4"
    bad.write_bytes(b"\0" * 1000)
    ds = VideoClipDataset([paths[0], bad], num_frames_per_clip=2, transform=v2.Resize((8, 8), antialias=True))
    with pytest.raises(spdl_torch.DecodeError, match="bad.mp4: cannot open the input") as e:
        ds.__getitems__([0, 1])
    assert e.value.path == str(bad)
    unfused = VideoClipDataset([paths[0], bad], num_frames_per_clip=2)  # each video probed for its size first
    with pytest.raises(spdl_torch.DecodeError, match="bad.mp4: cannot open the input") as e:
        unfused.__getitems__([0, 1])
    assert e.value.path == str(bad) and e.value.sample_index == 1
    with pytest.raises(ValueError, match="one label per path"):
        VideoClipDataset(paths, labels=[1], num_frames_per_clip=2)


@pytest.mark.parametrize("extra", [v2.RandomVerticalFlip(p=1.0), v2.Grayscale(num_output_channels=3)])
def test_image_only_fusions_run_per_clip(paths, extra):
    # The image op fuses vertical flips and Grayscale; decode_video_clips takes neither, so they must run per
    # clip after the fused Resize + CenterCrop instead of being dropped or passed on.
    t = v2.Compose([v2.Resize(32, antialias=True), v2.CenterCrop(28), extra])
    with pytest.warns(UserWarning, match="partly fused"):
        ds = VideoClipDataset(paths, num_frames_per_clip=2, transform=t)
    assert ds.plan is not None and ds.plan.op_kwargs["resize_shorter"] == 32
    clips, _ = ds[0]
    fused = decode_video_clips([paths[0]], num_frames_per_clip=2, height=28, width=28, resize_shorter=32).data[0]
    assert torch.equal(clips, torch.stack([extra(c) for c in fused]))


@pytest.mark.slow  # every odd file decoded whole by the CLI and by the dataset
def test_uniform_clips_of_odd_files_reach_their_last_frame():
    """Files the CLI plays with packets flagged discard (the first 8, the last) or timestamps that restart:
    two uniform clips start at frame 0 and end at the CLI's last frame, pixel for pixel."""
    odd = [vm.make_mp4_cut_mid_gop(), vm.make_mp4_short_edit(), vm.make_joined_ts()]
    ds = VideoClipDataset(odd, num_frames_per_clip=3, num_clips=2)  # no transform: each video at its own size
    for k, (clips, label) in enumerate(ds.__getitems__([0, 1, 2])):
        ref = torch.from_numpy(vm.cli_frames(odd[k]).copy()).permute(0, 3, 1, 2)
        n = len(ref)
        assert label == k and clips.shape == (2, 3, 3, 48, 64)
        assert torch.equal(clips[0], ref[:3]) and torch.equal(clips[1], ref[n - 3:])


def test_video_clips_leave_augmentations_per_clip():
    # decode_video_clips takes no augment rows: the clip plan stops before the first augmentation
    t = v2.Compose([v2.Resize(40), v2.CenterCrop(32), v2.ColorJitter(0.4), v2.ToDtype(torch.float32, scale=True)])
    assert fuse(t).augment is not None and fuse(t).op == "decode_images"
    plan = fuse(t, op="decode_video_clips")
    assert plan.op == "decode_video_clips" and plan.augment is None and [type(x) for x in plan.per_sample.transforms] == [v2.ColorJitter, v2.ToDtype]
