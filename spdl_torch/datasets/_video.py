"""``VideoClipDataset``: videos as training clips, one native ``decode_video_clips`` call per batch."""

from __future__ import annotations

import math
import os
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch.utils.data import Dataset

from .._errors import DecodeError, name_sample
from ._collate import register_fused_batch
from ._fused import FusedBatchMixin, _short_repr

__all__ = ["VideoClipDataset"]


def _describe_plan(plan: Any) -> str:
    """The fused plan (of ``fuse(transform, op="decode_video_clips")``), or ``"not fused"``."""
    return "not fused" if plan is None else plan.describe()


class VideoClipDataset(FusedBatchMixin, Dataset):
    """Videos as clips for video classification: sample ``i`` is ``(clips, label)`` with ``clips`` a
    Tensor[N, T, 3, H, W] (``dimension_order="NCTHW"``: [N, 3, T, H, W]) of ``num_clips`` clips of
    ``num_frames_per_clip`` frames, ``num_indices_between_frames`` frames apart, from ``paths[i]`` (torchcodec's
    clip sampler names).

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
        num_frames_per_clip: T, frames per clip.
        num_indices_between_frames: frames between a clip's frames.
        num_clips: N, clips per video.
        transform: a torchvision v2 transform of a clip (see above).
        target_transform: applied to the label.
        sampling: ``"random"`` (clip starts drawn from the sample's seed; the default when the transform
            is random) or ``"regular"`` (evenly spaced: the default otherwise).
        seconds_between_frames: > 0: clips by time, frames this many seconds apart (``num_indices_between_frames``
            unused).
        dimension_order: ``"NTCHW"`` or ``"NCTHW"``.
        seed: base seed of the per-sample random streams (``None``: the loader's base seed in a
            ``spdl_torch.DataLoader``, else drawn once); sample i's seed is ``FusedPlan.sample_seeds(seed, epoch, [i])``.
        seek_mode, num_ffmpeg_threads, max_pixels, max_frames: as :func:`spdl_torch.io.decode_video_clips`.
        max_bytes: read no file larger than this (``OSError``, errno ``EFBIG``); ``None``: no limit.
        warn_unfused: warn (``UserWarning``) when the transform is not fully fused.

    Raises:
        ValueError: ``labels`` and ``paths`` differ in length.
        spdl_torch.DecodeError (when fetching): a video that cannot be decoded, named by its path.
    """

    def __init__(
        self,
        paths: Sequence[str | os.PathLike],
        labels: Sequence[Any] | None = None,
        num_frames_per_clip: int = 16,
        num_indices_between_frames: int = 1,
        num_clips: int = 1,
        transform: Callable | None = None,
        target_transform: Callable | None = None,
        *,
        sampling: str | None = None,
        seconds_between_frames: float = 0.0,
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
        if dimension_order not in ("NTCHW", "NCTHW"):
            raise ValueError(f"VideoClipDataset: expected dimension_order 'NTCHW' or 'NCTHW', got {dimension_order=}")
        for name, value in (("num_frames_per_clip", num_frames_per_clip),
                            ("num_indices_between_frames", num_indices_between_frames), ("num_clips", num_clips)):
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"VideoClipDataset: expected {name} as an int >= 1, got {name}={value!r}")
        if not (isinstance(seconds_between_frames, (int, float)) and math.isfinite(seconds_between_frames)
                and seconds_between_frames >= 0):
            raise ValueError(f"VideoClipDataset: expected seconds_between_frames >= 0, got {seconds_between_frames=!r}")
        if seek_mode not in ("exact", "approximate"):
            raise ValueError(f"VideoClipDataset: expected seek_mode 'exact' or 'approximate', got {seek_mode=!r}")
        if not isinstance(num_ffmpeg_threads, int) or num_ffmpeg_threads < 0:
            raise ValueError(f"VideoClipDataset: expected num_ffmpeg_threads as an int >= 0, got "
                             f"{num_ffmpeg_threads=!r}")
        self.labels = list(labels) if labels is not None else None
        self.num_frames_per_clip, self.num_clips = int(num_frames_per_clip), int(num_clips)
        self.num_indices_between_frames = int(num_indices_between_frames)
        self.seconds_between_frames, self.dimension_order = float(seconds_between_frames), dimension_order
        self.transform, self.target_transform = transform, target_transform
        self.seek_mode, self.num_ffmpeg_threads = seek_mode, int(num_ffmpeg_threads)
        self.max_pixels, self.max_frames, self.max_bytes = max_pixels, max_frames, max_bytes
        self._init_fused(seed, fusable=transform is not None, op="decode_video_clips")
        if self.plan is not None and self.plan.rest_input != "tensor":
            self.plan = None
        random = self.plan.random if self.plan is not None else False
        self.sampling = sampling if sampling is not None else ("random" if random else "regular")
        if self.sampling not in ("random", "regular"):
            raise ValueError(f"VideoClipDataset: expected sampling 'random' or 'regular', got {sampling=}")
        if warn_unfused and transform is not None and (self.plan is None or self.plan.rest is not None):
            what = "is not fused" if self.plan is None else f"is only partly fused ({_short_repr(self.plan.rest)} runs per clip)"
            warnings.warn(f"VideoClipDataset: the transform {what}; unfused transforms run per clip in Python. "
                          "Pass warn_unfused=False to silence this.", UserWarning, stacklevel=2)

    def __len__(self) -> int:
        return len(self.paths)

    def _target(self, index: int) -> Any:
        return index if self.labels is None else self.labels[index]

    def _common(self) -> dict[str, Any]:
        return dict(num_frames_per_clip=self.num_frames_per_clip, num_clips=self.num_clips,
                    num_indices_between_frames=self.num_indices_between_frames,
                    seconds_between_frames=self.seconds_between_frames, sampling=self.sampling,
                    dimension_order=self.dimension_order, seek_mode=self.seek_mode,
                    num_ffmpeg_threads=self.num_ffmpeg_threads, max_pixels=self.max_pixels, max_frames=self.max_frames)

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
        if self.dimension_order == "NCTHW":
            clips = clips.transpose(1, 2)
        out = torch.stack([rest(c) for c in clips])
        return out.transpose(1, 2) if self.dimension_order == "NCTHW" else out

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
        from .._seeds import sample_seeds

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
        return (f"VideoClipDataset(num_videos={len(self)}, num_clips={self.num_clips}, "
                f"num_frames_per_clip={self.num_frames_per_clip}, "
                f"num_indices_between_frames={self.num_indices_between_frames}, sampling={self.sampling!r},\n"
                f"    {fused}\n)")
