"""decode_video_clips against "decode with the ffmpeg CLI, resize with torchvision": clip positions, the
per-clip geometry (one crop box and flip for every frame of a clip), layouts, dtypes, seeds independent of
threads, lenient errors, opcheck and torch.compile."""

from __future__ import annotations

import pytest
import torch
import torchvision.transforms.v2.functional as F

import spdl_torch
from spdl_torch._seeds import splitmix64
from spdl_torch.io import decode_video_clips, decode_video_frames
from tests._utils import video as vm
from tests._utils.images import train_box

_MASK = (1 << 64) - 1


class SplitMix:
    """csrc/core/crop_geometry.h's SplitMix64, to recompute the op's draws in the test."""

    def __init__(self, seed: int) -> None:
        self.state = seed & _MASK

    def next(self) -> int:
        out = splitmix64(self.state)
        self.state = (self.state + 0x9E3779B97F4A7C15) & _MASK
        return out

    def randint(self, n: int) -> int:
        return int((self.next() >> 11) * 2.0**-53 * n)


def signed(v: int) -> int:
    return v - (1 << 64) if v >= 1 << 63 else v


def cli_tensor(name):
    return torch.from_numpy(vm.cli_frames(vm.make_video(name)).copy()).permute(0, 3, 1, 2)


def eval_ref(frames, short, crop):
    return F.center_crop(F.resize(frames, short, antialias=True), crop)


def assert_within_one(out, ref):
    diff = (out.int() - ref.int()).abs()
    assert diff.max() <= 1, f"max diff {diff.max()}"


@pytest.mark.parametrize("name", ["h264_bframes", "h264_gop250", "vp9", "h264_rot90"])
def test_uniform_eval_clips_match_cli_plus_torchvision(name):
    path = vm.make_video(name)
    ref_frames = cli_tensor(name)
    n = len(ref_frames)
    result = decode_video_clips([path, path], num_frames_per_clip=4, num_clips=3, num_indices_between_frames=2, height=28, width=24,
                                    resize_shorter=32)
    clips, idx = result.data, result.indices
    assert clips.shape == (2, 3, 4, 3, 28, 24) and clips.dtype == torch.uint8
    span = 3 * 2 + 1
    starts = [round(c * (n - span) / 2) for c in range(3)]
    want = torch.tensor([[s + 2 * t for t in range(4)] for s in starts])
    assert torch.equal(idx[0], want) and torch.equal(idx[1], want)
    for c in range(3):
        assert_within_one(clips[0, c], eval_ref(ref_frames[want[c]], 32, [28, 24]))
    assert torch.equal(clips[0], clips[1])


def test_train_clips_share_one_box_and_flip_per_clip():
    name = "h264_gop250"
    path = vm.make_video(name)
    ref_frames = cli_tensor(name)
    n, h, w = ref_frames.shape[0], ref_frames.shape[2], ref_frames.shape[3]
    seed = 1234567
    result = decode_video_clips([path], num_frames_per_clip=3, num_clips=4, num_indices_between_frames=3, height=20, width=20,
                                    sampling="random", geometry="train", hflip_prob=0.5, seeds=[seed])
    clips, idx = result.data, result.indices
    rng = SplitMix(seed)
    span = 2 * 3 + 1
    starts = [rng.randint(n - span + 1) for _ in range(4)]
    assert idx[0, :, 0].tolist() == starts
    flips = 0
    for c in range(4):
        top, left, bh, bw, flip = train_box(signed(rng.next()), h, w, hflip_prob=0.5)
        ref = F.resized_crop(ref_frames[idx[0, c]], top, left, bh, bw, [20, 20], antialias=True)
        if flip:
            ref = F.horizontal_flip(ref)
            flips += 1
        assert_within_one(clips[0, c], ref)


def test_random_sampling_depends_on_the_seed_only():
    path = vm.make_video("h264_bframes")
    kwargs = dict(num_frames_per_clip=2, num_clips=2, num_indices_between_frames=1, height=16, width=16, sampling="random", geometry="train",
                  seeds=[5, 6, 5])
    before = spdl_torch.io.get_num_threads()
    try:
        spdl_torch.io.set_num_threads(1)
        result = decode_video_clips([path] * 3, **kwargs)
        a, ia = result.data, result.ok
        spdl_torch.io.set_num_threads(2)
        result = decode_video_clips([path] * 3, **kwargs)
        b, ib = result.data, result.ok
    finally:
        spdl_torch.io.set_num_threads(before)
    assert torch.equal(a, b) and torch.equal(ia, ib)
    assert torch.equal(a[0], a[2]) and not torch.equal(a[0], a[1])


def test_layout_dtype_and_normalization():
    path = vm.make_video("h264_bframes")
    base = decode_video_clips([path], num_frames_per_clip=3, height=16, width=16, geometry="resize").data
    cthw = decode_video_clips([path], num_frames_per_clip=3, height=16, width=16, geometry="resize", dimension_order="NCTHW").data
    assert cthw.shape == (1, 1, 3, 3, 16, 16)
    assert torch.equal(cthw, base.transpose(2, 3))
    mean, std = (0.4, 0.5, 0.6), (0.2, 0.25, 0.3)
    f = decode_video_clips([path], num_frames_per_clip=3, height=16, width=16, geometry="resize", dtype=torch.float32,
                           mean=mean, std=std).data
    ref = F.normalize(base[0, 0].float() / 255, mean, std)
    torch.testing.assert_close(f[0, 0], ref, atol=1e-5, rtol=1e-5)


def test_full_size_resize_is_the_cli_frame():
    path = vm.make_video("h264_10fps")
    ref = cli_tensor("h264_10fps")
    result = decode_video_clips([path], num_frames_per_clip=5, num_indices_between_frames=4, height=48, width=64, geometry="resize")
    clips, idx = result.data, result.indices
    assert torch.equal(clips[0, 0], ref[idx[0, 0]])


def test_by_time_and_short_videos():
    path = vm.make_video("h264_vfr")
    pts = vm.probe(path)["pts"]
    idx = decode_video_clips([path], num_frames_per_clip=4, seconds_between_frames=0.1, height=16, width=16, geometry="resize").indices
    end = pts[-1] + 0.04
    t0 = pts[0] + ((end - pts[0]) - 0.3) / 2
    want = [max(i for i, p in enumerate(pts) if p <= t0 + 0.1 * t + 1e-9) for t in range(4)]
    assert idx[0, 0].tolist() == want
    # a clip longer than the video repeats the last frame
    short = vm.make_video("mjpeg")  # 10 frames
    idx = decode_video_clips([short], num_frames_per_clip=6, num_indices_between_frames=3, height=8, width=8, geometry="resize").indices
    assert idx[0, 0].tolist() == [0, 3, 6, 9, 9, 9]


def test_bad_video_strict_and_lenient(tmp_path):
    good = vm.make_video("h264_bframes")
    audio = vm.make_audio_only(tmp_path)
    with pytest.raises(spdl_torch.DecodeError, match=r"audio_only\.m4a: no video stream") as e:
        decode_video_clips([good, audio], num_frames_per_clip=2, height=8, width=8)
    assert e.value.sample_index == 1 and e.value.path == str(audio)
    result = decode_video_clips([good, audio, b"not a video"], num_frames_per_clip=2, height=8, width=8, strict=False)
    clips, ok = result.data, result.ok
    assert ok.tolist() == [True, False, False]
    assert (clips[1:] == 0).all() and clips[0].any()
    with pytest.raises(ValueError, match="expected seeds"):
        decode_video_clips([good], num_frames_per_clip=2, height=8, width=8, sampling="random")
    with pytest.raises(ValueError, match="exceeds max_frames = 3"):
        decode_video_clips([good], num_frames_per_clip=2, num_clips=2, height=8, width=8, max_frames=3)
    with pytest.raises(TypeError, match="single"):
        decode_video_clips(good, num_frames_per_clip=2, height=8, width=8)


def test_opcheck_and_compile():
    path = vm.make_video("h264_bframes")
    data = torch.frombuffer(bytearray(path.read_bytes()), dtype=torch.uint8)
    op = torch.ops.spdl_torch.decode_video_clips.default
    torch.library.opcheck(op, ([data, data],), {"num_frames_per_clip": 2, "num_clips": 2, "height": 8, "width": 8})
    torch.library.opcheck(op, ([data],), {"num_frames_per_clip": 2, "height": 8, "width": 8, "geometry": "train",
                                           "seeds": torch.tensor([3]), "dimension_order": "NCTHW", "dtype": torch.float32})

    def load(d):
        clips, ok, idx = torch.ops.spdl_torch.decode_video_clips([d], num_frames_per_clip=2, height=8, width=8)
        return clips.float().mean(dim=(1, 2))

    compiled = torch.compile(load, fullgraph=True, backend="eager")
    torch.testing.assert_close(compiled(data), load(data))


def test_real_corpus_subsample_clips_match_frames_plus_torchvision():
    """Real files: the clips equal decode_video_frames' frames (themselves checked against the CLI in
    test_video.py) resized by torchvision, within 1 level."""
    from tests._utils import corpus

    files = [p for p in corpus.files("video") if p.suffix.lower() in (".mp4", ".mkv", ".webm")][:3]
    if not files:
        pytest.skip("no media corpus video files")
    result = decode_video_clips(files, num_frames_per_clip=4, num_indices_between_frames=2, num_clips=2, height=32, width=32,
                                    resize_shorter=40)
    clips, idx = result.data, result.indices
    for b, path in enumerate(files):
        for c in range(2):
            frames = decode_video_frames(path, indices=idx[b, c].tolist()).data
            assert_within_one(clips[b, c], eval_ref(frames, 40, [32, 32]))
