"""``decode_video_clips``: the batch op for training clips (N clips of T frames per video, resized/cropped
per clip, written straight into one batch tensor) and its fake kernel."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from .._batch_order import before_batch_op
from .._errors import DecodeError, name_sample
from .._limits import DEFAULTS
from ._image import default_max_pixels
from ._results import VideoClips
from ._video import call_video_op, default_max_frames, default_max_output_bytes, limit, video_bytes

__all__ = ["decode_video_clips"]

_DTYPES = (torch.uint8, torch.float32, torch.bfloat16)


@torch.library.register_fake("spdl_torch::decode_video_clips")
def _decode_video_clips_fake(data, *, num_frames_per_clip, num_clips=1, num_indices_between_frames=1,
                             seconds_between_frames=0.0, sampling="regular", height, width, geometry="eval",
                             resize_shorter=0, scale=(0.08, 1.0), ratio=(0.75, 4.0 / 3.0), hflip_prob=0.0, seeds=None,
                             interpolation="bilinear", dtype=None, mean=None, std=None, dimension_order="NTCHW",
                             pin_memory=False, strict=True, seek_mode="exact", num_ffmpeg_threads=1,
                             apply_rotation=True, skip_nonref=True, max_pixels=DEFAULTS["image_pixels"],
                             max_frames=DEFAULTS["video_frames"], max_output_bytes=DEFAULTS["video_output_bytes"]):
    for i, d in enumerate(data):
        torch._check(d.dtype == torch.uint8, lambda: f"decode_video_clips: expected uint8 data, got {d.dtype} (sample {i})")
        torch._check(d.dim() == 1, lambda: f"decode_video_clips: expected 1-D data (sample {i})")
    b, dev, n, t = len(data), data[0].device, num_clips, num_frames_per_clip
    shape = (b, n, t, 3, height, width) if dimension_order == "NTCHW" else (b, n, 3, t, height, width)
    out_dtype = torch.uint8 if dtype is None else dtype
    return (torch.empty(shape, dtype=out_dtype, device=dev), torch.empty((b,), dtype=torch.bool, device=dev),
            torch.empty((b, n, t), dtype=torch.int64, device=dev))


def decode_video_clips(
    srcs: Sequence,
    *,
    # clip sampling (torchcodec's samplers' names)
    num_frames_per_clip: int,
    num_clips: int = 1,
    num_indices_between_frames: int = 1,
    seconds_between_frames: float = 0.0,
    sampling: str = "regular",
    seeds: torch.Tensor | Sequence[int] | None = None,
    # the geometry, per clip (decode_images')
    height: int,
    width: int,
    geometry: str = "eval",
    resize_shorter: int = 0,
    scale: Sequence[float] = (0.08, 1.0),
    ratio: Sequence[float] = (3.0 / 4.0, 4.0 / 3.0),
    interpolation: str = "bilinear",
    hflip_prob: float = 0.0,
    # output
    dtype: torch.dtype = torch.uint8,
    mean: Sequence[float] | None = None,
    std: Sequence[float] | None = None,
    dimension_order: str = "NTCHW",
    # the decode (decode_video_frames') and the execution
    seek_mode: str = "exact",
    num_ffmpeg_threads: int = 1,
    apply_rotation: bool = True,
    skip_nonref: bool = True,
    max_pixels: int | None = None,
    max_frames: int | None = None,
    max_output_bytes: int | None = None,
    pin_memory: bool = False,
    strict: bool = True,
) -> VideoClips:
    """Decodes ``num_clips`` clips of ``num_frames_per_clip`` frames from each of B videos into one batch, in one
    native call without the GIL (the videos spread over the shared native pool, largest frames x pixels
    first).

    Clip positions (by index, ``seconds_between_frames == 0``): clip frames ``s, s + k, ..., s + (T - 1) * k``
    (``k = num_indices_between_frames``); with ``span = (T - 1) * k + 1`` and F frames, ``sampling="regular"``
    starts clip n at ``round(n * (F - span) / (N - 1))`` (N == 1: ``(F - span) // 2``), ``"random"`` draws each
    start from ``[0, F - span]`` with the video's seed (torchcodec's ``clips_at_regular_indices`` /
    ``clips_at_random_indices`` concepts). By time (``seconds_between_frames > 0``): clip frames are the frames
    displayed at ``t0, t0 + seconds_between_frames, ...``, ``t0`` spread (or drawn) over the stream's span. A
    video shorter than a clip repeats its last frame. Then each clip draws one geometry (the same crop box and
    flip for all its frames), as :func:`decode_images` draws one per image: ``geometry="eval"``
    (``Resize(resize_shorter)`` + ``CenterCrop((height, width))``), ``"resize"`` or ``"train"``
    (``RandomResizedCrop``), then a horizontal flip with ``hflip_prob``. Frames are converted from YUV
    exactly as ``ffmpeg -pix_fmt rgb24`` and resized with the antialiased resize of :func:`decode_images`
    (within 1 level of torchvision's ``resize(antialias=True)`` of the CLI's frames, bilinear).

    Randomness: video b draws from SplitMix64 started at ``seeds[b]``: the clip starts first, then one seed
    per clip for its geometry; nothing depends on threads or completion order.

    Args:
        srcs: B >= 1 videos: paths, bytes or 1-D uint8 tensors.

        Clip sampling:

        num_frames_per_clip: T >= 1 frames per clip.
        num_clips: N >= 1 clips per video.
        num_indices_between_frames: frames between a clip's frames (>= 1), by index.
        seconds_between_frames: > 0: seconds between a clip's frames (by time;
            ``num_indices_between_frames`` is then unused).
        sampling: ``"regular"`` (evenly spaced starts) or ``"random"`` (needs ``seeds``).
        seeds: int64 per video (tensor [B] or ints); required for random sampling, ``"train"`` or flips.

        The geometry, per clip:

        height, width: output frame size (>= 1).
        geometry, resize_shorter, scale, ratio, interpolation (``"bilinear"`` or ``"bicubic"``), hflip_prob: as
            :func:`spdl_torch.io.decode_images`.

        The output:

        dtype, mean, std: as :func:`spdl_torch.io.decode_images`.
        dimension_order: ``"NTCHW"`` (Tensor[B, N, T, 3, H, W]) or ``"NCTHW"`` (Tensor[B, N, 3, T, H, W]).

        The decode and the execution:

        seek_mode, num_ffmpeg_threads, apply_rotation, skip_nonref: as :func:`decode_video_frames`.
        max_pixels: per-frame pixel limit (``None``: :data:`spdl_torch.io.limits.image_pixels`).
        max_frames: the most frames per video, N * T (``None``: :data:`spdl_torch.io.limits.video_frames`).
        max_output_bytes: the most bytes of the batch, B x N x T x 3 x H x W x the element size, checked
            before anything is read or allocated (``None``: :data:`spdl_torch.io.limits.video_output_bytes`,
            16 GiB; <= 0: none).
        pin_memory: allocate the batch in pinned memory (needs a CUDA runtime).
        strict: raise for the first bad video (True), or zero-fill it and report it in ``ok`` (False).

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
        ValueError: invalid arguments (sizes, sampling, geometry, dimension order, missing seeds, more than
            ``max_frames`` frames per video, a batch over ``max_output_bytes``).
    """
    if dimension_order not in ("NTCHW", "NCTHW"):
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
            torch.ops.spdl_torch.decode_video_clips, None, datas, num_frames_per_clip=num_frames_per_clip,
            num_clips=num_clips, num_indices_between_frames=num_indices_between_frames,
            seconds_between_frames=float(seconds_between_frames), sampling=sampling, seeds=seeds, height=height,
            width=width, geometry=geometry, resize_shorter=resize_shorter, scale=[float(v) for v in scale],
            ratio=[float(v) for v in ratio], interpolation=interpolation, hflip_prob=float(hflip_prob), dtype=dtype,
            mean=None if mean is None else [float(v) for v in mean],
            std=None if std is None else [float(v) for v in std], dimension_order=dimension_order,
            seek_mode=seek_mode, num_ffmpeg_threads=num_ffmpeg_threads, apply_rotation=apply_rotation,
            skip_nonref=skip_nonref, max_pixels=default_max_pixels() if max_pixels is None else max_pixels,
            max_frames=limit("max_frames", max_frames, default_max_frames()),
            max_output_bytes=limit("max_output_bytes", max_output_bytes, default_max_output_bytes()),
            pin_memory=pin_memory, strict=strict)
    except DecodeError as e:
        raise name_sample(e, paths) from None
    return VideoClips(clips, ok, indices)
