"""Fused transform plans: a torchvision v2 pipeline mapped onto one :func:`spdl_torch.io.decode_images` call.

:func:`fuse` reads a ``torchvision.transforms.v2`` pipeline (a transform or a ``Compose``, nested ones
flattened) from its start and maps this prefix onto the op:

=============================================================  ======================================
torchvision v2                                                 decode_images
=============================================================  ======================================
``Resize(S)`` + ``CenterCrop((H, W))``                          ``mode="eval", resize_shorter=S``
``CenterCrop((H, W))``                                          ``mode="eval", resize_shorter=0``
``Resize((H, W))``                                              ``mode="resize"``
``RandomResizedCrop((H, W), scale, ratio)``                     ``mode="train", scale, ratio``
``RandomHorizontalFlip(p)`` (after the geometry)                ``hflip_prob=p``
``ToDtype(float32 | bfloat16, scale=True)``                     ``dtype``
``Normalize(mean, std)`` (after ``ToDtype``)                    ``mean, std``
=============================================================  ======================================

Resizes must be antialiased (v2's default) with bilinear or bicubic interpolation and no ``max_size``;
a leading ``ToImage()`` is dropped (the op's input is encoded bytes). The first transform that does not fit
the table, and everything after it, stays as ordinary torchvision transforms (``FusedPlan.rest``) applied
per sample to the decoded tensors. A pipeline whose prefix gives no fixed output size (e.g. ``Resize(S)``
alone) is not fused: :func:`fuse` returns ``None``.

Random transforms draw from per-sample seeds (see :func:`sample_seeds`), not from torch's global RNG, so a
sample's crop and flip depend only on (base seed, epoch, index).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import torch
from torchvision.transforms import v2
from torchvision.transforms.v2 import InterpolationMode

from ._seeding import MASK64, seed_chain_head, splitmix64

__all__ = ["FusedPlan", "fuse", "sample_seeds"]



def sample_seeds(base_seed: int, epoch: int, indices: Sequence[int]) -> torch.Tensor:
    """Per-sample seeds: ``splitmix64(splitmix64(splitmix64(base_seed) ^ epoch) ^ index)`` as int64 [N].
    Depends only on (base_seed, epoch, index), never on batch composition or thread count."""
    head = seed_chain_head(base_seed, epoch)
    out = []
    for i in indices:
        v = splitmix64(head ^ (int(i) & MASK64))  # seed_chain(base_seed, epoch, i)
        out.append(v - (1 << 64) if v >= 1 << 63 else v)
    return torch.tensor(out, dtype=torch.int64)


@dataclasses.dataclass
class FusedPlan:
    """The op arguments of a fused prefix, plus the transforms left to run per sample.

    Attributes:
        op_kwargs: keyword arguments of :func:`spdl_torch.io.decode_images` (height, width, mode, ...).
        fused: the torchvision transforms the op replaces, in order.
        rest: the remaining transforms (a ``v2.Compose``), or ``None`` when everything was fused.
        random: whether the fused part draws random numbers (needs seeds).
    """

    op_kwargs: dict[str, Any]
    fused: list[Any]
    rest: Callable | None
    random: bool

    def __call__(
        self, srcs: Sequence[Any], seeds: torch.Tensor | None = None, *, strict: bool = True, pin_memory: bool = False
    ) -> Any:
        """Decodes ``srcs`` with the fused op; returns the batch Tensor[N, 3, H, W] when nothing is left in
        ``rest``, else the list of per-sample results of ``rest`` (with ``strict=False``: ``(result, ok)``)."""
        from .io import decode_images

        if seeds is None and self.random:
            seeds = torch.randint(-(2**63), 2**63 - 1, (len(srcs),), dtype=torch.int64)
        kwargs = dict(self.op_kwargs)
        if "mode" in kwargs:  # op_kwargs keeps the deprecated name (its documented contents)
            kwargs["geometry"] = kwargs.pop("mode")
        result = decode_images(srcs, seeds=seeds, strict=strict, pin_memory=pin_memory, **kwargs)
        batch, ok = (result, None) if strict else result
        if self.rest is not None:
            batch = [self.rest(img) for img in batch]
        return batch if strict else (batch, ok)


def _flatten(t: Any) -> list[Any]:
    if isinstance(t, v2.Compose):
        return [x for sub in t.transforms for x in _flatten(sub)]
    return [t]


def _interpolation(t: Any) -> str | None:
    if getattr(t, "antialias", True) is not True:
        return None
    mode = t.interpolation
    if mode in (InterpolationMode.BILINEAR, "bilinear"):
        return "bilinear"
    if mode in (InterpolationMode.BICUBIC, "bicubic"):
        return "bicubic"
    return None


def _pair(size: Any) -> tuple[int, int] | None:
    if isinstance(size, int):
        return size, size
    size = list(size)
    if len(size) == 1:
        return int(size[0]), int(size[0])
    if len(size) == 2:
        return int(size[0]), int(size[1])
    return None


def fuse(transform: Callable | None) -> FusedPlan | None:
    """Maps the longest fusable prefix of a torchvision v2 pipeline onto ``decode_images`` (see the module
    docstring); ``None`` when no prefix yields a fixed output size."""
    if transform is None:
        return None
    ts = _flatten(transform)
    k = 0
    while k < len(ts) and type(ts[k]) is v2.ToImage:
        k += 1
    kw: dict[str, Any] = {}
    random = False
    t = ts[k] if k < len(ts) else None
    if type(t) is v2.Resize and t.size is not None and t.max_size is None and _interpolation(t):
        interp = _interpolation(t)
        if len(t.size) == 1:  # shorter side -> S: needs a CenterCrop for a fixed size
            nxt = ts[k + 1] if k + 1 < len(ts) else None
            if type(nxt) is not v2.CenterCrop:
                return None
            h, w = _pair(nxt.size)
            kw.update(mode="eval", resize_shorter=int(t.size[0]), height=h, width=w, interpolation=interp)
            k += 2
        elif len(t.size) == 2:
            kw.update(mode="resize", height=int(t.size[0]), width=int(t.size[1]), interpolation=interp)
            k += 1
        else:
            return None
    elif type(t) is v2.CenterCrop:
        h, w = _pair(t.size)
        kw.update(mode="eval", resize_shorter=0, height=h, width=w)
        k += 1
    elif type(t) is v2.RandomResizedCrop and _interpolation(t):
        h, w = _pair(t.size)
        kw.update(mode="train", height=h, width=w, scale=tuple(t.scale), ratio=tuple(t.ratio),
                  interpolation=_interpolation(t))
        random = True
        k += 1
    else:
        return None
    if k < len(ts) and type(ts[k]) is v2.RandomHorizontalFlip:
        kw["hflip_prob"] = float(ts[k].p)
        random = random or ts[k].p > 0
        k += 1
    if (
        k < len(ts)
        and type(ts[k]) is v2.ToDtype
        and ts[k].scale
        and ts[k].dtype in (torch.float32, torch.bfloat16)
    ):
        kw["dtype"] = ts[k].dtype
        k += 1
        if k < len(ts) and type(ts[k]) is v2.Normalize and not ts[k].inplace:
            kw["mean"] = tuple(float(m) for m in ts[k].mean)
            kw["std"] = tuple(float(s) for s in ts[k].std)
            k += 1
    rest = v2.Compose(ts[k:]) if k < len(ts) else None
    return FusedPlan(op_kwargs=kw, fused=ts[:k], rest=rest, random=random)
