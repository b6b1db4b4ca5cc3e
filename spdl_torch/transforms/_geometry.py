"""The geometry rules of :func:`~spdl_torch.transforms.fuse`: torchvision's resize / crop transforms (v1 and
v2) onto ``decode_images``' ``geometry`` arguments."""

from __future__ import annotations

from typing import Any

import torchvision.transforms as T1
from torchvision.transforms import v2
from torchvision.transforms.v2 import InterpolationMode

from ._classes import behaves_as, runs_as_written

__all__ = ["GEOMETRY_HINT", "interpolation", "match_geometry", "pair"]

GEOMETRY_HINT = ("no geometry transform (Resize + CenterCrop / RandomCrop, Resize((h, w)), CenterCrop, RandomCrop "
                 "or RandomResizedCrop)")

_RESIZES, _CROPS, _RRCS = (T1.Resize, v2.Resize), (T1.CenterCrop, v2.CenterCrop), \
    (T1.RandomResizedCrop, v2.RandomResizedCrop)
_RANDOM_CROPS = (T1.RandomCrop, v2.RandomCrop)


def interpolation(t: Any, pil: bool) -> tuple[str | None, str]:
    """The op's ``interpolation`` for a resizing transform, or ``(None, why not)``.

    Bilinear / bicubic are antialiased (on tensors ``antialias`` must be True, v2's default; PIL images
    always are); NEAREST is torch's ``nearest`` on tensors and Pillow's NEAREST (``nearest_exact``) on PIL
    images; NEAREST_EXACT is ``nearest_exact``."""
    mode = t.interpolation
    if mode in (InterpolationMode.NEAREST, "nearest"):
        return ("nearest_exact" if pil else "nearest"), ""
    if mode in (InterpolationMode.NEAREST_EXACT, "nearest-exact"):
        return "nearest_exact", ""
    if mode in (InterpolationMode.BILINEAR, "bilinear"):
        name = "bilinear"
    elif mode in (InterpolationMode.BICUBIC, "bicubic"):
        name = "bicubic"
    else:
        return None, f"interpolation {mode} has no decode_images resampler (bilinear, bicubic, nearest only)"
    if not pil and getattr(t, "antialias", True) is not True:
        return None, "a bilinear/bicubic resize of a tensor without antialias has no decode_images resampler"
    return name, ""


def pair(size: Any) -> tuple[int, int] | None:
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


def _is_zero_fill(fill: Any) -> bool:
    if isinstance(fill, dict):
        return all(_is_zero_fill(v) for v in fill.values())
    if fill is None:
        return True
    if isinstance(fill, (int, float)):
        return fill == 0
    return all(f == 0 for f in fill)


def _crop_padding(t: Any) -> tuple[list[int] | None, str]:
    """RandomCrop's padding as [left, top, right, bottom] (v1: the user's int / 2 / 4 values; v2: parsed as
    [left, right, top, bottom]), or (None, why not) when it is not zero padding."""
    pad = t.padding
    if pad is None or pad == 0:
        pads = [0, 0, 0, 0]
    elif behaves_as(t) is v2.RandomCrop:
        left, right, top, bottom = (int(p) for p in pad)
        pads = [left, top, right, bottom]
    elif isinstance(pad, int):
        pads = [pad] * 4
    elif len(pad) == 1:
        pads = [int(pad[0])] * 4
    elif len(pad) == 2:
        pads = [int(pad[0]), int(pad[1]), int(pad[0]), int(pad[1])]
    else:
        pads = [int(p) for p in pad]
    pads_anything = any(pads) or t.pad_if_needed
    if pads_anything and (t.padding_mode != "constant" or not _is_zero_fill(t.fill)):
        return None, (f"RandomCrop padding_mode={t.padding_mode!r} fill={t.fill!r}: only zero padding "
                      "(constant, fill=0) maps onto decode_images")
    return pads, ""


def _crop(t: Any, resize: dict[str, Any]) -> tuple[dict[str, Any], bool, str]:
    """A CenterCrop / RandomCrop after ``resize`` (resize_shorter, max_size, interpolation)."""
    h, w = pair(t.size)
    rest = dict(resize)
    first = dict(resize_shorter=rest.pop("resize_shorter"), height=h, width=w)
    if behaves_as(t) in _CROPS:
        return dict(geometry="eval", **first, **rest), False, ""
    pads, why = _crop_padding(t)
    if pads is None:
        return {}, False, why
    kw = dict(geometry="random_crop", **first, **rest)
    if any(pads):
        kw["padding"] = tuple(pads)
    if t.pad_if_needed:
        kw["pad_if_needed"] = True
    return kw, True, ""


def match_geometry(ts: list[Any], k: int, pil: bool) -> tuple[dict[str, Any], int, bool, str]:
    """The op's geometry from ``ts[k]`` (and ``ts[k + 1]``): (kwargs, next index, random, why not)."""
    t = ts[k] if k < len(ts) else None
    if t is None:
        return {}, k, False, GEOMETRY_HINT
    typ = behaves_as(t)
    if typ in _RESIZES:
        size = _resize_size(t)
        interp, why = interpolation(t, pil)
        if interp is None:
            return {}, k, False, why
        if size is not None and len(size) == 2:
            if t.max_size is not None:
                return {}, k, False, "Resize((h, w)) with max_size (torchvision refuses it)"
            return dict(geometry="resize", height=size[0], width=size[1], interpolation=interp), k + 1, False, ""
        if size is None and t.max_size is None:
            return {}, k, False, "Resize(None) without max_size"
        nxt = ts[k + 1] if k + 1 < len(ts) else None
        if behaves_as(nxt) not in _CROPS + _RANDOM_CROPS:
            written = runs_as_written(nxt) if nxt is not None else ""
            return {}, k, False, ("Resize(S) alone has no fixed output size: follow it by a CenterCrop or "
                                  "RandomCrop" + (f" ({written})" if written else ""))
        resize = dict(resize_shorter=size[0] if size else 0, interpolation=interp)
        if t.max_size is not None:
            resize["max_size"] = int(t.max_size)
        kw, random, why = _crop(nxt, resize)
        return (kw, k + 2, random, "") if kw else ({}, k + 1, False, why)
    if typ in _CROPS or typ in _RANDOM_CROPS:
        kw, random, why = _crop(t, dict(resize_shorter=0))
        return (kw, k + 1, random, "") if kw else ({}, k, False, why)
    if typ in _RRCS:
        interp, why = interpolation(t, pil)
        if interp is None:
            return {}, k, False, why
        h, w = pair(t.size)
        return dict(geometry="train", height=h, width=w, scale=tuple(float(s) for s in t.scale),
                    ratio=tuple(float(r) for r in t.ratio), interpolation=interp), k + 1, True, ""
    return {}, k, False, "not a fusable geometry transform"
