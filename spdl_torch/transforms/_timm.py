"""timm's transforms (what ``timm.data.create_transform`` returns), recognised by module and class name
without importing timm, as the torchvision transforms with the same behaviour, so :func:`fuse` maps them.

=====================================================  =============================================
timm (``timm.data``)                                    fused as
=====================================================  =============================================
``RandomResizedCropAndInterpolation`` (bilinear,       ``RandomResizedCrop`` (the same box rule);
bicubic, nearest, or ``"random"``)                      ``"random"``: a filter per sample, its seed
``MaybeToTensor`` / ``MaybePILToTensor``                ``ToTensor`` / ``PILToTensor``
``RandomErasing`` (``mode`` const or pixel, one box)    ``RandomErasing`` (value 0 / ``"random"``)
=====================================================  =============================================

Not fused, with the reason: timm's ``RandAugment`` / ``AutoAugment`` / ``AugMixAugment`` (ops resample with a random bilinear or bicubic
filter and fill with the per-channel ``img_mean``; ``SolarizeAdd``), ``RandomErasing(mode="rand")`` or a
random box count, ``ResizeKeepRatio``, ``ToNumpy`` (returns a NumPy array; it runs after the op on PIL
images).
"""

from __future__ import annotations

import math
from typing import Any

import torchvision.transforms as T1
from torchvision.transforms import InterpolationMode

__all__ = ["is_timm", "translate"]

_MODES = {InterpolationMode.BILINEAR, InterpolationMode.BICUBIC, InterpolationMode.NEAREST}
_POLICIES = ("RandAugment", "AutoAugment", "AugMixAugment")


def is_timm(t: Any) -> bool:
    return type(t).__module__.split(".")[0] == "timm"


def translate(t: Any) -> tuple[Any, str]:
    """The torchvision transform that behaves as timm's ``t``, or ``(None, why not)`` (``(None, "")`` for a
    transform that is not timm's)."""
    if not is_timm(t):
        return None, ""
    name = type(t).__name__
    if name == "RandomResizedCropAndInterpolation":
        modes = list(t.interpolation) if isinstance(t.interpolation, (tuple, list)) else [t.interpolation]
        if any(m not in _MODES for m in modes):
            return None, f"interpolation {t.interpolation} has no decode_images resampler"
        rrc = T1.RandomResizedCrop(t.size, scale=tuple(t.scale), ratio=tuple(t.ratio), interpolation=modes[0])
        if len(modes) > 1:  # interpolation="random": one filter per sample, drawn from its seed
            rrc.interpolation_choices = tuple("nearest_exact" if m.value == "nearest" else m.value for m in modes)
        return rrc, ""
    if name == "MaybeToTensor":
        return T1.ToTensor(), ""
    if name == "MaybePILToTensor":
        return T1.PILToTensor(), ""
    if name == "RandomErasing":
        return _erasing(t)
    if name in _POLICIES:
        return None, (f"timm's {name} (its ops resample with a random bilinear/bicubic filter and fill with the "
                      "per-channel img_mean; the fused affine has one grey fill and nearest/bilinear)")
    if name == "ResizeKeepRatio":
        return None, ("timm's ResizeKeepRatio rounds its size per axis (decode_images' Resize(S) truncates the "
                      "longer side as torchvision does)")
    if name == "ToNumpy":
        return None, "ToNumpy returns a NumPy array (runs per sample after the op)"
    return None, f"timm's {name} has no decode_images equivalent"


def _erasing(t: Any) -> tuple[Any, str]:
    if t.mode not in ("const", "pixel", ""):
        return None, f"timm RandomErasing(mode={t.mode!r}): one random colour per box is not a fused erase mode"
    if t.max_count != 1 or t.min_count != 1:
        return None, f"timm RandomErasing with count ({t.min_count}, {t.max_count}): one box per sample is fused"
    lo, hi = (math.exp(r) for r in t.log_aspect_ratio)
    p = t.probability
    if not isinstance(p, (int, float)) or not 0.0 <= p <= 1.0:
        raise ValueError(f"RandomErasing (timm): probability={p!r} is invalid (a probability in [0, 1])")
    if not 0.0 <= t.min_area <= t.max_area <= 1.0:
        raise ValueError(f"RandomErasing (timm): min_area/max_area=({t.min_area}, {t.max_area}) is invalid "
                         "(0 <= min <= max <= 1)")
    return T1.RandomErasing(p=float(p), scale=(float(t.min_area), float(t.max_area)), ratio=(lo, hi),
                            value="random" if t.mode == "pixel" else 0), ""
