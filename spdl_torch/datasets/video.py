"""``VideoClipDataset``: videos as training clips, one native ``decode_video_clips`` call per batch."""

from __future__ import annotations

import math
import os
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch.utils.data import Dataset

from .._errors import name_sample
from .._renamed import renamed_kwargs
from ..errors import DecodeError
from ._collate import register_fused_batch
from ._fused import FusedBatchMixin, _short_repr

__all__ = ["VideoClipDataset"]

# The image plan's arguments decode_video_clips takes (only non-default ones appear in a plan), and the values of
# those it takes only some of. A transform that maps onto anything else (RandomCrop, vertical flips, Grayscale,
# max_size, nearest) runs per clip after the fused part instead of being dropped.
_CLIP_KWARGS = {"geometry", "height", "width", "resize_shorter", "scale", "ratio", "hflip_prob", "interpolation", "dtype",
                "mean", "std"}
_CLIP_VALUES = {"geometry": ("eval", "resize", "train"), "interpolation": ("bilinear", "bicubic")}


def _clip_plan(transform: Callable) -> Any:
    """The fused plan of the longest prefix of ``transform`` that decode_video_clips can run, with the rest of
    the transform as its per-clip remainder; ``None`` when no prefix maps."""
    import dataclasses

    from ..transforms import fuse
    from ..transforms._fuse import _compose, _flatten

    def runnable(plan: Any) -> bool:  # fused augmentations (augment rows) are decode_images' only
        kw = plan.op_kwargs
        return plan.augment is None and set(kw) <= _CLIP_KWARGS and all(kw[k] in v for k, v in _CLIP_VALUES.items() if k in kw)

    plan = fuse(transform)
    if plan is None or runnable(plan):
        return plan
    ts = _flatten(transform)
    for k in range(len(plan.fused) - 1, 0, -1):
        head = fuse(_compose(transform, ts[:k]))
        if head is not None and head.rest is None and runnable(head):
            rest = _compose(transform, ts[k:])
            return dataclasses.replace(head, rest=rest, batched=None, per_sample=rest, unfused=ts[k],
                                       unfused_reason="decode_video_clips does not take this transform's arguments")
    return None


def _describe_plan(plan: Any) -> str:
    """The fused plan as the video op runs it (a plan names decode_images' arguments, which it takes)."""
    if plan is None:
        return "not fused"
    return plan.describe().replace("decode_images(", "decode_video_clips(")


class VideoClipDataset(FusedBatchMixin, Dataset):
    """Videos as clips for video classification: sample ``i`` is ``(clips, label)`` with ``clips`` a
    Tensor[N, T, 3, H, W] (``dimension_order="NCTHW"``: [N, 3, T, H, W]) of ``clips_per_video`` clips of ``clip_len``
    frames, ``stride`` frames apart, from ``paths[i]``.

    The transform is a ``torchvision.transforms.v2`` transform of a clip (uint8 Tensor[T, 3, H, W]; v2 draws
    one set of random parameters per call, so one crop box and flip per clip). Its fusable prefix (Resize +
    CenterCrop, Resize((h, w)), RandomResizedCrop, RandomHorizontalFlip, ToDtype(scale=True), Normalize: see
    :mod:`spdl_torch.transforms`) runs inside one native :func:`spdl_torch.io.decode_video_clips` call per
    batch (``__getitems__``), drawing each clip's parameters from the sample's seed; the rest runs per clip
    in Python. Without a transform, or when the first transform does not fuse, each video is decoded at
    its own size (one call per video) and the transform runs per clip.

    Args:
        paths: video files (anything :func:`spdl_torch.io.decode_video_frames` reads).
        labels: one label per path (``None``: the targets are the indices).
        clip_len: T, frames per clip.
        stride: frames between a clip's frames.
        clips_per_video: N, clips per video.
        transform: a torchvision v2 transform of a clip (see above).
        target_transform: applied to the label.
        sampling: ``"random"`` (clip starts drawn from the sample's seed; the default when the transform
            is random) or ``"uniform"`` (evenly spaced: the default otherwise).
        frame_interval: > 0: clips by time, frames this many seconds apart (``stride`` unused).
        dimension_order: ``"NTCHW"`` or ``"NCTHW"`` (``layout=`` is its deprecated name).
        seed: base seed of the per-sample random streams (``None``: the loader's base seed in a
            ``spdl_torch.DataLoader``, else drawn once); sample i's seed is ``sample_seeds(seed, epoch, [i])``.
        seek_mode, num_ffmpeg_threads, max_pixels, max_frames: as :func:`spdl_torch.io.decode_video_clips`
            (``threads=`` is the deprecated name of ``num_ffmpeg_threads``).
        max_bytes: read no file larger than this (``OSError``, errno ``EFBIG``); ``None``: no limit.
        warn_unfused: warn (``UserWarning``) when the transform is not fully fused.

    Raises:
        ValueError: ``labels`` and ``paths`` differ in length.
        spdl_torch.DecodeError (when fetching): a video that cannot be decoded, named by its path.
    """

    @renamed_kwargs(layout="dimension_order", threads="num_ffmpeg_threads")
    def __init__(
        self,
        paths: Sequence[str | os.PathLike],
        labels: Sequence[Any] | None = None,
        clip_len: int = 16,
        stride: int = 1,
        clips_per_video: int = 1,
        transform: Callable | None = None,
        target_transform: Callable | None = None,
        *,
        sampling: str | None = None,
        frame_interval: float = 0.0,
        dimension_order: str = "NTCHW",
        seed: int | None = None,
        seek_mode: str = "exact",
        num_ffmpeg_threads: int = 1,
        max_pixels: int | None = None,
        max_frames: int | None = None,
        max_bytes: int | None = None,
        warn_unfused: bool = True,
    ) -> None:
        self.paths = [os.fspath(p) for p in paths]
        if labels is not None and len(labels) != len(self.paths):
            raise ValueError(f"VideoClipDataset: expected one label per path, got {len(labels)=} for {len(self.paths)} paths")
        layout, threads = dimension_order, num_ffmpeg_threads
        if layout not in ("NTCHW", "NCTHW"):
            raise ValueError(f"VideoClipDataset: expected dimension_order 'NTCHW' or 'NCTHW', got {dimension_order=}")
        for name, value in (("clip_len", clip_len), ("stride", stride), ("clips_per_video", clips_per_video)):
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"VideoClipDataset: expected {name} as an int >= 1, got {name}={value!r}")
        if not (isinstance(frame_interval, (int, float)) and math.isfinite(frame_interval) and frame_interval >= 0):
            raise ValueError(f"VideoClipDataset: expected frame_interval as seconds >= 0, got {frame_interval=!r}")
        if seek_mode not in ("exact", "approximate"):
            raise ValueError(f"VideoClipDataset: expected seek_mode 'exact' or 'approximate', got {seek_mode=!r}")
        if not isinstance(threads, int) or threads < 0:
            raise ValueError(f"VideoClipDataset: expected num_ffmpeg_threads as an int >= 0, got "
                             f"{num_ffmpeg_threads=!r}")
        self.labels = list(labels) if labels is not None else None
        self.clip_len, self.stride, self.clips_per_video = int(clip_len), int(stride), int(clips_per_video)
        self.frame_interval, self.layout = float(frame_interval), layout
        self.transform, self.target_transform = transform, target_transform
        self.seek_mode, self.threads = seek_mode, int(threads)
        self.max_pixels, self.max_frames, self.max_bytes = max_pixels, max_frames, max_bytes
        self._init_fused(seed, fusable=transform is not None)
        if self.plan is not None:
            self.plan = _clip_plan(self.transform)
        if self.plan is not None and self.plan.rest_input != "tensor":
            self.plan = None
        random = self.plan.random if self.plan is not None else False
        self.sampling = sampling if sampling is not None else ("random" if random else "uniform")
        if self.sampling not in ("random", "uniform"):
            raise ValueError(f"VideoClipDataset: expected sampling 'random' or 'uniform', got {sampling=}")
        if warn_unfused and transform is not None and (self.plan is None or self.plan.rest is not None):
            what = "is not fused" if self.plan is None else f"is only partly fused ({_short_repr(self.plan.rest)} runs per clip)"
            warnings.warn(f"VideoClipDataset: the transform {what}; unfused transforms run per clip in Python. "
                          "Pass warn_unfused=False to silence this.", UserWarning, stacklevel=2)

    def __len__(self) -> int:
        return len(self.paths)

    def _target(self, index: int) -> Any:
        return index if self.labels is None else self.labels[index]

    def _common(self) -> dict[str, Any]:
        return dict(clip_len=self.clip_len, clips_per_video=self.clips_per_video, stride=self.stride,
                    frame_interval=self.frame_interval, sampling=self.sampling, dimension_order=self.layout,
                    seek_mode=self.seek_mode, num_ffmpeg_threads=self.threads, max_pixels=self.max_pixels,
                    max_frames=self.max_frames)

    def _read(self, indices: Sequence[int]) -> tuple[list[str], list[torch.Tensor]]:
        from ..io import read_file

        paths = [self.paths[i] for i in indices]
        return paths, [read_file(p, max_bytes=self.max_bytes or 0) for p in paths]

    def _decode(self, datas: list[torch.Tensor], seeds: torch.Tensor) -> Any:
        """The fused call: clips of every video (uint8 Tensor[num_bytes] each) in one Tensor[B, N, ...], or
        per-video results (one call per video at its own size). Raises the op's :class:`DecodeError` with
        ``sample_index`` set."""
        from ..io import decode_video_clips, video_metadata

        if self.plan is not None:
            return decode_video_clips(datas, seeds=seeds, **self.plan.op_kwargs, **self._common()).data
        out = []
        for k, data in enumerate(datas):  # each video at its own size, one call per video
            try:
                m = video_metadata(data, seek_mode="approximate")  # the size only: no index scan
                out.append(decode_video_clips([data], seeds=seeds[k:k + 1], height=m.height, width=m.width,
                                              geometry="resize", **self._common()).data[0])
            except DecodeError as e:
                raise DecodeError(f"sample {k}: {e.reason}", sample_index=k, reason=e.reason) from None
        return out

    def _decode_clips(self, datas: list[torch.Tensor], seeds: torch.Tensor) -> list[torch.Tensor]:
        """Each video's clips Tensor[N, T, 3, H, W] (or [N, 3, T, H, W]), the transform's remainder applied; with
        a fully fused transform they are the rows of one registered batch (zero-copy :func:`collate`)."""
        clips = self._decode(datas, seeds)
        if isinstance(clips, torch.Tensor) and (self.plan is None or self.plan.rest is None):
            register_fused_batch(clips)
            return [clips[k] for k in range(len(datas))]
        return [self._finish(clips[k]) for k in range(len(datas))]

    def _finish(self, clips: torch.Tensor) -> torch.Tensor:
        """The unfused remainder of the transform, per clip (Tensor[T, 3, H, W] in NTCHW order)."""
        rest = self.transform if self.plan is None else self.plan.rest
        if rest is None:
            return clips
        if self.layout == "NCTHW":
            clips = clips.transpose(1, 2)
        out = torch.stack([rest(c) for c in clips])
        return out.transpose(1, 2) if self.layout == "NCTHW" else out

    def spdl_native_loading(self) -> bool:
        """Whether the clips come from the native decoder with no per-clip Python remainder of the transform
        (:class:`spdl_torch.DataLoader` then loads on threads)."""
        return self.transform is None or (self.plan is not None and self.plan.rest is None)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, Any]:
        """``(clips, target)`` of video ``index``: the same pixels as a batched fetch."""
        return self.__getitems__([int(index)])[0]

    def __getitems__(self, indices: Sequence[int]) -> list[tuple[torch.Tensor, Any]]:
        """Samples ``indices`` as a list of ``(clips, target)``; with a fused transform one native call
        decodes them all, and the clips are views ``batch[k]`` of one Tensor[B, N, T, 3, H, W] (see
        :func:`spdl_torch.datasets.collate`: it returns that tensor without a copy)."""
        from ..transforms import sample_seeds

        indices = [int(i) for i in indices]
        if not indices:
            return []
        paths, datas = self._read(indices)
        try:
            clips = self._decode_clips(datas, sample_seeds(*self._seed_and_epoch(), indices))
        except DecodeError as e:
            raise name_sample(e, paths) from None
        targets = [self._target(i) if self.target_transform is None else self.target_transform(self._target(i))
                   for i in indices]
        return list(zip(clips, targets))

    def __repr__(self) -> str:
        fused = _describe_plan(self.plan)
        return (f"VideoClipDataset(num_videos={len(self)}, clip_len={self.clip_len}, stride={self.stride}, "
                f"clips_per_video={self.clips_per_video}, sampling={self.sampling!r},\n    {fused}\n)")
