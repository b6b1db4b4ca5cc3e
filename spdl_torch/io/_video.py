"""Video: ``video_metadata`` and ``decode_video_frames`` (frames by index or timestamp), their fake kernels,
and the source handling the video functions share."""

from __future__ import annotations

import fractions
import math
import os
import warnings
from collections.abc import Sequence

import torch

from .._errors import translate
from .._integers import as_integer, is_bool
from .._limits import DEFAULTS, default
from ._image import default_max_pixels
from ._results import VideoFrames, VideoStreamMetadata

__all__ = ["decode_video_frames", "video_metadata"]

# The int64 range of the ops' integer arguments.
_INT64 = (-(1 << 63), (1 << 63) - 1)

warnings.filterwarnings("ignore", message="The given buffer is not writable", module=__name__)


def video_bytes(src, op: str) -> tuple[torch.Tensor, str | None]:
    """``src`` (a path, bytes or a 1-D uint8 tensor) as a uint8 tensor, and its path (``None`` otherwise).
    Paths are read without the GIL (``read_file``); ``OSError`` names the path."""
    if isinstance(src, torch.Tensor):
        return src, None
    if isinstance(src, (bytes, bytearray, memoryview)):
        return (torch.frombuffer(src, dtype=torch.uint8) if len(src) else torch.empty(0, dtype=torch.uint8)), None
    if isinstance(src, (str, os.PathLike)):
        path = os.fspath(src)
        try:
            return torch.ops.spdl_torch.read_file(path), path
        except RuntimeError as e:
            raise translate(e, None) from None  # the message names the path
    raise TypeError(f"{op}: expected a path, bytes or a 1-D uint8 tensor, got {type(src).__name__}")


def call_video_op(fn, path: str | None, *args, **kwargs):
    """Runs a video op; a tagged error becomes ``DecodeError`` / ``OSError`` named by ``path``, and a
    ``ValueError`` (an argument the file's size makes invalid, e.g. its output over ``max_output_bytes``)
    names ``path`` too."""
    try:
        return fn(*args, **kwargs)
    except ValueError as e:
        if path is None:
            raise
        raise ValueError(f"{path}: {e}") from None
    except RuntimeError as e:
        raise translate(e, path, path=path) from None


def default_max_frames() -> int:
    """The limit of ``max_frames=None``: ``spdl_torch.io.limits.video_frames`` as the user set it, read at each call."""
    return default("video_frames")


def default_max_output_bytes() -> int:
    """The limit of ``max_output_bytes=None``: ``spdl_torch.io.limits.video_output_bytes`` as the user set it,
    read at each call."""
    return default("video_output_bytes")


def frame_indices(op: str, indices) -> list[int]:
    """``indices`` as ints: Python, NumPy and torch integers. TypeError for floats, booleans and other
    types (never truncated); IndexError for an index outside int64 (no stream has that many frames)."""
    out = []
    for k, i in enumerate(indices):
        value = as_integer(i)
        if value is None:
            kind = "a bool" if is_bool(i) else type(i).__name__
            raise TypeError(f"{op}: expected integer frame indices, got {i!r} ({kind}) at position {k}")
        if not _INT64[0] <= value <= _INT64[1]:
            raise IndexError(f"{op}: frame index {value} is out of range (at position {k}): valid indices are "
                             "0 .. num_frames - 1")
        out.append(value)
    return out


def frame_timestamps(op: str, timestamps) -> list[float]:
    """``timestamps`` as floats (ints, floats, NumPy and torch numbers); TypeError for booleans and strings."""
    out = []
    for k, t in enumerate(timestamps):
        if is_bool(t) or isinstance(t, (str, bytes)):
            raise TypeError(f"{op}: expected timestamps in seconds, got {t!r} ({type(t).__name__}) at position {k}")
        try:
            out.append(float(t))
        except (TypeError, ValueError):
            raise TypeError(f"{op}: expected timestamps in seconds, got {t!r} ({type(t).__name__}) "
                            f"at position {k}") from None
    return out


def stream_arg(op: str, stream) -> int:
    """The ``stream_index`` argument: an int >= 0, or -1 / None for FFmpeg's best video stream."""
    if stream is None:
        return -1
    value = as_integer(stream)
    if value is None:
        raise TypeError(f"{op}: expected an int stream_index (or None), got {stream!r} ({type(stream).__name__})")
    if not -1 <= value < (1 << 31):
        raise ValueError(f"{op}: expected stream_index >= 0, or -1 / None for FFmpeg's best video stream, got {value}")
    return value


def limit(name: str, value: int | None, default: int) -> int:
    """A limit argument: ``default`` for None; an int (clamped to int64: a larger limit is none)."""
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"expected an int or None {name}, got {value!r} ({type(value).__name__})")
    return min(max(value, _INT64[0]), _INT64[1])


@torch.library.register_fake("spdl_torch::video_metadata")
def _video_metadata_fake(data, *, stream_index=-1, count_frames=False, seek_mode="exact"):
    ctx = torch.library.get_ctx()
    keys = data.new_empty((ctx.new_dynamic_size(),), dtype=torch.float64)
    return (data.new_empty((9,), dtype=torch.int64), data.new_empty((5,), dtype=torch.float64), keys, "", "", "")


def video_metadata(src, *, stream_index: int | None = -1, count_frames: bool = False,
                   seek_mode: str = "exact") -> VideoStreamMetadata:
    """The metadata of ``src``'s video stream, without decoding frames (except for streams whose packets
    carry no usable timestamps, indexed by one decode).

    Args:
        src: a path, bytes, or a 1-D uint8 tensor of the encoded file.
        stream_index: the stream index (-1 or ``None``: FFmpeg's best video stream; torchcodec's name).
        count_frames: count the frames from the packets (``num_frames_from_content``) even when the header
            has a count (the count :func:`decode_video_frames` addresses, equal to ``ffprobe -count_frames``; the
            packets are read anyway with ``seek_mode="exact"``, and decoded only for streams without usable
            timestamps).
        seek_mode: the mode whose timestamp span ``begin_stream_seconds`` / ``end_stream_seconds`` give
            (as torchcodec's ``VideoDecoder(seek_mode=...).metadata``): ``"exact"`` (the default: reads every
            packet's pts, as :func:`decode_video_frames` does) or ``"approximate"`` (the header only).

    Returns:
        :class:`VideoStreamMetadata`.

    Raises:
        spdl_torch.DecodeError: not a readable video (no video stream, audio only, empty, corrupt
            header); the message starts with the path when ``src`` is one and carries FFmpeg's reason.
        OSError: a path cannot be read.
        ValueError: ``stream_index`` below -1, an unknown ``seek_mode``; TypeError: a ``stream_index`` that
            is no int.
    """
    stream = stream_arg("video_metadata", stream_index)
    data, path = video_bytes(src, "video_metadata")
    ints, floats, keys, container, codec, pix = call_video_op(torch.ops.spdl_torch.video_metadata, path, data,
                                                              stream_index=stream, count_frames=count_frames,
                                                              seek_mode=seek_mode)
    (index, w, h, rot, tb_num, tb_den, from_header, from_content, bit_rate) = ints.tolist()
    start, duration, fps, begin, end = floats.tolist()
    swap = rot % 180 != 0
    return VideoStreamMetadata(
        num_frames_from_header=from_header if from_header >= 0 else None,
        num_frames_from_content=from_content if from_content >= 0 else None, average_fps=fps if fps > 0 else None,
        duration_seconds=duration if duration >= 0 else None, begin_stream_seconds_from_header=start,
        begin_stream_seconds=None if math.isnan(begin) else begin, end_stream_seconds=None if math.isnan(end) else end,
        width=h if swap else w,
        height=w if swap else h, coded_width=w, coded_height=h, rotation=rot, codec=codec, pixel_format=pix,
        container=container, time_base=fractions.Fraction(tb_num, tb_den) if tb_den else fractions.Fraction(0),
        bit_rate=bit_rate if bit_rate > 0 else None, key_frame_seconds=keys.tolist(), stream_index=index)


@torch.library.register_fake("spdl_torch::decode_video_frames")
def _decode_video_frames_fake(data, *, indices=None, seconds=None, seek_mode="exact", stream_index=-1, num_ffmpeg_threads=1,
                              strict=True, apply_rotation=True, skip_nonref=True, max_pixels=DEFAULTS["image_pixels"],
                              max_frames=DEFAULTS["video_frames"], max_output_bytes=DEFAULTS["video_output_bytes"]):
    torch._check(data.dtype == torch.uint8, lambda: f"decode_video_frames: expected uint8 data, got {data.dtype}")
    torch._check(data.dim() == 1, lambda: f"decode_video_frames: expected 1-D data, got {data.dim()} dimensions")
    n = len(indices) if indices is not None else len(seconds)
    ctx = torch.library.get_ctx()
    height, width = ctx.new_dynamic_size(), ctx.new_dynamic_size()
    frames = data.new_empty((n, height, width, 3)).permute(0, 3, 1, 2)
    return frames, data.new_empty((n,), dtype=torch.float64), data.new_empty((n,), dtype=torch.bool)


def decode_video_frames(
    src,
    *,
    indices: Sequence[int] | None = None,
    seconds: Sequence[float] | None = None,
    seek_mode: str = "exact",
    stream_index: int | None = -1,
    num_ffmpeg_threads: int = 1,
    strict: bool = True,
    apply_rotation: bool = True,
    skip_nonref: bool = True,
    max_pixels: int | None = None,
    max_frames: int | None = None,
    max_output_bytes: int | None = None,
) -> VideoFrames:
    """Decodes frames of a video by index or by timestamp, in the requested order, without the GIL.

    Frame ``i`` is the ``i``-th frame in presentation order (the order ``ffmpeg -fps_mode passthrough``
    writes them); the frame at timestamp ``t`` is the frame displayed at ``t``: the last frame whose pts
    ``<= t`` (``pts_i <= t < pts_{i+1}``). A stream whose timestamps do not increase (they repeat or
    restart, e.g. two recordings joined) has no presentation order: frame ``i`` is then the ``i``-th frame
    the decoder outputs, as the CLI writes them, ``pts_seconds`` are the frames' own (restarting)
    timestamps, and ``seconds=`` raises ``DecodeError``. Requests may come in any order and repeat;
    each gives the frame a linear decode gives. The reader seeks to the key frame at or before each group of wanted frames and
    decodes forward, converting (YUV -> RGB, as ``ffmpeg -pix_fmt rgb24``) only the wanted frames; with
    ``skip_nonref`` the decoder skips non-reference frames nobody asked for (H.264, HEVC; identical output).

    Args:
        src: a path, bytes, or a 1-D uint8 tensor of the encoded file.
        indices: frame indices in ``[0, num_frames)`` (ints: Python, NumPy or torch integers); or
        seconds: times in seconds (pts seconds of the stream: the ``pts_seconds`` this returns), as
            torchcodec's ``get_frames_played_at(seconds)``.
        seek_mode: ``"exact"`` (the default: every packet's pts is read once, no decoding, so indices and
            timestamps are exact for B-frames and variable frame rates) or ``"approximate"`` (frame ``i``
            at ``start + i / average_fps``: no scan, exact only for constant frame rates).
        stream_index: the video stream (-1 or ``None``: FFmpeg's best).
        num_ffmpeg_threads: FFmpeg decoder threads (default 1, as torchcodec's; 0: FFmpeg picks).
        strict: raise on corrupt packets or frames (True), or mark them False in ``ok`` (False; a frame the
            decoder cannot produce is zero-filled, never replaced by a neighbour).
        apply_rotation: rotate frames as the stream's display matrix says (as the ffmpeg CLI's autorotate).
        skip_nonref: let the decoder skip non-reference frames that are not wanted.
        max_pixels: per-frame pixel limit, checked from the header before any memory is allocated
            (``None``: :data:`spdl_torch.io.limits.image_pixels`; <= 0: none).
        max_frames: the most frames one call may request (``None``: :data:`spdl_torch.io.limits.video_frames`; <= 0: none).
        max_output_bytes: the most bytes of the returned frames, N x H x W x 3, checked from the header
            before any frame memory is allocated (``None``: :data:`spdl_torch.io.limits.video_output_bytes`, 16 GiB; <= 0: none).

    Returns:
        :class:`VideoFrames`: ``data`` uint8 Tensor[N, 3, H, W] (RGB, H x W the displayed size),
        ``pts_seconds`` float64 Tensor[N], ``ok`` bool Tensor[N].

    Raises:
        IndexError: an index outside ``[0, num_frames)`` or a timestamp outside the stream's displayed span,
            ``[begin_stream_seconds, end_stream_seconds)`` of :func:`video_metadata` with the same
            ``seek_mode`` (the message gives it; a time before the first frame's pts raises, as torchcodec's
            ``get_frames_played_at``, also where the header's start precedes it).
        spdl_torch.DecodeError: unreadable, truncated or corrupt stream (``strict=True``), no video stream,
            a frame over ``max_pixels``, timestamps asked of a stream whose timestamps do not increase; the
            message starts with the path when ``src`` is one and carries FFmpeg's reason.
        OSError: a path cannot be read.
        TypeError: an index that is no integer (a float, a bool), a timestamp that is no number, a
            ``stream`` that is no int.
        ValueError: both or neither of ``indices`` / ``seconds``, more than ``max_frames`` frames, an
            output over ``max_output_bytes`` (the message starts with the path), an unknown ``seek_mode``,
            ``num_ffmpeg_threads < 0``, ``stream_index < -1``.
    """
    op = "decode_video_frames"
    if (indices is None) == (seconds is None):
        raise ValueError(f"{op}: expected exactly one of indices= and seconds=")
    if indices is not None:
        indices = frame_indices(op, indices)
    seconds = None if seconds is None else frame_timestamps(op, seconds)
    stream_index = stream_arg(op, stream_index)
    data, path = video_bytes(src, op)
    frames, pts, corrupt = call_video_op(
        torch.ops.spdl_torch.decode_video_frames, path, data, indices=indices, seconds=seconds,
        seek_mode=seek_mode, stream_index=stream_index, num_ffmpeg_threads=num_ffmpeg_threads, strict=strict, apply_rotation=apply_rotation,
        skip_nonref=skip_nonref, max_pixels=default_max_pixels() if max_pixels is None else max_pixels,
        max_frames=limit("max_frames", max_frames, default_max_frames()),
        max_output_bytes=limit("max_output_bytes", max_output_bytes, default_max_output_bytes()))
    return VideoFrames(frames, pts, ~corrupt)
