"""The matching rules of :func:`fuse`: torchvision v1 and v2 transforms onto ``decode_images`` arguments."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import torch
import torchvision.transforms as T1
from torchvision.transforms import v2
from torchvision.transforms.v2 import InterpolationMode

from ._plan import FusedPlan

__all__ = ["Analysis", "analyse", "fuse", "input_kind"]

_COMPOSES = (T1.Compose, v2.Compose)
_FLOATS = (torch.float32, torch.bfloat16)

# Deterministic transforms whose result on a batch Tensor[N, C, H, W] equals the stacked per-sample results
# (no random parameters: torchvision v2 draws ONE set of parameters per call, so random transforms on a
# batch would give every sample the same jitter; they stay per sample).
_BATCH_SAFE = (
    v2.Normalize, v2.ToDtype, v2.ConvertImageDtype, v2.ToPureTensor, v2.Grayscale, v2.RGB, v2.CenterCrop,
    v2.Pad, v2.Identity, T1.Normalize, T1.ConvertImageDtype, T1.Grayscale, T1.CenterCrop, T1.Pad,
)


def _flatten(t: Any) -> list[Any]:
    if isinstance(t, _COMPOSES) or type(t) is torch.nn.Sequential:
        subs = t.transforms if isinstance(t, _COMPOSES) else list(t)
        return [x for sub in subs for x in _flatten(sub)]
    return [t]


def _is_v1(t: Any) -> bool:
    return type(t).__module__ == "torchvision.transforms.transforms" and not isinstance(t, _COMPOSES)


def input_kind(transform: Callable | None) -> str:
    """What our datasets feed ``transform``: ``"pil"`` (a ``PIL.Image`` in RGB mode, as torchvision's
    ImageFolder does) when it starts with a classic ``torchvision.transforms`` (v1) transform or contains
    v1's ``ToTensor`` / ``PILToTensor`` (which refuse tensors); ``"tensor"`` (a uint8 Tensor[3, H, W])
    otherwise (v2 transforms, v2 pipelines with v1 transforms that accept tensors, plain callables,
    ``None``)."""
    if transform is None:
        return "tensor"
    ts = _flatten(transform)
    if not ts:  # an empty Compose: the identity
        return "tensor"
    pil = _is_v1(ts[0]) or any(type(t) in (T1.ToTensor, T1.PILToTensor) for t in ts)
    return "pil" if pil else "tensor"


def _interpolation(t: Any, pil: bool) -> str | None:
    """bilinear / bicubic, antialiased. PIL images are always antialiased (v1 and v2 ignore ``antialias``)."""
    if not pil and getattr(t, "antialias", True) is not True:
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


def _resize_size(t: Any) -> list[int] | None:
    """``Resize.size`` as a list of 1 (shorter side) or 2 (h, w) ints; None for ``size=None``."""
    size = t.size
    if size is None:
        return None
    return [int(size)] if isinstance(size, int) else [int(s) for s in size]


@dataclasses.dataclass
class Analysis:
    """What :func:`analyse` found: the plan (``None``: nothing fused), the first transform that is not
    fused with the reason, and the input the pipeline expects (``"pil"`` or ``"tensor"``)."""

    plan: FusedPlan | None
    unfused: Any
    reason: str
    input: str


_RESIZES, _CROPS, _RRCS, _FLIPS = (T1.Resize, v2.Resize), (T1.CenterCrop, v2.CenterCrop), \
    (T1.RandomResizedCrop, v2.RandomResizedCrop), (T1.RandomHorizontalFlip, v2.RandomHorizontalFlip)
_NORMALIZES, _CONVERTS = (T1.Normalize, v2.Normalize), (T1.ConvertImageDtype, v2.ConvertImageDtype)
_TO_TENSOR_FLOAT = (T1.ToTensor, v2.ToTensor)
_TO_TENSOR_UINT8 = (T1.PILToTensor, v2.PILToTensor, v2.ToImage)


def _geometry(ts: list[Any], k: int, pil: bool) -> tuple[dict[str, Any], int, bool, str]:
    """The op's geometry from ``ts[k]`` (and ``ts[k + 1]``): (kwargs, next index, random, why not)."""
    t = ts[k] if k < len(ts) else None
    if t is None:
        return {}, k, False, "no geometry transform (Resize + CenterCrop, Resize((h, w)), CenterCrop or RandomResizedCrop)"
    if type(t) in _RESIZES:
        size = _resize_size(t)
        interp = _interpolation(t, pil)
        if size is None or t.max_size is not None:
            return {}, k, False, "Resize with max_size does not map onto decode_images"
        if interp is None:
            return {}, k, False, "only antialiased bilinear/bicubic resizes are fused"
        if len(size) == 1:
            nxt = ts[k + 1] if k + 1 < len(ts) else None
            if type(nxt) not in _CROPS:
                return {}, k, False, "Resize(S) alone has no fixed output size: follow it by a CenterCrop"
            h, w = _pair(nxt.size)
            return dict(mode="eval", resize_shorter=size[0], height=h, width=w, interpolation=interp), k + 2, False, ""
        return dict(mode="resize", height=size[0], width=size[1], interpolation=interp), k + 1, False, ""
    if type(t) in _CROPS:
        h, w = _pair(t.size)
        return dict(mode="eval", resize_shorter=0, height=h, width=w), k + 1, False, ""
    if type(t) in _RRCS:
        interp = _interpolation(t, pil)
        if interp is None:
            return {}, k, False, "only antialiased bilinear/bicubic resizes are fused"
        h, w = _pair(t.size)
        return dict(mode="train", height=h, width=w, scale=tuple(float(s) for s in t.scale),
                    ratio=tuple(float(r) for r in t.ratio), interpolation=interp), k + 1, True, ""
    return {}, k, False, "not a fusable geometry transform"


def analyse(transform: Callable | None) -> Analysis:
    """Matches the longest prefix of ``transform`` (torchvision v1 or v2; ``Compose`` and
    ``nn.Sequential`` flattened) onto ``decode_images`` arguments; see :mod:`spdl_torch.transforms`."""
    kind = input_kind(transform)
    if transform is None:
        return Analysis(None, None, "", kind)
    ts = _flatten(transform)
    if not ts:
        return Analysis(None, transform, "an empty Compose", kind)
    pil = kind == "pil"
    k = 0
    dtype = torch.uint8
    # Leading conversions to a uint8 tensor (a no-op for the op, whose input is encoded bytes).
    while k < len(ts) and (type(ts[k]) in _TO_TENSOR_UINT8 and (pil or type(ts[k]) is v2.ToImage)
                           or type(ts[k]) is v2.ToPureTensor and not pil):
        pil = False
        k += 1
    geo, k, random, why = _geometry(ts, k, pil)
    if not geo:
        return Analysis(None, ts[k] if k < len(ts) else transform, why, kind)
    kw: dict[str, Any] = dict(geo)
    flipped = normalized = False
    why = ""
    while k < len(ts):
        t, typ = ts[k], type(ts[k])
        if typ in _FLIPS and not flipped:
            kw["hflip_prob"] = float(t.p)
            random = random or t.p > 0
            flipped = True
        elif typ in (T1.RandomApply, v2.RandomApply) and not flipped and len(t.transforms) == 1 \
                and type(t.transforms[0]) in _FLIPS:  # flip with probability p * q
            kw["hflip_prob"] = float(t.p) * float(t.transforms[0].p)
            random = random or kw["hflip_prob"] > 0
            flipped = True
        elif pil and typ in _TO_TENSOR_FLOAT:  # PIL -> float32 in [0, 1]
            dtype, pil = torch.float32, False
        elif pil and typ in _TO_TENSOR_UINT8:  # PIL -> uint8 tensor
            pil = False
        elif not pil and typ in (v2.ToImage, v2.ToPureTensor):  # a plain tensor stays one (see the docs)
            pass
        elif not pil and (typ in _CONVERTS or typ is v2.ToDtype and isinstance(t.dtype, torch.dtype) and t.scale):
            new = t.dtype
            if new == dtype:
                pass
            elif dtype == torch.uint8 and new in _FLOATS or dtype == torch.float32 and new == torch.bfloat16:
                dtype = new
            else:
                why = f"a conversion from {dtype} to {new} does not map onto decode_images"
                break
        elif not pil and typ is v2.ToDtype and t.dtype == torch.bfloat16 and dtype == torch.float32:
            dtype = torch.bfloat16  # a float -> float cast: scale does not matter
        elif not pil and typ in _NORMALIZES and not normalized and dtype in _FLOATS:
            kw["mean"] = tuple(float(m) for m in t.mean)
            kw["std"] = tuple(float(s) for s in t.std)
            normalized = True
        else:
            why = _why_not(t, pil, dtype, flipped, normalized)
            break
        k += 1
    if dtype != torch.uint8:
        kw["dtype"] = dtype
    rest_ts = ts[k:]
    plan = FusedPlan(op_kwargs=kw, fused=ts[:k], rest=_compose(transform, rest_ts) if rest_ts else None,
                     random=random, rest_input="pil" if pil else "tensor",
                     unfused=rest_ts[0] if rest_ts else None, unfused_reason=why)
    if rest_ts:
        _split_rest(plan, transform, rest_ts, pil)
    return Analysis(plan, plan.unfused, why, kind)


def _why_not(t: Any, pil: bool, dtype: torch.dtype, flipped: bool, normalized: bool) -> str:
    typ = type(t)
    if typ in _FLIPS:
        return "a second horizontal flip"
    if typ in _NORMALIZES:
        if normalized:
            return "a second Normalize"
        return "Normalize before a conversion to float" if not pil else "Normalize of a PIL image"
    if typ is v2.ToDtype:
        return "ToDtype without scale=True (or with a dict of dtypes)" if not pil else "ToDtype of a PIL image is a no-op"
    if typ in _TO_TENSOR_FLOAT:
        return "ToTensor of a tensor"
    return "no decode_images equivalent"


def _compose(like: Any, ts: list[Any]) -> Callable:
    return T1.Compose(ts) if isinstance(like, T1.Compose) else v2.Compose(ts)


def _split_rest(plan: FusedPlan, like: Any, ts: list[Any], pil: bool) -> None:
    """Splits the remainder into a batched head of deterministic transforms and the per-sample rest.

    Deterministic transforms after the first random one stay per sample: stacking the per-sample results
    to run them once per batch measured 5-12 % slower on 32 x 3 x 224 x 224 float batches
    (``benchmarks/bench_remainder.py``; per-sample rows stay in cache, a batch does not)."""
    head = 0
    if not pil:
        while head < len(ts) and type(ts[head]) in _BATCH_SAFE:
            head += 1
    plan.batched = _compose(like, ts[:head]) if head else None
    plan.per_sample = _compose(like, ts[head:]) if head < len(ts) else None


def fuse(transform: Callable | None) -> FusedPlan | None:
    """Maps the longest fusable prefix of a torchvision pipeline onto ``decode_images`` (see
    :mod:`spdl_torch.transforms`); ``None`` when no prefix yields a fixed output size (nothing fused)."""
    return analyse(transform).plan
