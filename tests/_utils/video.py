"""Synthetic videos made with the ffmpeg CLI (lavfi testsrc2 with the frame number drawn) and the CLI's own
decode of any video as the reference: raw rgb24 frames in presentation order (``-fps_mode passthrough``:
no frame duplicated or dropped) and ffprobe's frame count and timestamps.

The files are made once per test session in one temporary folder (``make_video`` caches by name)."""

from __future__ import annotations

import functools
import json
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pytest

FFMPEG = shutil.which("ffmpeg")
FFPROBE = shutil.which("ffprobe")

# name -> (lavfi source, encoder arguments, container suffix, extra filter). Small: 64x48 .. 160x120, <= 60 frames.
_TESTSRC = "testsrc2=size={w}x{h}:rate={rate}:duration={dur},drawtext=text=%{{n}}:fontsize=20:x=2:y=2:fontcolor=white"
SPECS = {
    # H.264 with B-frames, GOP 12, 30 frames
    "h264_bframes": dict(w=64, h=48, rate=25, dur=1.2, args="-c:v libx264 -preset ultrafast -bf 3 -g 12 -pix_fmt yuv420p", ext="mp4"),
    "h264_gop1": dict(w=64, h=48, rate=25, dur=1.0, args="-c:v libx264 -preset ultrafast -g 1 -pix_fmt yuv420p", ext="mp4"),
    "h264_gop250": dict(w=160, h=120, rate=30, dur=2.0, args="-c:v libx264 -preset ultrafast -bf 2 -g 250 -pix_fmt yuv420p", ext="mkv"),
    "h264_10fps": dict(w=64, h=48, rate=10, dur=3.0, args="-c:v libx264 -preset ultrafast -bf 2 -g 12 -pix_fmt yuv420p", ext="mp4"),
    # odd width and height with 4:2:0 (x264 needs even sizes; VP9 does not)
    "vp9_odd": dict(w=65, h=47, rate=25, dur=1.0, args="-c:v libvpx-vp9 -deadline realtime -cpu-used 8 -g 12 -pix_fmt yuv420p", ext="webm"),
    "h264_bt709": dict(w=64, h=48, rate=25, dur=1.0, args="-c:v libx264 -preset ultrafast -g 12 -pix_fmt yuv420p -colorspace bt709 -color_primaries bt709 -color_trc bt709", ext="mp4"),
    "h264_10bit": dict(w=64, h=48, rate=25, dur=1.0, args="-c:v libx264 -preset ultrafast -g 12 -pix_fmt yuv420p10le", ext="mkv"),
    "h264_444": dict(w=64, h=48, rate=25, dur=1.0, args="-c:v libx264 -preset ultrafast -g 12 -pix_fmt yuv444p", ext="mp4"),
    "h264_rot90": dict(w=64, h=48, rate=25, dur=1.0, args="-c:v libx264 -preset ultrafast -g 12 -pix_fmt yuv420p", ext="mp4", rotate=90),
    "h264_rot180": dict(w=64, h=48, rate=25, dur=1.0, args="-c:v libx264 -preset ultrafast -g 12 -pix_fmt yuv420p", ext="mp4", rotate=180),
    "h264_rot270": dict(w=64, h=48, rate=25, dur=1.0, args="-c:v libx264 -preset ultrafast -g 12 -pix_fmt yuv420p", ext="mp4", rotate=270),
    # variable frame rate: frame n at (n + (n//4)^2/8) / 25 s
    "h264_vfr": dict(w=64, h=48, rate=25, dur=1.6, args="-c:v libx264 -preset ultrafast -bf 2 -g 10 -pix_fmt yuv420p -fps_mode passthrough",
                     ext="mkv", vf="setpts='(N+floor(N/4)*floor(N/4)/8)/25/TB'"),
    "hevc": dict(w=64, h=48, rate=25, dur=1.2, args="-c:v libx265 -preset ultrafast -x265-params log-level=none:bframes=3:keyint=12 -pix_fmt yuv420p", ext="mp4"),
    "vp9": dict(w=64, h=48, rate=25, dur=1.0, args="-c:v libvpx-vp9 -deadline realtime -cpu-used 8 -g 12 -pix_fmt yuv420p", ext="webm"),
    "mpeg4": dict(w=64, h=48, rate=25, dur=1.0, args="-c:v mpeg4 -bf 2 -g 12 -q:v 4", ext="avi"),
    "mjpeg": dict(w=64, h=48, rate=25, dur=0.4, args="-c:v mjpeg -q:v 3", ext="avi"),
}


def require_ffmpeg() -> None:
    if FFMPEG is None or FFPROBE is None:
        pytest.skip("the ffmpeg / ffprobe CLI is not installed (apt-get install ffmpeg)")


@functools.cache
def _folder() -> Path:
    return Path(tempfile.mkdtemp(prefix="spdl_torch_video_"))


@functools.cache
def make_video(name: str) -> Path:
    """The synthetic video ``name`` of :data:`SPECS` (made on first use, then cached for the test run)."""
    require_ffmpeg()
    s = SPECS[name]
    out = _folder() / f"{name}.{s['ext']}"
    src = _TESTSRC.format(**s)
    if "vf" in s:
        src += "," + s["vf"]
    cmd = [FFMPEG, "-v", "error", "-y", "-f", "lavfi", "-i", src, *s["args"].split(), str(out)]
    subprocess.run(cmd, check=True, capture_output=True)
    if "rotate" in s:  # the display matrix: written by the mp4 muxer on a stream copy (ffmpeg 5.1)
        rotated = out.with_name(f"{name}_rotated.{s['ext']}")
        subprocess.run([FFMPEG, "-v", "error", "-y", "-i", str(out), "-c", "copy", "-metadata:s:v:0",
                        f"rotate={s['rotate']}", str(rotated)], check=True, capture_output=True)
        return rotated
    return out


def _run(*args: str) -> None:
    subprocess.run([FFMPEG, "-v", "error", "-y", *args], check=True, capture_output=True)


def _continue_ts(first: bytes, second: bytes) -> bytes:
    """``second``'s TS packets with their continuity counters continuing ``first``'s, per PID (as one
    encoder restarting its clock writes them; ``cat`` alone makes the demuxer flag the packet at the join
    corrupt)."""
    def counters(data: bytes):
        for at in range(0, len(data), 188):
            assert data[at] == 0x47, "expected 188-byte TS packets"
            yield at, ((data[at + 1] & 0x1F) << 8) | data[at + 2], data[at + 3]

    last = {pid: b & 0x0F for _, pid, b in counters(first) if b & 0x10}
    out, shift = bytearray(second), {}
    for at, pid, b in counters(second):
        if pid in last and pid not in shift and b & 0x10:
            shift[pid] = (last[pid] + 1 - (b & 0x0F)) % 16
        if pid in shift:
            out[at + 3] = (b & 0xF0) | (((b & 0x0F) + shift[pid]) % 16)
    return bytes(out)


@functools.cache
def make_joined_ts() -> Path:
    """Two H.264 (B-frames) MPEG-TS recordings of 30 frames joined into one stream: the timestamps restart
    at frame 30 (every pts repeats); the second one is negated, so that no frame equals another."""
    require_ffmpeg()
    src = _TESTSRC.format(w=64, h=48, rate=25, dur=1.2)
    parts = []
    for k, vf in enumerate(("", ",negate")):
        part = _folder() / f"joined_part{k}.ts"
        _run("-f", "lavfi", "-i", src + vf, *SPECS["h264_bframes"]["args"].split(), str(part))
        parts.append(part.read_bytes())
    out = _folder() / "joined.ts"
    out.write_bytes(parts[0] + _continue_ts(*parts))
    return out


@functools.cache
def _mp4_gop12() -> Path:
    """30 frames of H.264 without B-frames, GOP 12, in MP4 (an edit list of the whole track)."""
    require_ffmpeg()
    out = _folder() / "gop12_nob.mp4"
    _run("-f", "lavfi", "-i", _TESTSRC.format(w=64, h=48, rate=25, dur=1.2), "-c:v", "libx264", "-preset",
         "ultrafast", "-bf", "0", "-g", "12", "-pix_fmt", "yuv420p", str(out))
    return out


@functools.cache
def make_mp4_cut_mid_gop() -> Path:
    """An MP4 stream-copied from 0.3 s of a GOP-12 H.264 file (``ffmpeg -ss 0.3 -c copy``): its first 8
    packets, the key frame among them, lie before the edit list's start and are flagged discard (decoded
    as references, never shown): 22 of its 30 packets are frames."""
    out = _folder() / "cut_mid_gop.mp4"
    _run("-ss", "0.3", "-i", str(_mp4_gop12()), "-c", "copy", str(out))
    return out


@functools.cache
def make_mp4_short_edit() -> Path:
    """A 30-frame MP4 whose edit list ends one frame early (its segment duration cut by 40 ms): the demuxer
    flags the last packet discard, and the CLI shows 29 frames."""
    import struct

    data = bytearray(_mp4_gop12().read_bytes())
    at, mvhd = data.find(b"elst"), data.find(b"mvhd")
    assert at > 0 and data[at + 4] == 0 and data[mvhd + 4] == 0, "expected version-0 boxes (32-bit fields)"
    (duration,) = struct.unpack(">I", data[at + 12:at + 16])  # entry 0's segment duration (movie time scale)
    (scale,) = struct.unpack(">I", data[mvhd + 16:mvhd + 20])
    data[at + 12:at + 16] = struct.pack(">I", duration - scale * 40 // 1000)
    out = _folder() / "short_edit.mp4"
    out.write_bytes(bytes(data))
    return out


def make_audio_only(folder: Path) -> Path:
    require_ffmpeg()
    out = folder / "audio_only.m4a"
    subprocess.run([FFMPEG, "-v", "error", "-y", "-f", "lavfi", "-i", "sine=frequency=440:duration=0.5", "-c:a", "aac",
                    str(out)], check=True, capture_output=True)
    return out


@functools.cache
def probe(path: Path) -> dict:
    """ffprobe's view of the first video stream: width, height, nb_read_frames (``-count_frames``) and
    every frame's pts in seconds (``-show_frames``), in presentation order."""
    require_ffmpeg()
    out = subprocess.run([FFPROBE, "-v", "error", "-select_streams", "v:0", "-count_frames", "-show_entries",
                          "stream=width,height,nb_read_frames:frame=pts_time,best_effort_timestamp_time", "-of", "json",
                          str(path)], check=True, capture_output=True, text=True).stdout
    info = json.loads(out)
    times = []
    for f in info.get("frames", []):
        t = f.get("pts_time", f.get("best_effort_timestamp_time"))
        times.append(float(t) if t not in (None, "N/A") else float("nan"))
    st = info["streams"][0]
    return {"width": int(st["width"]), "height": int(st["height"]), "count": int(st["nb_read_frames"]),
            "pts": times}


@functools.cache
def cli_frames(path: Path, max_frames: int | None = None) -> np.ndarray:
    """The CLI's decode of the first video stream: uint8 [N, H, W, 3] rgb24, every frame in presentation
    order (autorotate applied, as by default)."""
    require_ffmpeg()
    cmd = [FFMPEG, "-v", "error", "-i", str(path), "-map", "0:v:0", "-fps_mode", "passthrough"]
    if max_frames is not None:
        cmd += ["-frames:v", str(max_frames)]
    cmd += ["-f", "rawvideo", "-pix_fmt", "rgb24", "-"]
    raw = subprocess.run(cmd, check=True, capture_output=True).stdout
    h, w = _display_size(path)
    return np.frombuffer(raw, dtype=np.uint8).reshape(-1, h, w, 3)


def _display_size(path: Path) -> tuple[int, int]:
    """(height, width) after autorotation: the first frame's, from a one-frame probe through the CLI's chain."""
    size = subprocess.run([FFMPEG, "-hide_banner", "-v", "info", "-i", str(path), "-map", "0:v:0", "-frames:v", "1", "-vf",
                           "showinfo", "-f", "null", "-"], capture_output=True, text=True).stderr
    import re

    m = re.search(r" s:(\d+)x(\d+) ", size)
    return int(m.group(2)), int(m.group(1))


def cli_frame_chunks(path: Path, max_bytes: int = 1 << 27):
    """:func:`cli_frames` of a whole video in chunks of at most ``max_bytes`` (at least one frame each),
    streamed from the CLI: uint8 [n, H, W, 3] arrays, in order."""
    require_ffmpeg()
    h, w = _display_size(path)
    frame = h * w * 3
    per_chunk = max(1, max_bytes // frame)
    cmd = [FFMPEG, "-v", "error", "-i", str(path), "-map", "0:v:0", "-fps_mode", "passthrough", "-f", "rawvideo",
           "-pix_fmt", "rgb24", "-"]
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL) as proc:
        while True:
            data = proc.stdout.read(per_chunk * frame)
            if len(data) % frame:
                raise AssertionError(f"the CLI wrote a partial frame of {path}")
            if data:
                yield np.frombuffer(data, dtype=np.uint8).reshape(-1, h, w, 3)
            if len(data) < per_chunk * frame:
                break
    if proc.returncode != 0:
        raise AssertionError(f"the CLI failed on {path} (exit status {proc.returncode})")


def key_frame_indices(path: Path) -> list[int]:
    """The presentation indices of the frames the container marks as key frames (ffprobe's packet flags ``K``,
    matched to the frames by pts), first video stream."""
    require_ffmpeg()
    out = subprocess.run([FFPROBE, "-v", "error", "-select_streams", "v:0", "-show_entries", "packet=pts,flags",
                          "-of", "json", str(path)], check=True, capture_output=True, text=True).stdout
    packets = [p for p in json.loads(out).get("packets", []) if "pts" in p]
    order = sorted(int(p["pts"]) for p in packets)
    index = {pts: i for i, pts in enumerate(order)}
    return sorted(index[int(p["pts"])] for p in packets if "K" in p.get("flags", ""))
