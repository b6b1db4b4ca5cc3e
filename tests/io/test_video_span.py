"""The span a video's frames are displayed in, where the header's start and the first frame's pts differ or
agree: ``video_metadata``'s ``begin_stream_seconds`` / ``end_stream_seconds`` equal the first frame's pts and the
last frame's end as the ffmpeg CLI times its frames (``-copyts``), and they are exactly the timestamps
``decode_video_frames`` accepts, with torchcodec's rule for a time before the first frame (``get_frames_played_at``
raises: no frame is displayed then). The approximate mode's span is the header's. Each file is made in the test."""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
from fractions import Fraction

import pytest

import spdl_torch
from spdl_torch.io import decode_video_clips, decode_video_frames, video_metadata
from tests._utils import video as vm

_SRC = "testsrc2=size=64x48:rate=25:duration=0.4"

# name -> encoder and muxer arguments, container suffix. The header's start (ffprobe's stream start_time)
# against the first frame the CLI shows:
CASES = {
    # decode times only (AVI): the first frame comes out of the B-frame delay one frame late, at 0.04 s; the
    # header says 0
    "avi_mpeg4_bframes": ("-c:v mpeg4 -bf 2 -g 12", "avi"),
    "avi_h264_bframes": ("-c:v libx264 -preset ultrafast -bf 2 -g 12", "avi"),  # 2 frames late: 0.08 s
    # no edit list: the B-frame delay stays in the pts (0.08 s), and the header says so too
    "mp4_no_edit_list": ("-c:v libx264 -preset ultrafast -bf 2 -g 12 -use_editlist 0", "mp4"),
    # an edit list that hides the B-frame delay: both 0
    "mp4_edit_list": ("-c:v libx264 -preset ultrafast -bf 2 -g 12", "mp4"),
    # MPEG-TS starts at 1.4 s (the muxer's offset) plus the delay
    "ts_offset": ("-c:v libx264 -preset ultrafast -bf 2 -g 12", "ts"),
}
FAST = {"avi_mpeg4_bframes"}


def _make(tmp_path, name: str):
    vm.require_ffmpeg()
    args, ext = CASES[name]
    out = tmp_path / f"{name}.{ext}"
    subprocess.run([vm.FFMPEG, "-v", "error", "-y", "-f", "lavfi", "-i", _SRC, *args.split(), str(out)], check=True,
                   capture_output=True)
    return out


def cli_frames(path) -> tuple[list[float], float, list[str]]:
    """The CLI's frames: their timestamps (seconds, in presentation order, unshifted: ``-copyts``), the end of
    the last one (pts + duration) and each frame's md5 as rgb24, from one ``-f framemd5`` run (its time base,
    pts, duration and hash columns)."""
    out = subprocess.run([vm.FFMPEG, "-v", "error", "-copyts", "-i", str(path), "-map", "0:v:0", "-fps_mode",
                          "passthrough", "-pix_fmt", "rgb24", "-f", "framemd5", "-"], check=True, capture_output=True,
                         text=True).stdout
    tb = Fraction(re.search(r"^#tb 0: (\d+/\d+)$", out, re.M).group(1))
    rows = [[c.strip() for c in line.split(",")] for line in out.splitlines() if line and not line.startswith("#")]
    pts = [int(r[2]) * tb for r in rows]
    return [float(t) for t in pts], float(pts[-1] + int(rows[-1][3]) * tb), [r[5] for r in rows]


def md5s(frames) -> list[str]:
    return [hashlib.md5(f.permute(1, 2, 0).contiguous().numpy().tobytes()).hexdigest() for f in frames.data]


def header_start(path) -> float:
    """ffprobe's start_time of the first video stream (the header's)."""
    out = subprocess.run([vm.FFPROBE, "-v", "error", "-select_streams", "v:0", "-show_entries", "stream=start_time",
                          "-of", "json", str(path)], check=True, capture_output=True, text=True).stdout
    return float(json.loads(out)["streams"][0]["start_time"])


def _seconds(s: float) -> str:
    """A time as the messages print it, as a pattern (0.04 -> ``0\\.04 s``)."""
    text = f"{s:.6f}".rstrip("0").rstrip(".")
    return re.escape(f"{text} s")


@pytest.mark.parametrize("name", [pytest.param(n, marks=() if n in FAST else pytest.mark.slow) for n in CASES])
def test_the_exact_span_is_the_cli_frames_and_what_seconds_accepts(tmp_path, name):
    path = _make(tmp_path, name)
    pts, end, hashes = cli_frames(path)
    m = video_metadata(path)
    assert m.begin_stream_seconds_from_header == pytest.approx(header_start(path), abs=1e-6)
    assert (m.begin_stream_seconds, m.end_stream_seconds) == (pytest.approx(pts[0], abs=1e-6),
                                                              pytest.approx(end, abs=1e-6))
    # the span's first and last instants give the first and last frames, as the CLI decodes them
    out = decode_video_frames(path, seconds=[m.begin_stream_seconds, m.end_stream_seconds - 1e-6])
    assert md5s(out) == [hashes[0], hashes[-1]]
    assert out.pts_seconds.tolist() == [pytest.approx(pts[0], abs=1e-6), pytest.approx(pts[-1], abs=1e-6)]
    span = rf"outside the stream's \[{_seconds(pts[0])}, {_seconds(end)}\)"
    for t in (m.begin_stream_seconds - 1e-4, m.end_stream_seconds):  # just outside it: no frame
        with pytest.raises(IndexError, match=span):
            decode_video_frames(path, seconds=[t])
    if m.begin_stream_seconds_from_header < m.begin_stream_seconds:  # the header starts earlier: its start shows no frame
        with pytest.raises(IndexError, match=span + r" .*: no frame is displayed before the first one, at "
                                                    rf"{_seconds(pts[0])}, although the header's start "
                                                    rf"\(begin_stream_seconds_from_header\) is {_seconds(m.begin_stream_seconds_from_header)}"):
            decode_video_frames(path, seconds=[m.begin_stream_seconds_from_header])


def test_the_first_frame_late_in_an_avi_reported_and_refused_before_it(tmp_path):
    """The AVI whose packets carry decode times only: the header starts at 0, the CLI's first frame at 0.04 s;
    0.0 is refused with the span that begin_stream_seconds reports."""
    path = _make(tmp_path, "avi_mpeg4_bframes")
    m = video_metadata(path)
    assert (m.begin_stream_seconds_from_header, m.begin_stream_seconds, m.end_stream_seconds) == (0.0, pytest.approx(0.04),
                                                                               pytest.approx(0.44))
    with pytest.raises(IndexError, match=r"timestamp 0 s is outside the stream's \[0\.04 s, 0\.44 s\)"):
        decode_video_frames(path, seconds=[0.0])
    assert decode_video_frames(path, seconds=[0.04]).pts_seconds.tolist() == [pytest.approx(0.04)]


@pytest.mark.parametrize("name", [pytest.param("avi_mpeg4_bframes"), pytest.param("ts_offset", marks=pytest.mark.slow)])
def test_the_approximate_span_is_the_headers(tmp_path, name):
    """Approximate mode counts frame i from the header's start: its span is [start, start + count / fps), the
    header's own values (ffprobe's), and exactly what that mode accepts."""
    path = _make(tmp_path, name)
    m = video_metadata(path, seek_mode="approximate")
    start = header_start(path)
    assert m.begin_stream_seconds == pytest.approx(start, abs=1e-6)
    assert m.end_stream_seconds == pytest.approx(start + m.num_frames / m.average_fps, abs=1e-6)
    got = decode_video_frames(path, seconds=[m.begin_stream_seconds, m.end_stream_seconds - 1e-6],
                              seek_mode="approximate")
    by_index = decode_video_frames(path, indices=[0, m.num_frames - 1], seek_mode="approximate")
    assert md5s(got) == md5s(by_index)  # frames 0 and n - 1
    for t in (m.begin_stream_seconds - 1e-4, m.end_stream_seconds):
        with pytest.raises(IndexError, match="outside the stream's"):
            decode_video_frames(path, seconds=[t], seek_mode="approximate")
    with pytest.raises(ValueError, match='expected seek_mode "exact" or "approximate", got "fast"'):
        video_metadata(path, seek_mode="fast")


def test_timestamps_that_restart_have_no_span():
    """Two recordings joined (the timestamps restart): no timestamp names a frame, so there is no span, and
    seconds= raises DecodeError."""
    path = vm.make_joined_ts()
    m = video_metadata(path)
    assert (m.begin_stream_seconds, m.end_stream_seconds) == (None, None)
    with pytest.raises(spdl_torch.DecodeError, match="timestamps do not increase"):
        decode_video_frames(path, seconds=[m.begin_stream_seconds_from_header])


def test_times_in_errors_are_seconds_in_a_readable_form(tmp_path):
    """Every time a video message prints has its unit, to the microsecond with trailing zeros dropped, or six
    significant digits when huge or tiny: 1e300 was a 63-digit number cut short, with no unit."""
    path = _make(tmp_path, "avi_mpeg4_bframes")
    for t, text in [(1e300, r"1e\+300 s"), (float("nan"), "nan s"), (-1e-7, r"-1e-07 s"), (1e9 + 0.5, r"1e\+09 s"),
                    (123.4567891, r"123\.456789 s")]:
        for mode in ("exact", "approximate"):
            begin = r"0\.04 s, 0\.44 s" if mode == "exact" else r"0 s, 0\.4 s"
            with pytest.raises(IndexError, match=rf"^decode_video_frames: timestamp {text} is outside the stream's "
                                                 rf"\[{begin}\)"):
                decode_video_frames(path, seconds=[t], seek_mode=mode)
    with pytest.raises(ValueError, match=r"expected frame_interval >= 0 seconds \(0: by index\), got inf s$"):
        decode_video_clips([path], num_frames_per_clip=2, height=8, width=8, seconds_between_frames=float("inf"))
