"""The result types of the batch decode functions, and the shapes-only ``repr`` every result type shares (a
batch's values would flood a log; its shapes and dtypes are what a reader checks)."""

from __future__ import annotations

from typing import NamedTuple

import torch

__all__ = ["ImageBatch", "VideoClips", "shapes_repr"]


def _describe(value) -> str:
    if isinstance(value, torch.Tensor):
        return f"Tensor(shape={list(value.shape)}, dtype={value.dtype})"
    return repr(value)


def shapes_repr(result, fields) -> str:
    """``Name(field=Tensor(shape=[...], dtype=...), ...)``: tensors by shape and dtype, other fields by value."""
    return f"{type(result).__name__}(" + ", ".join(f"{f}={_describe(getattr(result, f))}" for f in fields) + ")"


class ImageBatch(NamedTuple):
    """The result of :func:`~spdl_torch.io.decode_images`, whatever ``strict`` is.

    Attributes:
        data: Tensor[N, C, H, W] of the requested dtype (``dimension_order="NHWC"``: Tensor[N, H, W, C]).
        ok: bool Tensor[N]: False for samples that failed and were zero-filled (only with ``strict=False``;
            all True otherwise).
    """

    data: torch.Tensor
    ok: torch.Tensor

    def __repr__(self) -> str:
        return shapes_repr(self, self._fields)


class VideoClips(NamedTuple):
    """The result of :func:`~spdl_torch.io.decode_video_clips`, whatever ``strict`` is.

    Attributes:
        data: Tensor[B, N, T, 3, H, W] (``dimension_order="NCTHW"``: [B, N, 3, T, H, W]) of the requested dtype.
        ok: bool Tensor[B]: False for videos that failed and were zero-filled (only with ``strict=False``).
        indices: int64 Tensor[B, N, T]: each clip frame's index in its video (-1 for a failed video).
    """

    data: torch.Tensor
    ok: torch.Tensor
    indices: torch.Tensor

    def __repr__(self) -> str:
        return shapes_repr(self, self._fields)
