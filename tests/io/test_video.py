"""decode_video_frames / video_metadata against the ffmpeg CLI: every frame of synthetic videos (B-frames, GOP
1/12/250, VFR, 10 fps, HEVC, VP9, MPEG-4, MJPEG, 10-bit, 4:4:4, odd sizes, rotation) equal to
``ffmpeg -fps_mode passthrough -pix_fmt rgb24`` bit for bit, by index and by timestamp, in any order; frame
counts equal to ffprobe's ``-count_frames``; errors for bad input."""

from __future__ import annotations

import random

import numpy as np
import pytest
import torch

import spdl_torch
from spdl_torch.io import decode_video_frames, video_metadata
from tests import video_media as vm

ALL = list(vm.SPECS)


def frames_hwc(out) -> np.ndarray:
    return out.data.permute(0, 2, 3, 1).numpy()


@pytest.mark.parametrize("name", ALL)
def test_every_frame_by_index_equals_the_cli(name):
    path = vm.make_video(name)
    ref = vm.cli_frames(path)
    meta = video_metadata(path, count_frames=True)
    assert meta.num_frames == vm.probe(path)["count"] == len(ref)
    out = decode_video_frames(path, indices=range(meta.num_frames))
    assert out.data.shape == (len(ref), 3, ref.shape[1], ref.shape[2])
    assert out.data.dtype == torch.uint8
    np.testing.assert_array_equal(frames_hwc(out), ref)
    assert not out.corrupt.any()
    # presentation timestamps as ffprobe's -show_frames gives them
    probed = np.asarray(vm.probe(path)["pts"])
    known = ~np.isnan(probed)  # ffprobe prints no pts for a frame drained without one (AVI with B-frames)
    np.testing.assert_allclose(out.pts_seconds.numpy()[known], probed[known], atol=1e-3)


@pytest.mark.parametrize("name", ["h264_bframes", "h264_gop250", "h264_vfr", "hevc", "vp9", "mpeg4"])
def test_any_order_equals_a_linear_decode(name):
    path = vm.make_video(name)
    n = video_metadata(path, count_frames=True).num_frames
    linear = decode_video_frames(path, indices=range(n)).data
    rng = random.Random(7)
    order = [n - 1, 0, n // 2, n // 2, n - 1, 1] + [rng.randrange(n) for _ in range(12)]
    backwards = list(range(n - 1, -1, -3))
    for indices in (order, backwards):
        out = decode_video_frames(path, indices=indices)
        torch.testing.assert_close(out.data, linear[indices], rtol=0, atol=0)


@pytest.mark.parametrize("name", ["h264_bframes", "h264_vfr", "h264_10fps", "mpeg4"])
def test_timestamps_give_the_frame_displayed_then(name):
    path = vm.make_video(name)
    ref = vm.cli_frames(path)
    # our pts (equal to ffprobe's within its printed precision: test_every_frame_by_index_equals_the_cli)
    pts = decode_video_frames(path, indices=range(len(ref))).pts_seconds.tolist()
    # exactly at each pts, and just before the next one: pts_i <= t < pts_{i+1}
    ts = list(pts) + [(a + b) / 2 for a, b in zip(pts, pts[1:])] + [b - 1e-6 for b in pts[1:]]
    want = list(range(len(pts))) + list(range(len(pts) - 1)) + list(range(len(pts) - 1))
    out = decode_video_frames(path, timestamps=ts)
    np.testing.assert_array_equal(frames_hwc(out), ref[want])
    np.testing.assert_array_equal(out.pts_seconds.numpy(), np.asarray(pts)[want])


def test_vfr_timestamps_are_not_uniform():
    path = vm.make_video("h264_vfr")
    pts = np.asarray(vm.probe(path)["pts"])
    gaps = np.diff(pts)
    assert gaps.max() > 2 * gaps.min()  # the stream really is VFR
    out = decode_video_frames(path, indices=range(len(pts)))
    np.testing.assert_allclose(out.pts_seconds.numpy(), pts, atol=1e-3)


@pytest.mark.parametrize("name", ["h264_gop250", "h264_10fps", "vp9"])
def test_approximate_mode_equals_exact_for_constant_rate(name):
    path = vm.make_video(name)
    n = video_metadata(path, count_frames=True).num_frames
    indices = [n - 1, 0, 5, n // 2, 3]
    exact = decode_video_frames(path, indices=indices).data
    approx = decode_video_frames(path, indices=indices, seek_mode="approximate").data
    torch.testing.assert_close(approx, exact, rtol=0, atol=0)


@pytest.mark.parametrize("name", ["h264_bframes", "hevc", "h264_gop250"])
def test_skipping_nonref_frames_and_threads_give_identical_frames(name):
    path = vm.make_video(name)
    n = video_metadata(path, count_frames=True).num_frames
    indices = list(range(0, n, 3)) + [n - 2, 1]
    base = decode_video_frames(path, indices=indices, skip_nonref=False).data
    for kwargs in ({"skip_nonref": True}, {"threads": 2}, {"threads": 0}):
        torch.testing.assert_close(decode_video_frames(path, indices=indices, **kwargs).data, base, rtol=0, atol=0)


def test_sources_path_bytes_tensor_agree():
    path = vm.make_video("h264_bframes")
    data = path.read_bytes()
    a = decode_video_frames(path, indices=[3, 1]).data
    b = decode_video_frames(data, indices=[3, 1]).data
    c = decode_video_frames(torch.frombuffer(bytearray(data), dtype=torch.uint8), indices=[3, 1]).data
    torch.testing.assert_close(a, b, rtol=0, atol=0)
    torch.testing.assert_close(a, c, rtol=0, atol=0)


@pytest.mark.parametrize("name,rotation", [("h264_rot90", 90), ("h264_rot180", 180), ("h264_rot270", 270)])
def test_rotation_metadata(name, rotation):
    path = vm.make_video(name)
    meta = video_metadata(path)
    assert meta.rotation in (90, 180, 270)
    assert (meta.coded_width, meta.coded_height) == (64, 48)
    if meta.rotation % 180:
        assert (meta.width, meta.height) == (48, 64)
    unrotated = decode_video_frames(path, indices=[2], apply_rotation=False).data[0]
    assert unrotated.shape == (3, 48, 64)
    rotated = decode_video_frames(path, indices=[2]).data[0]
    k = {90: -1, 180: 2, 270: 1}[meta.rotation]  # clockwise quarter turns as torch.rot90 counts them
    torch.testing.assert_close(rotated, torch.rot90(unrotated, k, dims=(1, 2)), rtol=0, atol=0)


def test_metadata_fields():
    path = vm.make_video("h264_gop250")
    m = video_metadata(path)
    assert (m.width, m.height, m.codec, m.pixel_format) == (160, 120, "h264", "yuv420p")
    assert m.average_fps == pytest.approx(30.0)
    assert m.duration_seconds == pytest.approx(2.0, abs=0.05)
    assert m.num_frames == 60
    assert "matroska" in m.container
    assert m.time_base > 0
    m10 = video_metadata(vm.make_video("h264_10fps"))
    assert m10.average_fps == pytest.approx(10.0) and m10.num_frames == 30 and not m10.num_frames_counted
    assert m10.key_frame_seconds and m10.key_frame_seconds[0] == pytest.approx(0.0, abs=0.25)


def test_index_past_the_end_raises_index_error_with_the_range():
    path = vm.make_video("h264_bframes")
    with pytest.raises(IndexError, match=r"frame index 30 is out of range: the stream has 30 frames \(valid indices 0\.\.29\)"):
        decode_video_frames(path, indices=[0, 30])
    with pytest.raises(IndexError, match="out of range"):
        decode_video_frames(path, indices=[-1])
    with pytest.raises(IndexError, match=r"timestamp 5\.000000 s is outside the stream's \[0\.000000 s, 1\.200000 s\)"):
        decode_video_frames(path, timestamps=[5.0])
    with pytest.raises(IndexError, match="outside"):
        decode_video_frames(path, timestamps=[-0.5])


def test_bad_inputs_raise_decode_error_naming_the_file(tmp_path):
    audio = vm.make_audio_only(tmp_path)
    with pytest.raises(spdl_torch.DecodeError, match=r"audio_only\.m4a: no video stream") as e:
        decode_video_frames(audio, indices=[0])
    assert e.value.path == str(audio)
    with pytest.raises(spdl_torch.DecodeError, match="empty input"):
        video_metadata(b"")
    garbage = tmp_path / "garbage.mp4"
    garbage.write_bytes(bytes(range(256)) * 40)
    with pytest.raises(spdl_torch.DecodeError, match="garbage.mp4: cannot open the input: Invalid data"):
        decode_video_frames(garbage, indices=[0])
    with pytest.raises(FileNotFoundError, match="missing.mp4"):
        decode_video_frames(tmp_path / "missing.mp4", indices=[0])


def test_truncated_file_gives_the_cli_frames_or_decode_error(tmp_path):
    """A file cut in the middle: what decodes equals the CLI's decode of the cut file (a last packet cut
    short without the demuxer flagging it decodes as FFmpeg decodes it; packets flagged corrupt mark their
    frames and the frames after them until the next key frame), and every frame before the cut equals the
    whole file's."""
    whole = vm.make_video("h264_gop250")
    data = whole.read_bytes()
    for fraction in (2 / 3, 1 / 3):
        cut = tmp_path / f"cut_{fraction:.2f}.mkv"
        cut.write_bytes(data[: int(len(data) * fraction)])
        n = video_metadata(cut, count_frames=True).num_frames
        assert 0 < n < 60
        try:
            out = decode_video_frames(cut, indices=range(n))
        except spdl_torch.DecodeError as e:
            assert f"{cut.name}: corrupt video stream" in str(e)
            out = decode_video_frames(cut, indices=range(n), strict=False)
        ref = vm.cli_frames(cut)
        good = ~out.corrupt
        np.testing.assert_array_equal(frames_hwc(out)[good.numpy()], ref[: n][good.numpy()])
        full = decode_video_frames(whole, indices=range(n - 1)).data
        torch.testing.assert_close(out.data[: n - 1][good[: n - 1]], full[good[: n - 1]], rtol=0, atol=0)


def test_limits_checked_before_decoding():
    path = vm.make_video("h264_gop250")
    with pytest.raises(spdl_torch.DecodeError, match="exceeds the limit of 1000 pixels"):
        decode_video_frames(path, indices=[0], max_pixels=1000)
    with pytest.raises(ValueError, match="over max_frames = 4"):
        decode_video_frames(path, indices=[0] * 5, max_frames=4)
    with pytest.raises(ValueError, match="exactly one of"):
        decode_video_frames(path)
    with pytest.raises(ValueError, match="seek_mode"):
        decode_video_frames(path, indices=[0], seek_mode="fast")


def test_opcheck_video_ops():
    path = vm.make_video("h264_bframes")
    data = torch.frombuffer(bytearray(path.read_bytes()), dtype=torch.uint8)
    torch.library.opcheck(torch.ops.spdl_torch.decode_video_frames.default, (data,), {"indices": [3, 0, 3]})
    torch.library.opcheck(torch.ops.spdl_torch.decode_video_frames.default, (data,), {"timestamps": [0.5]})
    # string outputs: AOT dispatch (test_aot_dispatch_*) traces tensors only, so it is left out here
    torch.library.opcheck(torch.ops.spdl_torch.video_metadata.default, (data,), {},
                          test_utils=("test_schema", "test_autograd_registration", "test_faketensor"))


# ---- the real corpus (Debian packages' videos): a subsample in `make test`, all of it with
# SPDL_TORCH_VIDEO_CORPUS=1 (`make test-video-corpus`).
import os  # noqa: E402

from tests import media  # noqa: E402

_EXHAUSTIVE = os.environ.get("SPDL_TORCH_VIDEO_CORPUS") == "1"
_CORPUS = media.files("video")
_SUBSAMPLE = _CORPUS if _EXHAUSTIVE else _CORPUS[:: max(1, len(_CORPUS) // 8)][:8]
_HEAD = 120 if _EXHAUSTIVE else 12  # frames compared with the CLI per file


@pytest.mark.parametrize("path", media.params(_SUBSAMPLE))
def test_corpus_first_frames_and_seeks_equal_the_cli(path):
    ref = vm.cli_frames(path, _HEAD)
    meta = video_metadata(path, count_frames=True)
    if _EXHAUSTIVE:
        assert meta.num_frames == vm.probe(path)["count"]
    k = min(len(ref), meta.num_frames)
    out = decode_video_frames(path, indices=range(k))
    np.testing.assert_array_equal(frames_hwc(out), ref[:k])
    order = [k - 1, 0, k // 2, k - 1]
    np.testing.assert_array_equal(frames_hwc(decode_video_frames(path, indices=order)), ref[order])
    last = meta.num_frames - 1  # the far end: a seek, then the same frame as twice in a row
    a = decode_video_frames(path, indices=[last, 0, last]).data
    torch.testing.assert_close(a[0], a[2], rtol=0, atol=0)
