"""``decode_video_clips``: the batch op for training clips (N clips of T frames per video, resized/cropped
per clip, written straight into one batch tensor) and its fake kernel."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from .._batch_order import before_batch_op
from .._errors import name_sample
from ..errors import DecodeError
from ._image import MAX_IMAGE_PIXELS, default_max_pixels
from ._results import VideoClips
from ._video import (MAX_VIDEO_FRAMES, MAX_VIDEO_OUTPUT_BYTES, call_video_op, default_max_frames,
                     default_max_output_bytes, limit, video_bytes)

__all__ = ["decode_video_clips"]

_DTYPES = (torch.uint8, torch.float32, torch.bfloat16)


@torch.library.register_fake("spdl_torch::decode_video_clips")
def _decode_video_clips_fake(data, *, clip_len, clips_per_video=1, stride=1, frame_interval=0.0, sampling="uniform",
                             height, width, geometry="eval", resize_shorter=0, scale=(0.08, 1.0),
                             ratio=(0.75, 4.0 / 3.0), hflip_prob=0.0, seeds=None, interpolation="bilinear", dtype=None,
                             mean=None, std=None, layout="NTCHW", pin_memory=False, strict=True, seek_mode="exact",
                             threads=1, apply_rotation=True, skip_nonref=True, max_pixels=MAX_IMAGE_PIXELS,
                             max_frames=MAX_VIDEO_FRAMES, max_output_bytes=MAX_VIDEO_OUTPUT_BYTES):
    for i, d in enumerate(data):
        torch._check(d.dtype == torch.uint8, lambda: f"decode_video_clips: expected uint8 data, got {d.dtype} (sample {i})")
        torch._check(d.dim() == 1, lambda: f"decode_video_clips: expected 1-D data (sample {i})")
    b, dev = len(data), data[0].device
    shape = (b, clips_per_video, clip_len, 3, height, width) if layout == "NTCHW" else \
        (b, clips_per_video, 3, clip_len, height, width)
    out_dtype = torch.uint8 if dtype is None else dtype
    return (torch.empty(shape, dtype=out_dtype, device=dev), torch.empty((b,), dtype=torch.bool, device=dev),
            torch.empty((b, clips_per_video, clip_len), dtype=torch.int64, device=dev))


def decode_video_clips(
    srcs: Sequence,
    *,
    clip_len: int,
    height: int,
    width: int,
    clips_per_video: int = 1,
    stride: int = 1,
    frame_interval: float = 0.0,
    sampling: str = "uniform",
    geometry: str = "eval",
    resize_shorter: int = 0,
    scale: Sequence[float] = (0.08, 1.0),
    ratio: Sequence[float] = (3.0 / 4.0, 4.0 / 3.0),
    hflip_prob: float = 0.0,
    seeds: torch.Tensor | Sequence[int] | None = None,
    interpolation: str = "bilinear",
    dtype: torch.dtype = torch.uint8,
    mean: Sequence[float] | None = None,
    std: Sequence[float] | None = None,
    dimension_order: str = "NTCHW",
    pin_memory: bool = False,
    strict: bool = True,
    seek_mode: str = "exact",
    num_ffmpeg_threads: int = 1,
    apply_rotation: bool = True,
    skip_nonref: bool = True,
    max_pixels: int | None = None,
    max_frames: int | None = None,
    max_output_bytes: int | None = None,
) -> VideoClips:
    """Decodes ``clips_per_video`` clips of ``clip_len`` frames from each of B videos into one batch, in one
    native call without the GIL (the videos spread over the shared native pool, largest frames x pixels
    first).

    Clip positions (by index, ``frame_interval == 0``): clip frames ``s, s + stride, ..., s + (T - 1) * stride``;
    with ``span = (T - 1) * stride + 1`` and F frames, ``sampling="uniform"`` starts clip n at
    ``round(n * (F - span) / (N - 1))`` (N == 1: ``(F - span) // 2``), ``"random"`` draws each start from
    ``[0, F - span]`` with the video's seed. By time (``frame_interval > 0`` seconds): clip frames are the
    frames displayed at ``t0, t0 + frame_interval, ...``, ``t0`` spread (or drawn) over the stream's span.
    A video shorter than a clip repeats its last frame. Then each clip draws one geometry (the same crop box
    and flip for all its frames), as :func:`decode_images` draws one per image: ``geometry="eval"``
    (``Resize(resize_shorter)`` + ``CenterCrop((height, width))``), ``"resize"`` or ``"train"``
    (``RandomResizedCrop``), then a horizontal flip with ``hflip_prob``. Frames are converted from YUV
    exactly as ``ffmpeg -pix_fmt rgb24`` and resized with the antialiased resize of :func:`decode_images`
    (within 1 level of torchvision's ``resize(antialias=True)`` of the CLI's frames, bilinear).

    Randomness: video b draws from SplitMix64 started at ``seeds[b]``: the clip starts first, then one seed
    per clip for its geometry; nothing depends on threads or completion order.

    Args:
        srcs: B >= 1 videos: paths, bytes or 1-D uint8 tensors.
        clip_len: T >= 1 frames per clip.
        height, width: output frame size (>= 1).
        clips_per_video: N >= 1 clips per video.
        stride: frames between a clip's frames (>= 1), by index.
        frame_interval: > 0: seconds between a clip's frames (by time; ``stride`` is then unused).
        sampling: ``"uniform"`` or ``"random"`` (needs ``seeds``).
        geometry, resize_shorter, scale, ratio, hflip_prob, interpolation, dtype, mean, std: as
            :func:`spdl_torch.io.decode_images`, per clip.
        seeds: int64 per video (tensor [B] or ints); required for random sampling, ``"train"`` or flips.
        dimension_order: ``"NTCHW"`` (Tensor[B, N, T, 3, H, W]) or ``"NCTHW"`` (Tensor[B, N, 3, T, H, W]).
        pin_memory: allocate the batch in pinned memory (needs a CUDA runtime).
        strict: raise for the first bad video (True), or zero-fill it and report it in ``ok`` (False).
        seek_mode, num_ffmpeg_threads, apply_rotation, skip_nonref: as :func:`decode_video_frames`.
        max_pixels: per-frame pixel limit (``None``: :data:`spdl_torch.io.MAX_IMAGE_PIXELS`).
        max_frames: the most frames per video, N * T (``None``: :data:`spdl_torch.io.MAX_VIDEO_FRAMES`).
        max_output_bytes: the most bytes of the batch, B x N x T x 3 x H x W x the element size, checked
            before anything is read or allocated (``None``: :data:`spdl_torch.io.MAX_VIDEO_OUTPUT_BYTES`,
            16 GiB; <= 0: none).

    Returns:
        :class:`VideoClips` ``(data, ok, indices)`` whatever ``strict`` is: ``data`` Tensor[B, N, T, 3, H, W]
        (or [B, N, 3, T, H, W]) of ``dtype`` (uint8 0..255; float x / 255, then normalized); ``ok`` bool
        Tensor[B] (False only with ``strict=False``, for a zero-filled video); ``indices`` int64
        Tensor[B, N, T], each clip frame's index (-1 for a failed video).

    Raises:
        spdl_torch.DecodeError: ``strict=True`` and a video is unreadable, truncated or corrupt; the message
            starts with its path (or ``sample <b>``) and carries FFmpeg's reason; ``sample_index`` is b.
        OSError: a path cannot be read.
        TypeError: ``srcs`` is a single video, or a sample of another type.
        ValueError: invalid arguments (sizes, modes, missing seeds, more than ``max_frames`` frames per video,
            a batch over ``max_output_bytes``).
    """
    layout, threads = dimension_order, num_ffmpeg_threads
    if layout not in ("NTCHW", "NCTHW"):
        raise ValueError(f"decode_video_clips: expected dimension_order 'NTCHW' or 'NCTHW', got {dimension_order=}")
    if isinstance(srcs, (str, bytes, bytearray, memoryview, torch.Tensor)) or hasattr(srcs, "__fspath__"):
        raise TypeError(f"decode_video_clips: expected a sequence of videos, got a single {type(srcs).__name__}; "
                        "pass [src] for one video")
    if len(srcs) == 0:
        raise ValueError("decode_video_clips: expected at least one video, got 0")
    if dtype not in _DTYPES:
        raise ValueError(f"decode_video_clips: expected dtype in {_DTYPES}, got {dtype=}")
    pairs = [video_bytes(s, "decode_video_clips") for s in srcs]
    datas, paths = [d for d, _ in pairs], [p for _, p in pairs]
    if seeds is not None and not isinstance(seeds, torch.Tensor):
        seeds = torch.tensor([int(s) for s in seeds], dtype=torch.int64)
    before_batch_op()
    try:
        clips, ok, indices = call_video_op(
            torch.ops.spdl_torch.decode_video_clips, None, datas, clip_len=clip_len, clips_per_video=clips_per_video,
            stride=stride, frame_interval=float(frame_interval), sampling=sampling, height=height, width=width,
            geometry=geometry, resize_shorter=resize_shorter, scale=[float(v) for v in scale],
            ratio=[float(v) for v in ratio], hflip_prob=float(hflip_prob), seeds=seeds, interpolation=interpolation,
            dtype=dtype, mean=None if mean is None else [float(v) for v in mean],
            std=None if std is None else [float(v) for v in std], layout=layout, pin_memory=pin_memory,
            strict=strict, seek_mode=seek_mode, threads=threads, apply_rotation=apply_rotation,
            skip_nonref=skip_nonref, max_pixels=default_max_pixels() if max_pixels is None else max_pixels,
            max_frames=limit("max_frames", max_frames, default_max_frames()),
            max_output_bytes=limit("max_output_bytes", max_output_bytes, default_max_output_bytes()))
    except DecodeError as e:
        raise name_sample(e, paths) from None
    return VideoClips(clips, ok, indices)
