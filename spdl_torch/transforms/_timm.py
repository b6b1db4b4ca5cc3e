"""timm's transforms (what ``timm.data.create_transform`` returns), recognised by the module and name of the
timm class whose code they run (:func:`._classes.behaves_as`) without importing timm, as the torchvision
transforms with the same behaviour, so :func:`fuse` maps them.

=====================================================  =============================================
timm (``timm.data``)                                    fused as
=====================================================  =============================================
``RandomResizedCropAndInterpolation`` (bilinear,       ``RandomResizedCrop`` (the same box rule);
bicubic, nearest, or ``"random"``)                      ``"random"``: a filter per sample, its seed
``MaybeToTensor`` / ``MaybePILToTensor``                ``ToTensor`` / ``PILToTensor``
``RandomErasing`` (``mode`` const, rand, pixel;         timm's own box rule and count (:mod:`._timm_erasing`)
``min_count`` / ``max_count``)
``RandAugment`` (``rand-...``: uniform or weighted      timm's op rules as rows per sample
op choice, ``mstd`` noise, ``mmax``, ``inc``),          (:mod:`._timm_policies`): Pillow's affine
``AutoAugment`` (``original``, ``originalr``, ``v0``,   (fill colour, nearest / bilinear / bicubic drawn
``v0r``), ``AugMixAugment`` (``augmix-...``,            per op call), ``solarize_add``, the colour ops
``blended=False``)                                      of torchvision's kernels, AugMix's mix rows
=====================================================  =============================================

The policies run on the uint8 crop after the geometry and flips, as in timm's pipeline on the PIL image; their
ops' outputs are Pillow's (exact for the geometry, point and histogram ops but for a float32 matrix's rare
border sample; the enhancements that blend with a grey Pillow rounds differ by at most 1 level, >= 49 dB:
``docs/images.md``). Not fused, with the reason: the ``GaussianBlur`` ops of timm's ``3a`` sets,
``AugMixAugment(blended=True)``, a policy placed before the geometry, ``ResizeKeepRatio``, ``ToNumpy``
(returns a NumPy array; it runs after the op on PIL images).
"""

from __future__ import annotations

from typing import Any

import torchvision.transforms as T1
from torchvision.transforms import InterpolationMode

from ._classes import behaves_as
from ._timm_erasing import TimmErasing

__all__ = ["is_timm", "translate"]

_MODES = {InterpolationMode.BILINEAR, InterpolationMode.BICUBIC, InterpolationMode.NEAREST}
_POLICIES = ("RandAugment", "AutoAugment", "AugMixAugment")


def is_timm(t: Any) -> bool:
    """Whether ``t`` runs a timm class's own code (a subclass that overrides its methods does not: it runs as
    written, :mod:`._classes`)."""
    typ = behaves_as(t)
    return typ is not None and typ.__module__.split(".")[0] == "timm"


def translate(t: Any) -> tuple[Any, str]:
    """The torchvision transform that behaves as timm's ``t``, or ``(None, why not)`` (``(None, "")`` for a
    transform that is not timm's)."""
    if not is_timm(t):
        return None, ""
    name = behaves_as(t).__name__
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
    if name in _POLICIES:  # fused by match_augment (._timm_policies) on the crop, after the geometry
        return None, f"timm's {name} before the geometry (fused augmentations run on the crop)"

    if name == "ResizeKeepRatio":
        return None, ("timm's ResizeKeepRatio rounds its size per axis (decode_images' Resize(S) truncates the "
                      "longer side as torchvision does)")
    if name == "ToNumpy":
        return None, "ToNumpy returns a NumPy array (runs per sample after the op)"
    return None, f"timm's {name} has no decode_images equivalent"


def _erasing(t: Any) -> tuple[Any, str]:
    return TimmErasing(t), ""  # raises ValueError for bad arguments
