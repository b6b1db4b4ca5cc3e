"""Augment rows that follow Pillow: what torchvision's transforms (and timm's ops) do to a PIL image.

Geometry: torchvision calls Pillow on a PIL image (``F.rotate``: ``img.rotate(angle, resample, expand, center,
fillcolor)``; ``F.affine``: ``img.transform(size, AFFINE, _get_inverse_affine_matrix(...), resample,
fillcolor)``), so the rows are ``fill`` + ``pil_affine_low`` + ``pil_affine`` with Pillow's own double matrix
(:func:`rotate_matrix`, :func:`affine_matrix`): each coefficient travels as float32 parts hi + mid + lo whose
sum is the double exactly (:func:`split_double`), so the op samples where Pillow samples, bit for bit.

Colour: ``ImageEnhance``'s enhancers (brightness, contrast, saturation = ``Color``, sharpness) as
``pil_enhance``, ``adjust_hue`` (Pillow's uint8 HSV) as ``pil_hue``, ``ImageOps.autocontrast`` as
``pil_autocontrast``, Pillow's ``convert("L")`` (``RandomGrayscale``) as ``pil_enhance(Color, 0)``; posterize,
solarize, invert and equalize keep their rows (the tensor kernels give Pillow's values there).
"""

from __future__ import annotations

import math
import struct
from collections.abc import Sequence
from typing import Any

from torchvision.transforms import functional as F1
from torchvision.transforms.v2 import InterpolationMode
from torchvision.transforms.v2.functional import _geometry as F2

from ._augment_program import AugmentOp

__all__ = ["ENHANCERS", "GEOMETRY_ROWS", "affine_matrix", "affine_rows", "geometry_args", "hue_shift", "pil_fill",
           "pil_resample", "policy_rows", "rotate_matrix", "solarize_row", "split_double"]

#: op name -> the ``pil_enhance`` row's enhancer (Pillow's ImageEnhance class)
ENHANCERS = {"brightness": "Brightness", "saturation": "Color", "contrast": "Contrast", "sharpness": "Sharpness"}

#: the most rows one geometric op takes: fill, two pil_affine_low, pil_affine
GEOMETRY_ROWS = 4


def _f32(v: float) -> float:
    return struct.unpack("<f", struct.pack("<f", v))[0]


def split_double(v: float) -> tuple[float, float, float]:
    """float32 values ``(hi, mid, lo)`` with ``hi + (mid + lo) == v`` exactly in double (the op's sum): ``hi``
    is ``v`` rounded to float32, ``mid`` the rest rounded, ``lo`` what is left (at most 6 bits: a double has
    53). Exact for 0 and for 2**-90 <= |v| < 2**127 (Pillow's matrices: sines, cosines, image sizes); below
    that ``lo`` may underflow float32 and the sum is within 2**-149 of ``v``."""
    hi = _f32(v)
    mid = _f32(v - hi)  # v - hi is exact in double (hi is v to 24 bits)
    lo = _f32(v - hi - mid)  # the last bits: exact in float32
    return hi, mid, lo


def pil_resample(mode: Any) -> int | None:
    """The index of the ``pil_affine`` row's resample choice (0 NEAREST, 1 BILINEAR, 2 BICUBIC) of a torchvision
    interpolation; None
    for the others (Pillow's affine takes only these three)."""
    if isinstance(mode, int) and not isinstance(mode, bool):
        mode = {0: InterpolationMode.NEAREST, 2: InterpolationMode.BILINEAR, 3: InterpolationMode.BICUBIC}.get(mode)
    if isinstance(mode, str):
        mode = {m.value: m for m in InterpolationMode}.get(mode)
    return {InterpolationMode.NEAREST: 0, InterpolationMode.BILINEAR: 1, InterpolationMode.BICUBIC: 2}.get(mode)


def _clip8(v: Any) -> int:
    return min(255, max(0, int(v)))


def pil_fill(fill: Any) -> tuple[float, float, float] | None:
    """torchvision's fill of an RGB PIL image as Pillow applies it: ``None`` black, one number for every band,
    a sequence of 1 or 3 numbers; each ``int()``-truncated (torchvision's ``_parse_fill``) and clipped to 0..255
    (Pillow's fill colour). A dict (v2) of one value counts as that value. None for anything else."""
    if isinstance(fill, dict):
        found = {pil_fill(v) for v in fill.values()}
        return found.pop() if len(found) == 1 else (0.0, 0.0, 0.0) if not found else None
    if fill is None:
        return (0.0, 0.0, 0.0)
    values = list(fill) if isinstance(fill, (list, tuple)) else [fill]
    if len(values) == 1:
        values *= 3
    if len(values) != 3:
        return None
    try:
        return tuple(float(min(255, max(0, int(v)))) for v in values)
    except (TypeError, ValueError, OverflowError):
        return None


def rotate_matrix(degrees: float, width: int, height: int, center: Sequence[float] | None = None
                  ) -> tuple[float, ...] | None:
    """The AFFINE data of Pillow's ``Image.rotate(degrees, center=center)`` (``expand=False``; ``center`` None:
    ``(w / 2, h / 2)``), its arithmetic step for step; ``None`` for its copy fast path (angle 0 mod 360 without
    a centre). Its transpose fast paths (180, and 90 / 270 of a square image, without a centre) are the matrices
    that give those transposes exactly."""
    angle = degrees % 360.0
    w, h = width, height
    if not center:
        if angle == 0:
            return None
        if angle == 180:
            return (-1.0, 0.0, float(w), 0.0, -1.0, float(h))
        if angle in (90, 270) and w == h:
            return (0.0, -1.0, float(w), 1.0, 0.0, 0.0) if angle == 90 else (0.0, 1.0, 0.0, -1.0, 0.0, float(h))
        center = (w / 2, h / 2)
    cx, cy = center[0], center[1]
    rad = -math.radians(angle)
    m = [round(math.cos(rad), 15), round(math.sin(rad), 15), 0.0, round(-math.sin(rad), 15), round(math.cos(rad), 15), 0.0]
    a, b, c, d, e, f = m
    x, y = -cx - 0, -cy - 0  # Pillow's -center - post_trans, post_trans (0, 0)
    m[2], m[5] = a * x + b * y + c, d * x + e * y + f
    m[2] += cx
    m[5] += cy
    return tuple(float(v) for v in m)


def affine_matrix(angle: float, translate: Sequence[float], scale: float, shear: Sequence[float],
                  center: Sequence[float] | None, width: int, height: int, v2: bool = False) -> tuple[float, ...]:
    """The AFFINE data torchvision's ``F.affine`` gives Pillow for a PIL image: its inverse matrix about
    ``center`` in pixels (``None``: ``(w * 0.5, h * 0.5)``), computed by torchvision itself (``v2``: by
    ``torchvision.transforms.v2.functional``, whose arithmetic differs in the last bits)."""
    c = [width * 0.5, height * 0.5] if center is None else list(center)
    inverse = F2._get_inverse_affine_matrix if v2 else F1._get_inverse_affine_matrix
    m = inverse(c, float(angle), list(translate), float(scale), list(shear))
    return tuple(float(v) for v in m)


def affine_rows(matrix: Sequence[float], resample: int, fill: tuple[float, float, float] | None, cls: str, name: str,
                magnitude: float | None) -> list[AugmentOp]:
    """``img.transform(img.size, AFFINE, matrix, resample, fillcolor=fill)`` as rows: ``fill`` (left out for
    ``fill=None``: the program's fill colour so far), up to two ``pil_affine_low`` (the mid and lo parts, where
    not zero), ``pil_affine`` (the hi parts)."""
    parts = [split_double(float(v)) for v in matrix]
    rows = [] if fill is None else [AugmentOp("fill", {"color": fill}, cls, name)]
    for k in (1, 2):
        low = tuple(p[k] for p in parts)
        if any(low):
            rows.append(AugmentOp("pil_affine_low", {"data": low}, cls, name))
    rows.append(AugmentOp("pil_affine", {"data": tuple(p[0] for p in parts), "resample": resample}, cls, name,
                          magnitude))
    return rows


def hue_shift(hue_factor: float) -> int:
    """torchvision's shift of Pillow's uint8 hue: ``np.int32(hue_factor * 255).astype(np.uint8)``."""
    return int(hue_factor * 255) % 256


def geometry_args(t: Any) -> tuple[tuple[int, tuple[float, float, float]] | None, str]:
    """(resample, fill colour) of a geometric transform ``t`` on a PIL image, or (None, why not)."""
    resample = pil_resample(t.interpolation)
    if resample is None:
        return None, f"interpolation {t.interpolation} (Pillow's affine is nearest, bilinear or bicubic)"
    fill = pil_fill(t.fill)
    if fill is None:
        return None, f"fill={t.fill!r} (one number or 1 or 3 numbers for an RGB PIL image)"
    return (resample, fill), ""


def solarize_row(threshold: float, cls: str, name: str, magnitude: float | None = None) -> AugmentOp:
    """ImageOps.solarize(img, threshold) as a row: a value v is inverted where v >= threshold (a double), i.e.
    where v >= ceil(threshold), a whole number the float32 row holds exactly; above 255 nothing is."""
    t = math.ceil(threshold)
    return AugmentOp("identity", {}, cls, name, magnitude) if t > 255 else \
        AugmentOp("solarize", {"threshold": float(t)}, cls, name, magnitude)


_POLICY_COLOUR = {"Brightness": "brightness", "Color": "saturation", "Contrast": "contrast", "Sharpness": "sharpness"}


def policy_rows(name: str, magnitude: float, v1: bool, resample: int, fill: tuple[float, float, float], h: int,
                w: int, cls: str) -> list[AugmentOp] | None:
    """torchvision's ``_apply_op`` / ``_apply_image_or_video_transform`` of a PIL image as rows (``v1``: the v1
    policies' call, else v2's): ``F.affine`` / ``F.rotate`` are Pillow's (``pil_affine`` with its matrix), the
    enhancements ``ImageEnhance``'s, AutoContrast ``ImageOps``', Solarize compared with the double threshold
    (v2: ``255.0 * magnitude``); None for the ops whose tensor rows give Pillow's values (Identity,
    Posterize, Equalize, Invert)."""
    if name in ("ShearX", "ShearY"):  # F.affine(angle=0, translate=[0, 0], scale=1, shear, center=[0, 0])
        deg = math.degrees(math.atan(magnitude))
        shear = (deg, 0.0) if name == "ShearX" else (0.0, deg)
        return affine_rows(affine_matrix(0.0, (0, 0), 1.0, shear, (0, 0), w, h, not v1), resample, fill, cls, name,
                           magnitude)
    if name in ("TranslateX", "TranslateY"):  # F.affine(translate=[int(magnitude), 0] or [0, ...]), centre None
        t = (int(magnitude), 0) if name == "TranslateX" else (0, int(magnitude))
        return affine_rows(affine_matrix(0.0, t, 1.0, (0.0, 0.0), None, w, h, not v1), resample, fill, cls, name,
                           magnitude)
    if name == "Rotate":  # F.rotate(angle): Image.rotate
        m = rotate_matrix(magnitude, w, h)
        return [AugmentOp("identity", {}, cls, name, magnitude)] if m is None else \
            affine_rows(m, resample, fill, cls, name, magnitude)
    if name in _POLICY_COLOUR:
        return [AugmentOp("pil_enhance", {"enhancer": ENHANCERS[_POLICY_COLOUR[name]], "factor": 1.0 + magnitude}, cls,
                          name, magnitude)]
    if name == "AutoContrast":
        return [AugmentOp("pil_autocontrast", {}, cls, name, magnitude)]
    if name == "Solarize":
        return [solarize_row(magnitude if v1 else 255.0 * magnitude, cls, name, magnitude)]
    return None
