"""decode_video_frames / video_metadata against the ffmpeg CLI: every frame of synthetic videos (B-frames, GOP
1/12/250, VFR, 10 fps, HEVC, VP9, MPEG-4, MJPEG, 10-bit, 4:4:4, odd sizes, rotation) equal to
``ffmpeg -fps_mode passthrough -pix_fmt rgb24`` bit for bit, by index and by timestamp, in any order; frame
counts equal to ffprobe's ``-count_frames``; the same for odd files the CLI plays (packets flagged discard,
timestamps that restart); errors for bad input and bad arguments."""

from __future__ import annotations

import random
import re
import subprocess

import numpy as np
import pytest
import torch

import spdl_torch
from spdl_torch.io import decode_video_frames, video_metadata
from tests._utils import video as vm

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
    assert out.ok.all()
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
    out = decode_video_frames(path, seconds=ts)
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
    for kwargs in ({"skip_nonref": True}, {"num_ffmpeg_threads": 2}, {"num_ffmpeg_threads": 0}):
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
    path10 = vm.make_video("h264_10fps")
    m10 = video_metadata(path10)
    assert m10.average_fps == pytest.approx(10.0) and m10.num_frames == 30 == vm.probe(path10)["count"]
    assert (m10.num_frames_from_header, m10.num_frames_from_content) == (30, None)  # the header's, nothing counted
    assert m10.key_frame_seconds and m10.key_frame_seconds[0] == pytest.approx(0.0, abs=0.25)
    assert m10.begin_stream_seconds == pytest.approx(vm.probe(path10)["pts"][0], abs=1e-6)
    counted = video_metadata(path10, count_frames=True)  # torchcodec's names: the header's and the packets' counts
    assert (counted.num_frames_from_header, counted.num_frames_from_content, counted.num_frames) == (30, 30, 30)


def _ffprobe_key_pts(path):
    """ffprobe's key packets' pts (seconds, ascending) of the first video stream."""
    out = subprocess.run([vm.FFPROBE, "-v", "error", "-select_streams", "v:0", "-show_entries", "packet=pts_time,flags",
                          "-of", "csv=p=0", str(path)], check=True, capture_output=True, text=True).stdout.split()
    return sorted(float(line.split(",")[0]) for line in out if "K" in line.split(",")[1])


@pytest.mark.parametrize("name", ["h264_bframes", "h264_10fps", "h264_gop250", "h264_vfr"])
def test_key_frame_seconds_are_the_key_frames_pts(name):
    """Exact: the key frames' presentation times, as ffprobe lists them (an MP4's index holds decode times,
    one reorder delay early); each names its key frame through seconds=."""
    path = vm.make_video(name)
    m = video_metadata(path)
    assert m.key_frame_seconds == pytest.approx(_ffprobe_key_pts(path), abs=1e-6)
    assert m.key_frame_seconds[0] == pytest.approx(m.begin_stream_seconds, abs=1e-6)
    at_keys = decode_video_frames(path, seconds=m.key_frame_seconds)
    assert at_keys.pts_seconds.tolist() == pytest.approx(m.key_frame_seconds, abs=1e-6)
    header = video_metadata(path, seek_mode="approximate").key_frame_seconds  # the container index's entries:
    assert len(header) <= len(m.key_frame_seconds)  # Matroska's cues may list fewer, an MP4's decode times
    assert all(h <= e + 1e-6 for h, e in zip(header, m.key_frame_seconds))  # never follow the pts


def test_index_past_the_end_raises_index_error_with_the_range():
    path = vm.make_video("h264_bframes")
    with pytest.raises(IndexError, match=r"frame index 30 is out of range: the stream has 30 frames \(valid indices 0\.\.29\)"):
        decode_video_frames(path, indices=[0, 30])
    with pytest.raises(IndexError, match="out of range"):
        decode_video_frames(path, indices=[-1])
    with pytest.raises(IndexError, match=r"timestamp 5 s is outside the stream's \[0 s, 1\.2 s\)"):
        decode_video_frames(path, seconds=[5.0])
    with pytest.raises(IndexError, match="outside"):
        decode_video_frames(path, seconds=[-0.5])


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
        good = out.ok
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


def test_a_header_declaring_a_picture_ffmpeg_refuses_names_the_size_and_the_limit(tmp_path):
    """A small y4m whose header is edited to declare 40000x30000: the CLI's reason is FFmpeg's picture size check
    ("Picture size 40000x30000 is invalid"; the demuxer's error code, EINVAL plus its frame header's length, reads
    "Device or resource busy"). The message leads with the declared size against our pixel limit, as for every
    oversized image, and without a limit against FFmpeg's; it never blames a busy device."""
    vm.require_ffmpeg()
    good = tmp_path / "small.y4m"
    subprocess.run([vm.FFMPEG, "-v", "error", "-f", "lavfi", "-i", "testsrc2=size=64x48:rate=25:duration=0.08",
                    "-pix_fmt", "yuv420p", str(good)], check=True, capture_output=True)
    data = good.read_bytes()
    assert data.startswith(b"YUV4MPEG2 W64 H48 ")
    path = tmp_path / "huge.y4m"
    path.write_bytes(data.replace(b" W64 H48 ", b" W40000 H30000 ", 1))
    assert decode_video_frames(good, indices=[1]).data.shape == (1, 3, 48, 64)  # only the edit is wrong
    cli = subprocess.run([vm.FFMPEG, "-v", "error", "-i", str(path), "-f", "null", "-"], capture_output=True, text=True)
    assert cli.returncode != 0 and "Picture size 40000x30000 is invalid" in cli.stderr
    ours = (rf"^{re.escape(str(path))}: video: image of 40000x30000 = 1200000000 pixels exceeds the limit of "
            rf"{spdl_torch.io.limits.image_pixels} pixels \(max_pixels\)$")
    with pytest.raises(spdl_torch.DecodeError, match=ours):
        decode_video_frames(path, indices=[0])
    with pytest.raises(spdl_torch.DecodeError, match=ours):
        spdl_torch.io.decode_video_clips([path], num_frames_per_clip=1, height=8, width=8)
    ffmpegs = (rf"^{re.escape(str(path))}: cannot open the input: its header declares a picture of 40000x30000 = "
               r"1200000000 pixels, over the largest picture FFmpeg allocates \(av_image_check_size: about 268 "
               r"million pixels\)$")
    for call in (lambda: decode_video_frames(path, indices=[0], max_pixels=0), lambda: video_metadata(path),
                 lambda: spdl_torch.io.decode_audio(path)):
        with pytest.raises(spdl_torch.DecodeError, match=ffmpegs):
            call()


def test_opcheck_video_ops():
    path = vm.make_video("h264_bframes")
    data = torch.frombuffer(bytearray(path.read_bytes()), dtype=torch.uint8)
    torch.library.opcheck(torch.ops.spdl_torch.decode_video_frames.default, (data,), {"indices": [3, 0, 3]})
    torch.library.opcheck(torch.ops.spdl_torch.decode_video_frames.default, (data,), {"seconds": [0.5]})
    # string outputs: AOT dispatch (test_aot_dispatch_*) traces tensors only, so it is left out here
    torch.library.opcheck(torch.ops.spdl_torch.video_metadata.default, (data,), {},
                          test_utils=("test_schema", "test_autograd_registration", "test_faketensor"))


# ---- odd files the CLI plays: packets flagged discard (mov edit lists), timestamps that restart.
ODD = {"joined_ts": vm.make_joined_ts, "cut_mid_gop": vm.make_mp4_cut_mid_gop, "short_edit": vm.make_mp4_short_edit}


@pytest.mark.parametrize("name", list(ODD))
def test_odd_files_give_every_cli_frame_in_its_order(name):
    """Every frame equals the CLI's (``-fps_mode passthrough``) at its position, the counts equal
    ffprobe's ``-count_frames``, and requests in any order give the frames of a linear decode."""
    path = ODD[name]()
    ref = vm.cli_frames(path)
    n = len(ref)
    assert vm.probe(path)["count"] == n
    assert video_metadata(path, count_frames=True).num_frames == n
    out = decode_video_frames(path, indices=range(n))
    np.testing.assert_array_equal(frames_hwc(out), ref)
    assert out.ok.all()
    probed = np.asarray(vm.probe(path)["pts"])  # each frame's own timestamp, in the CLI's order
    np.testing.assert_allclose(out.pts_seconds.numpy(), probed, atol=1e-3)
    rng = random.Random(3)
    order = [n - 1, 0, n - 1, n // 2, 1, n // 2 + 1] + [rng.randrange(n) for _ in range(10)] + list(range(n - 1, -1, -4))
    for kwargs in ({}, {"skip_nonref": False}, {"num_ffmpeg_threads": 2}):
        np.testing.assert_array_equal(frames_hwc(decode_video_frames(path, indices=order, **kwargs)), ref[order])
    with pytest.raises(IndexError, match=f"the stream has {n} frames"):
        decode_video_frames(path, indices=[n])


def test_discarded_packets_are_no_frames_of_the_header_count_or_the_timestamps():
    """The edit list's discarded samples: not in the header's count either, and no timestamp names them."""
    for path, n in ((vm.make_mp4_cut_mid_gop(), 22), (vm.make_mp4_short_edit(), 29)):
        meta = video_metadata(path)
        assert (meta.num_frames, meta.num_frames_from_header, meta.num_frames_from_content) == (n, n, None)
        pts = decode_video_frames(path, indices=range(n)).pts_seconds.tolist()
        assert pts[0] == 0.0
        with pytest.raises(IndexError, match=r"outside the stream's \[0 s, "):
            decode_video_frames(path, seconds=[-0.001])
        out = decode_video_frames(path, seconds=[0.0, pts[-1], pts[-1] + 0.039])
        np.testing.assert_array_equal(frames_hwc(out), vm.cli_frames(path)[[0, n - 1, n - 1]])
    # the discarded last frame's time, 29 x 40 ms, is past the end
    with pytest.raises(IndexError, match=r"timestamp 1\.16 s is outside the stream's \[0 s, 1\.16 s\)"):
        decode_video_frames(vm.make_mp4_short_edit(), seconds=[1.16])


def test_restarting_timestamps_address_frames_in_decode_order():
    """Two recordings joined (pts 1.48 .. 2.64 s, then 1.48 .. 2.64 s again): frame i is the CLI's i-th
    (the second recording's frames are reachable), a timestamp names no single frame (DecodeError), and
    uniform clips over the whole stream reach both recordings."""
    path = vm.make_joined_ts()
    ref = vm.cli_frames(path)
    out = decode_video_frames(path, indices=[0, 30, 29, 59])
    np.testing.assert_array_equal(frames_hwc(out), ref[[0, 30, 29, 59]])
    assert out.pts_seconds[0] == out.pts_seconds[1]  # the same pts, two different frames
    assert not np.array_equal(frames_hwc(out)[0], frames_hwc(out)[1])
    with pytest.raises(spdl_torch.DecodeError, match=r"joined\.ts: the stream's timestamps do not increase "
                                                     r"\(frame 30 at .* follows frame 29 at .*request the frames by index"):
        decode_video_frames(path, seconds=[1.6])
    from spdl_torch.io import decode_video_clips

    indices = decode_video_clips([path], num_frames_per_clip=2, num_clips=3, height=48, width=64,
                                        geometry="resize").indices
    assert indices.tolist() == [[[0, 1], [29, 30], [58, 59]]]


# ---- argument checks (every video op that takes the argument)
def test_indices_must_be_integers_in_int64():
    path = vm.make_video("h264_bframes")
    for bad in ([1.7], [True], [np.bool_(False)], ["3"], [torch.tensor(True)], [torch.tensor(1.0)]):
        with pytest.raises(TypeError, match="expected integer frame indices"):
            decode_video_frames(path, indices=bad)
    with pytest.raises(IndexError, match=r"frame index 1180591620717411303424 is out of range"):
        decode_video_frames(path, indices=[2 ** 70])
    with pytest.raises(IndexError, match=r"frame index -1180591620717411303424 is out of range"):
        decode_video_frames(path, indices=[0, -2 ** 70])
    ref = decode_video_frames(path, indices=[3, 1]).data
    for good in ([np.int64(3), np.int32(1)], torch.tensor([3, 1]), np.array([3, 1])):
        torch.testing.assert_close(decode_video_frames(path, indices=good).data, ref, rtol=0, atol=0)
    for bad in ([True], ["0.5"]):
        with pytest.raises(TypeError, match="expected timestamps in seconds"):
            decode_video_frames(path, seconds=bad)
    torch.testing.assert_close(decode_video_frames(path, seconds=[np.float32(0.0), 0]).data,
                               decode_video_frames(path, indices=[0, 0]).data, rtol=0, atol=0)


def test_stream_minus_one_or_none_is_the_best_stream_and_nothing_below():
    path = vm.make_video("h264_bframes")
    for call in (lambda s: decode_video_frames(path, indices=[0], stream_index=s),
                 lambda s: video_metadata(path, stream_index=s)):
        for bad in (-2, -(2 ** 40), 2 ** 40):
            with pytest.raises(ValueError, match="expected stream_index >= 0, or -1 / None"):
                call(bad)
        for bad in (True, 0.0):
            with pytest.raises(TypeError, match="expected an int stream_index"):
                call(bad)
    assert (video_metadata(path, stream_index=None) == video_metadata(path, stream_index=-1)
            == video_metadata(path, stream_index=0))
    torch.testing.assert_close(decode_video_frames(path, indices=[2], stream_index=None).data,
                               decode_video_frames(path, indices=[2], stream_index=0).data, rtol=0, atol=0)
    with pytest.raises(ValueError, match="expected stream_index >= 0"):  # the op itself, as TorchScript calls it
        torch.ops.spdl_torch.video_metadata(torch.frombuffer(bytearray(path.read_bytes()), dtype=torch.uint8),
                                            stream_index=-2)


def test_output_over_max_output_bytes_is_refused_up_front(monkeypatch):
    """frames x height x width x 3 over the cap: a ValueError naming the file and the size, before any frame
    memory (a cap of 0 or less: none); the module default is read at each call."""
    path = vm.make_video("h264_gop250")  # 160x120: 57600 bytes per frame
    exact = decode_video_frames(path, indices=[0, 1], max_output_bytes=2 * 57600)
    assert exact.data.shape == (2, 3, 120, 160)
    with pytest.raises(ValueError, match=rf"^{re.escape(str(path))}: decode_video_frames: the output, 3 frames of 3x120x160 uint8, "
                                         r"is 172800 bytes \(0\.0 GiB\), over max_output_bytes = 172799 "
                                         r"\(raise it per call, or spdl_torch\.io\.limits\.video_output_bytes"):
        decode_video_frames(path, indices=[0, 1, 2], max_output_bytes=172799)
    # a header's huge frame size times many indices: refused before the index is read or anything allocated
    with pytest.raises(ValueError, match=r"the output, 4096 frames of 3x120x160 uint8, is 235929600 bytes"):
        decode_video_frames(path, indices=[10 ** 6] * 4096, max_output_bytes=10 ** 8)
    assert decode_video_frames(path, indices=[0], max_output_bytes=0).data.shape[0] == 1
    monkeypatch.setattr(spdl_torch.io.limits, "video_output_bytes", 57600)
    decode_video_frames(path, indices=[0])
    with pytest.raises(ValueError, match="over max_output_bytes = 57600"):
        decode_video_frames(path, indices=[0, 1])
    with pytest.raises(ValueError, match="over max_output_bytes = 57600"):
        decode_video_frames(path.read_bytes(), indices=[0, 1])  # bytes: no path to name
    from spdl_torch.io import decode_video_clips

    with pytest.raises(ValueError, match=r"decode_video_clips: the output, 2 videos x 3 clips x 4 frames of "
                                         r"3x100x100 float32, is 2880000 bytes .*over max_output_bytes = 57600"):
        decode_video_clips([path, path], num_frames_per_clip=4, num_clips=3, height=100, width=100, dtype=torch.float32)
    with pytest.raises(ValueError, match=r"4 videos x 8 clips x 16 frames of 3x65536x65536 float32, is "
                                         r"26388279066624 bytes \(24576\.0 GiB\), over max_output_bytes = 17179869184"):
        decode_video_clips([path] * 4, num_frames_per_clip=16, num_clips=8, height=65536, width=65536, dtype=torch.float32,
                           max_output_bytes=1 << 34)
    clips = decode_video_clips([path], num_frames_per_clip=1, height=120, width=160, geometry="resize", max_output_bytes=57600).data
    assert clips.shape == (1, 1, 1, 3, 120, 160)


# ---- the real corpus (Debian packages' videos): a subsample in `make test` (12 first frames per file), every
# file (120 first frames, the frame count, then every frame) in the corpus tier (`make test-video-corpus`).
from tests._utils import corpus  # noqa: E402

_CORPUS = corpus.files("video")
_SUBSAMPLE = _CORPUS[:: max(1, len(_CORPUS) // 8)][:8]
_CORPUS_TIER = [pytest.mark.corpus]


def _first_frames_params():
    """(path, frames compared with the CLI, the whole corpus): the subsample, then every file."""
    sub = [pytest.param(*p.values, 12, False, id=p.id, marks=p.marks) for p in corpus.params(_SUBSAMPLE)]
    every = [pytest.param(*p.values, 120, True, id=p.id, marks=p.marks)
             for p in corpus.params(_CORPUS, marks=_CORPUS_TIER, prefix="corpus-")]
    return sub + every


@pytest.mark.parametrize("path, head, exhaustive", _first_frames_params())
def test_corpus_first_frames_and_seeks_equal_the_cli(path, head, exhaustive):
    ref = vm.cli_frames(path, head)
    meta = video_metadata(path, count_frames=True)
    if exhaustive:
        assert meta.num_frames == vm.probe(path)["count"]
    k = min(len(ref), meta.num_frames)
    out = decode_video_frames(path, indices=range(k))
    np.testing.assert_array_equal(frames_hwc(out), ref[:k])
    order = [k - 1, 0, k // 2, k - 1]
    np.testing.assert_array_equal(frames_hwc(decode_video_frames(path, indices=order)), ref[order])
    last = meta.num_frames - 1  # the far end: a seek, then the same frame as twice in a row
    a = decode_video_frames(path, indices=[last, 0, last]).data
    torch.testing.assert_close(a[0], a[2], rtol=0, atol=0)


@pytest.mark.parametrize("path", corpus.params(_CORPUS, marks=_CORPUS_TIER))  # minutes: make test-video-corpus
def test_corpus_every_frame_equals_the_cli(path):
    """Every frame of every corpus video equals the CLI's at its position (streamed in chunks), the count
    equals ffprobe's, and frames asked in a random order across the whole file equal them too."""
    n = video_metadata(path, count_frames=True).num_frames
    assert n == vm.probe(path)["count"]
    rng = random.Random(len(path.name))
    sample = sorted(rng.sample(range(n), min(n, 8)))
    picked, k = {}, 0
    for chunk in vm.cli_frame_chunks(path):
        out = decode_video_frames(path, indices=range(k, k + len(chunk)))
        np.testing.assert_array_equal(frames_hwc(out), chunk, err_msg=f"frames {k}..{k + len(chunk) - 1}")
        picked.update({i: chunk[i - k] for i in sample if k <= i < k + len(chunk)})
        k += len(chunk)
    assert k == n
    order = sample[::-1] + sample[:2]
    np.testing.assert_array_equal(frames_hwc(decode_video_frames(path, indices=order)),
                                  np.stack([picked[i] for i in order]))


@pytest.mark.parametrize("path", corpus.params(_CORPUS, marks=_CORPUS_TIER))  # make test-video-corpus
def test_corpus_frames_at_each_key_frame_equal_the_cli(path):
    """A request at each key frame the container marks, and two frames after it, each in a fresh call (so each
    is reached by a seek), equals the CLI's whole decode there: also where a marked key frame does not decode
    cleanly on its own (cockatoo.mp4's recovery-point I frames at 3.8 s and 7.25 s: the decoder flags the
    frames after a seek there, and the reader decodes them from an earlier key frame)."""
    n = vm.probe(path)["count"]
    wanted = sorted({j for k in vm.key_frame_indices(path) for j in (k, k + 2) if 0 < j < n})
    if not wanted:
        pytest.skip("one key frame only: nothing is reached by a seek")
    picked, k = {}, 0
    for chunk in vm.cli_frame_chunks(path):
        picked.update({i: chunk[i - k] for i in wanted if k <= i < k + len(chunk)})
        k += len(chunk)
    for i in wanted:
        np.testing.assert_array_equal(frames_hwc(decode_video_frames(path, indices=[i]))[0], picked[i],
                                      err_msg=f"frame {i}")
