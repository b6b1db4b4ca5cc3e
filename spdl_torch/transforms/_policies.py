"""Samplers of torchvision's random augmentations (v1 and v2 classes): each turns a sample's stream
(:class:`~._augment_program.Rng`) and the crop size into the ops that sample gets, with torchvision's rules
for which op, which magnitude, which sign and which probability.

The rows follow what torchvision computes for the image the transform gets: its tensor kernels for a tensor,
Pillow's own rules (:mod:`._pil_rows`) for a PIL image (``pil=True``: a v1 pipeline before its
``ToTensor`` / ``PILToTensor``), where torchvision calls ``img.rotate``, ``img.transform(AFFINE)``,
``ImageEnhance``, ``ImageOps`` and ``convert("HSV")``. ``AugMix`` converts a PIL image to a tensor first, so
its ops keep the tensor rule either way; ``GaussianBlur`` does the same.

:func:`match_augment` maps one transform onto a sampler, ``(None, why not)`` when it has no fused form, and
raises ``ValueError`` (naming the transform and the argument) for arguments torchvision would fail on or
misuse later (a magnitude out of range, ``p`` outside [0, 1], an unknown policy, an empty op list).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torchvision.transforms as T1
from torchvision.transforms import v2
from torchvision.transforms.v2 import InterpolationMode

from . import _pil_rows as pil_rows
from ._augment_program import ERASE_RANDOM, ERASE_VALUE, NO_FILL, AugmentOp, Rng, affine_args

__all__ = ["ERASERS", "Sampler", "match_augment", "match_erasing"]

ERASERS = (T1.RandomErasing, v2.RandomErasing)
_AUTO = (T1.AutoAugment, v2.AutoAugment, T1.RandAugment, v2.RandAugment, T1.TrivialAugmentWide, v2.TrivialAugmentWide)


class Sampler:
    """Draws one transform's ops: ``draw(rng, height, width)`` -> list of :class:`AugmentOp` (at most
    ``max_rows`` of them); ``name`` is the transform's class name."""

    def __init__(self, name: str, max_rows: int, draw: Callable[[Rng, int, int], list[AugmentOp]]) -> None:
        self.name, self.max_rows, self.draw = name, max_rows, draw

    def __repr__(self) -> str:
        return f"Sampler({self.name}, max_rows={self.max_rows})"


def _bad(t: Any, arg: str, value: Any, want: str) -> ValueError:
    return ValueError(f"{type(t).__name__}: {arg}={value!r} is invalid ({want})")


def _check_p(t: Any, p: Any, arg: str = "p") -> float:
    if not isinstance(p, (int, float)) or not 0.0 <= float(p) <= 1.0:
        raise _bad(t, arg, p, "a probability in [0, 1]")
    return float(p)


def _interp(mode: Any) -> int | None:
    """Row interpolation code: 0 nearest, 1 bilinear; None for anything else."""
    if mode in (InterpolationMode.NEAREST, "nearest", 0):
        return 0
    if mode in (InterpolationMode.BILINEAR, "bilinear", 2):
        return 1
    return None


def _fill(fill: Any) -> float | None:
    """One grey fill value, ``NO_FILL`` for ``fill=None`` (torchvision then pads with zeros without its
    fill mask: a bilinear edge differs from ``fill=0``), or None when it differs per channel or is out of
    0..255."""
    if isinstance(fill, dict):
        values = {_fill(v) for v in fill.values()}
        return values.pop() if len(values) == 1 else (NO_FILL if not values else None)
    if fill is None:
        return NO_FILL
    if isinstance(fill, (int, float)):
        value = float(fill)
    else:
        vals = {float(f) for f in fill}
        if len(vals) != 1:
            return None
        value = vals.pop()
    return value if 0.0 <= value <= 255.0 else None


def _geometry_args(t: Any) -> tuple[tuple[int, float] | None, str]:
    interp = _interp(t.interpolation)
    if interp is None:
        return None, f"interpolation {t.interpolation} (the fused affine is nearest or bilinear)"
    fill = _fill(t.fill)
    if fill is None:
        return None, f"fill={t.fill!r} (the fused affine fills with one grey value in 0..255)"
    return (interp, fill), ""


def _pil_geometry_args(t: Any) -> tuple[tuple[int, tuple[float, float, float]] | None, str]:
    """(resample, fill colour) of a geometric transform on a PIL image, or (None, why not)."""
    resample = pil_rows.pil_resample(t.interpolation)
    if resample is None:
        return None, f"interpolation {t.interpolation} (Pillow's affine is nearest, bilinear or bicubic)"
    fill = pil_rows.pil_fill(t.fill)
    if fill is None:
        return None, f"fill={t.fill!r} (one number or 1 or 3 numbers for an RGB PIL image)"
    return (resample, fill), ""


# ----------------------------------------------------------------------------------------------- policies

def _policy_op(name: str, magnitude: float, v1: bool, interp: int, fill: float, h: int, w: int) -> tuple[str, tuple]:
    """torchvision's ``_apply_op`` / ``_apply_image_or_video_transform`` as (op, args)."""
    if name == "Identity":
        return "identity", ()
    if name in ("ShearX", "ShearY"):
        deg = math.degrees(math.atan(magnitude))
        shear = (deg, 0.0) if name == "ShearX" else (0.0, deg)
        return "affine", affine_args(0.0, (0, 0), shear, (0, 0), interp, fill, h, w)
    if name in ("TranslateX", "TranslateY"):
        t = (int(magnitude), 0) if name == "TranslateX" else (0, int(magnitude))
        return "affine", affine_args(0.0, t, (0.0, 0.0), None, interp, fill, h, w)
    if name == "Rotate":  # F.rotate(angle) is F.affine(-angle)
        return "affine", affine_args(-magnitude, (0, 0), (0.0, 0.0), None, interp, fill, h, w)
    if name in ("Brightness", "Color", "Contrast", "Sharpness"):
        op = {"Brightness": "brightness", "Color": "saturation", "Contrast": "contrast", "Sharpness": "sharpness"}[name]
        return op, (1.0 + magnitude,)
    if name == "Posterize":
        return "posterize", (float(int(magnitude)),)
    if name == "Solarize":  # v2: a fraction of the dtype's maximum; v1: in 0..255
        return "solarize", (magnitude if v1 else 255.0 * magnitude,)
    if name in ("AutoContrast", "Equalize", "Invert"):
        return name.lower(), ()
    raise ValueError(f"no fused form of the policy op {name!r}")


_PIL_COLOUR = {"Brightness": "brightness", "Color": "saturation", "Contrast": "contrast", "Sharpness": "sharpness"}


def _pil_policy_op(name: str, magnitude: float, v1: bool, resample: int, fill: tuple[float, float, float], h: int,
                   w: int, cls: str) -> list[AugmentOp]:
    """torchvision's ``_apply_op`` / ``_apply_image_or_video_transform`` of a PIL image as rows: ``F.affine`` /
    ``F.rotate`` are Pillow's (``pil_affine`` with its matrix), the enhancements ``ImageEnhance``'s."""
    if name in ("ShearX", "ShearY"):  # F.affine(angle=0, translate=[0, 0], scale=1, shear, center=[0, 0])
        deg = math.degrees(math.atan(magnitude))
        shear = (deg, 0.0) if name == "ShearX" else (0.0, deg)
        return pil_rows.affine_rows(pil_rows.affine_matrix(0.0, (0, 0), 1.0, shear, (0, 0), w, h, not v1), resample,
                                    fill, cls, name, magnitude)
    if name in ("TranslateX", "TranslateY"):  # F.affine(translate=[int(magnitude), 0] or [0, ...]), centre None
        t = (int(magnitude), 0) if name == "TranslateX" else (0, int(magnitude))
        return pil_rows.affine_rows(pil_rows.affine_matrix(0.0, t, 1.0, (0.0, 0.0), None, w, h, not v1), resample,
                                    fill, cls, name, magnitude)
    if name == "Rotate":  # F.rotate(angle): Image.rotate
        m = pil_rows.rotate_matrix(magnitude, w, h)
        if m is None:
            return [AugmentOp("identity", (), cls, name, magnitude)]
        return pil_rows.affine_rows(m, resample, fill, cls, name, magnitude)
    if name in _PIL_COLOUR:
        return [AugmentOp("pil_enhance", (pil_rows.ENHANCERS[_PIL_COLOUR[name]], 1.0 + magnitude), cls, name, magnitude)]
    if name == "AutoContrast":
        return [AugmentOp("pil_autocontrast", (), cls, name, magnitude)]
    if name == "Solarize":  # ImageOps.solarize compares with the double threshold (v2: 255.0 * magnitude)
        return [_pil_solarize(magnitude if v1 else 255.0 * magnitude, cls, name, magnitude)]
    op, args = _policy_op(name, magnitude, v1, 0, NO_FILL, h, w)  # the point and histogram ops: Pillow's values
    return [AugmentOp(op, args, cls, name, magnitude)]


def _pil_solarize(threshold: float, cls: str, name: str, magnitude: float | None = None) -> AugmentOp:
    """ImageOps.solarize(img, threshold) as a row: a value v is inverted where v >= threshold (a double), i.e.
    where v >= ceil(threshold), a whole number the float32 row holds exactly; above 255 nothing is."""
    t = math.ceil(threshold)
    return AugmentOp("identity", (), cls, name, magnitude) if t > 255 else \
        AugmentOp("solarize", (float(t),), cls, name, magnitude)


def _op_maker(cls: str, v1: bool, interp: Any, fill: Any, h: int, w: int, pil: bool = False
              ) -> Callable[[str, float], list[AugmentOp]]:
    """A policy's ``op(name, signed magnitude) -> [AugmentOp, ...]`` (one row, or a PIL image's geometric op:
    :data:`~._pil_rows.GEOMETRY_ROWS` at most), one list per (name, magnitude): the magnitudes are a few bins.
    ``pil``: Pillow's rules, ``interp`` the ``pil_affine`` resample and ``fill`` the RGB fill colour."""
    cache: dict[tuple[str, float], list[AugmentOp]] = {}

    def op(name: str, magnitude: float) -> list[AugmentOp]:
        found = cache.get((name, magnitude))
        if found is None:
            if pil:
                found = _pil_policy_op(name, magnitude, v1, interp, fill, h, w, cls)
            else:
                kind, a = _policy_op(name, magnitude, v1, interp, fill, h, w)
                found = [AugmentOp(kind, a, cls, name, magnitude)]
            cache[(name, magnitude)] = found
        return list(found)

    return op


def _pick(rng: Rng, table: list, bin_index: Callable[[Rng], int]) -> tuple[str, float]:
    """One op of a policy's ``table`` drawn uniformly, its magnitude the bin ``bin_index(rng)`` picks (0.0 for an
    op without magnitudes), negated with probability 1/2 when the op is signed: torchvision's order of draws."""
    name, (mags, signed) = table[rng.randint(len(table))]
    mag = 0.0
    if mags is not None:
        mag = mags[bin_index(rng)]
        if signed and rng.random() < 0.5:
            mag = -mag
    return name, mag


def _space(t: Any, num_bins: int, h: int, w: int) -> dict[str, tuple[list[float] | None, bool]]:
    """The transform's own augmentation space (torchvision's tables, evaluated for the crop size)."""
    out: dict[str, tuple[list[float] | None, bool]] = {}
    if type(t).__module__.startswith("torchvision.transforms.v2"):
        for name, (fn, signed) in t._AUGMENTATION_SPACE.items():
            mags = fn(num_bins, h, w)
            out[name] = (None if mags is None else [float(m) for m in mags], signed)
        return out
    space = t._augmentation_space(num_bins) if isinstance(t, T1.TrivialAugmentWide) else \
        t._augmentation_space(num_bins, (h, w))
    for name, (mags, signed) in space.items():
        out[name] = (None if mags.ndim == 0 else [float(m) for m in mags], signed)
    return out


def _check_bins(t: Any) -> int:
    bins = t.num_magnitude_bins
    if not isinstance(bins, int) or isinstance(bins, bool) or bins < 2:
        raise _bad(t, "num_magnitude_bins", bins, "an int >= 2")
    return bins


def _auto_sampler(t: Any, h: int, w: int, pil: bool) -> tuple[Sampler | None, str]:
    v1 = not type(t).__module__.startswith("torchvision.transforms.v2")
    cls = type(t).__name__
    args, why = _pil_geometry_args(t) if pil else _geometry_args(t)
    if args is None:
        return None, why
    interp, fill = args
    rows = pil_rows.GEOMETRY_ROWS if pil else 1  # the most rows of one op

    op = _op_maker(cls, v1, interp, fill, h, w, pil)

    if isinstance(t, (T1.TrivialAugmentWide, v2.TrivialAugmentWide)):
        bins = _check_bins(t)
        table = list(_space(t, bins, h, w).items())

        def draw(rng: Rng, _h: int, _w: int) -> list[AugmentOp]:
            return op(*_pick(rng, table, lambda r: r.randint(bins)))

        return Sampler(cls, rows, draw), ""
    if isinstance(t, (T1.RandAugment, v2.RandAugment)):
        bins = _check_bins(t)
        num_ops, m = t.num_ops, t.magnitude
        if not isinstance(num_ops, int) or isinstance(num_ops, bool) or num_ops < 0:
            raise _bad(t, "num_ops", num_ops, "an int >= 0")
        if not isinstance(m, int) or isinstance(m, bool) or not 0 <= m < bins:
            raise _bad(t, "magnitude", m, f"an int in [0, num_magnitude_bins={bins})")
        table = list(_space(t, bins, h, w).items())

        def draw(rng: Rng, _h: int, _w: int) -> list[AugmentOp]:
            return [row for _ in range(num_ops) for row in op(*_pick(rng, table, lambda _: m))]

        return Sampler(cls, num_ops * rows, draw), ""
    policy = t.policy
    if policy not in list(T1.AutoAugmentPolicy):
        raise _bad(t, "policy", policy, "an AutoAugmentPolicy: IMAGENET, CIFAR10 or SVHN")
    policies = t.policies if v1 else t._policies
    space = _space(t, 10, h, w)

    def draw(rng: Rng, _h: int, _w: int) -> list[AugmentOp]:
        ops = []
        for name, p, idx in policies[rng.randint(len(policies))]:
            if not rng.random() < p:
                continue
            mags, signed = space[name]
            mag = 0.0
            if mags is not None and idx is not None:
                mag = mags[idx]
                if signed and rng.random() < 0.5:
                    mag = -mag
            ops.extend(op(name, mag))
        return ops

    return Sampler(cls, rows * max(len(sub) for sub in policies), draw), ""


def _int_arg(t: Any, arg: str, low: int, high: float = math.inf) -> int:
    value = getattr(t, arg)
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        want = f"an int in [{low}, {high}]" if high != math.inf else f"an int >= {low}"
        raise _bad(t, arg, value, want)
    return value


def _augmix(t: Any, cls: str, h: int, w: int) -> tuple[Sampler | None, str]:
    """torchvision's AugMix: weights m ~ Dirichlet([alpha, alpha]) (m0: the image's), chain weights
    Dirichlet([alpha] * mixture_width) * m1; each chain ``chain_depth`` ops (<= 0: uniform in 1..3), each op
    uniform over the augmentation space, its magnitude bin uniform in [0, severity) of the space's 10 bins,
    negated with probability 1/2 when signed. Rows: mix_begin(m0), per chain its ops and mix_add(w_i),
    mix_end(0). torchvision converts a PIL image to a tensor first, so the ops follow the tensor rule for both."""
    v1 = not type(t).__module__.startswith("torchvision.transforms.v2")
    severity = _int_arg(t, "severity", 1, t._PARAMETER_MAX)
    width = _int_arg(t, "mixture_width", 1)
    depth = t.chain_depth
    if not isinstance(depth, int) or isinstance(depth, bool):
        raise _bad(t, "chain_depth", depth, "an int (<= 0: a depth drawn from 1..3)")
    alpha = t.alpha
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not math.isfinite(alpha) or alpha <= 0:
        raise _bad(t, "alpha", alpha, "a finite number > 0")
    alpha = float(alpha)
    args, why = _geometry_args(t)
    if args is None:
        return None, why
    interp, fill = args
    space = _space(t, t._PARAMETER_MAX, h, w)
    if not v1 and not t.all_ops:  # v2 keeps the partial table apart; v1's _augmentation_space reads all_ops
        space = {k: space[k] for k in t._PARTIAL_AUGMENTATION_SPACE}
    table = list(space.items())
    op = _op_maker(cls, v1, interp, fill, h, w)

    def mix(kind: str, value: float) -> AugmentOp:
        return AugmentOp(kind, (value,), cls, kind, None if kind == "mix_end" else value)

    def draw(rng: Rng, _h: int, _w: int) -> list[AugmentOp]:
        m0, m1 = rng.dirichlet((alpha, alpha))
        weights = [d * m1 for d in rng.dirichlet([alpha] * width)]
        ops = [mix("mix_begin", m0)]
        for wi in weights:
            for _ in range(depth if depth > 0 else 1 + rng.randint(3)):
                ops.extend(op(*_pick(rng, table, lambda r: r.randint(severity))))
            ops.append(mix("mix_add", wi))
        ops.append(mix("mix_end", 0.0))
        return ops

    max_depth = depth if depth > 0 else 3
    return Sampler(cls, 2 + width * (max_depth + 1), draw), ""


# ------------------------------------------------------------------------------------- single transforms

def _maybe(p: float, ops: Callable[[Rng, int, int], list[AugmentOp]]) -> Callable[[Rng, int, int], list[AugmentOp]]:
    """Applied with probability ``p`` (torchvision: skipped when ``rand() >= p``)."""

    def draw(rng: Rng, h: int, w: int) -> list[AugmentOp]:
        return ops(rng, h, w) if rng.random() < p else []

    return draw


def _fixed(cls: str, op: str, args: tuple = (), name: str | None = None) -> Callable[[Rng, int, int], list[AugmentOp]]:
    return lambda rng, h, w: [AugmentOp(op, args, cls, name or op)]


def _range(t: Any, arg: str, value: Any, low: float, high: float) -> tuple[float, float] | None:
    """A (min, max) parameter range of ColorJitter & co., checked; None: not drawn."""
    if value is None:
        return None
    lo, hi = (float(v) for v in value)
    if not low <= lo <= hi <= high:
        raise _bad(t, arg, value, f"a range min <= max within [{low}, {high}]")
    return lo, hi


def _color_jitter(t: Any, cls: str, pil: bool) -> Sampler:
    ranges = [_range(t, "brightness", t.brightness, 0.0, math.inf), _range(t, "contrast", t.contrast, 0.0, math.inf),
              _range(t, "saturation", t.saturation, 0.0, math.inf), _range(t, "hue", t.hue, -0.5, 0.5)]
    names = ("brightness", "contrast", "saturation", "hue")

    def row(k: int, factor: float) -> AugmentOp:
        if not pil:
            return AugmentOp(names[k], (factor,), cls, names[k], factor)
        if k == 3:  # adjust_hue of a PIL image: Pillow's uint8 hue shifted by int(factor * 255)
            return AugmentOp("pil_hue", (float(pil_rows.hue_shift(factor)),), cls, "hue", factor)
        return AugmentOp("pil_enhance", (pil_rows.ENHANCERS[names[k]], factor), cls, names[k], factor)

    def draw(rng: Rng, h: int, w: int) -> list[AugmentOp]:
        order = rng.randperm(4)
        factors = [None if r is None else rng.uniform(r[0], r[1]) for r in ranges]
        return [row(k, factors[k]) for k in order if factors[k] is not None]

    return Sampler(cls, sum(r is not None for r in ranges), draw)


def _rotation(t: Any, cls: str, pil: bool) -> tuple[Sampler | None, str]:
    if t.expand:
        return None, "RandomRotation(expand=True) changes the image size"
    args, why = _pil_geometry_args(t) if pil else _geometry_args(t)
    if args is None:
        return None, why
    lo, hi = (float(d) for d in t.degrees)
    center = t.center

    def draw(rng: Rng, h: int, w: int) -> list[AugmentOp]:
        angle = rng.uniform(lo, hi)
        if pil:  # F.rotate of a PIL image: img.rotate(angle, resample, False, center, fillcolor)
            m = pil_rows.rotate_matrix(angle, w, h, center)
            return [AugmentOp("identity", (), cls, "Rotate", angle)] if m is None else \
                pil_rows.affine_rows(m, *args, cls, "Rotate", angle)
        return [AugmentOp("affine", affine_args(-angle, (0, 0), (0.0, 0.0), center, *args, h, w), cls, "Rotate", angle)]

    return Sampler(cls, pil_rows.GEOMETRY_ROWS if pil else 1, draw), ""


def _affine(t: Any, cls: str, pil: bool) -> tuple[Sampler | None, str]:
    if t.scale is not None and not pil:
        return None, "RandomAffine with scale of a tensor (the fused tensor affine has no scale)"
    args, why = _pil_geometry_args(t) if pil else _geometry_args(t)
    if args is None:
        return None, why
    lo, hi = (float(d) for d in t.degrees)
    translate = None if t.translate is None else tuple(float(v) for v in t.translate)
    if translate is not None and not all(0.0 <= v <= 1.0 for v in translate):
        raise _bad(t, "translate", t.translate, "fractions in [0, 1]")
    scale = None if t.scale is None else tuple(float(v) for v in t.scale)
    if scale is not None and not 0.0 < scale[0] <= scale[1]:
        raise _bad(t, "scale", t.scale, "0 < min <= max")
    if scale is not None and scale[0] < 1e-30:  # 1 / scale in Pillow's matrix: past float32's range of the rows
        return None, f"RandomAffine(scale={t.scale!r}) below 1e-30 (its matrix leaves float32's range)"
    shear = None if t.shear is None else [float(s) for s in t.shear]
    center = t.center
    v2_class = type(t).__module__.startswith("torchvision.transforms.v2")

    def draw(rng: Rng, h: int, w: int) -> list[AugmentOp]:  # torchvision's draws: angle, translate, scale, shear
        angle = rng.uniform(lo, hi)
        tx = ty = 0
        if translate is not None:
            max_dx, max_dy = translate[0] * w, translate[1] * h
            tx = int(round(rng.uniform(-max_dx, max_dx)))
            ty = int(round(rng.uniform(-max_dy, max_dy)))
        s = 1.0 if scale is None else rng.uniform(scale[0], scale[1])
        sx = sy = 0.0
        if shear is not None:
            sx = rng.uniform(shear[0], shear[1])
            if len(shear) == 4:
                sy = rng.uniform(shear[2], shear[3])
        if pil:  # F.affine of a PIL image: img.transform(AFFINE, torchvision's inverse matrix)
            m = pil_rows.affine_matrix(angle, (tx, ty), s, (sx, sy), center, w, h, v2_class)
            return pil_rows.affine_rows(m, *args, cls, "Affine", angle)
        return [AugmentOp("affine", affine_args(angle, (tx, ty), (sx, sy), center, *args, h, w), cls, "Affine", angle)]

    return Sampler(cls, pil_rows.GEOMETRY_ROWS if pil else 1, draw), ""


def _blur(t: Any, cls: str) -> Sampler:
    kx, ky = (int(k) for k in t.kernel_size)
    if kx <= 0 or ky <= 0 or kx % 2 == 0 or ky % 2 == 0:
        raise _bad(t, "kernel_size", t.kernel_size, "odd positive ints")
    lo, hi = (float(s) for s in t.sigma)
    if not 0.0 < lo <= hi:
        raise _bad(t, "sigma", t.sigma, "0 < min <= max")

    def draw(rng: Rng, h: int, w: int) -> list[AugmentOp]:
        s = rng.uniform(lo, hi)
        return [AugmentOp("gaussian_blur", (float(kx), float(ky), s, s), cls, "GaussianBlur", s)]

    return Sampler(cls, 1, draw)


def match_augment(t: Any, h: int, w: int, pil: bool = False) -> tuple[Sampler | None, str]:
    """A sampler for the uint8 augmentation ``t`` on ``h x w`` crops, ``(None, why not)`` when it has
    none, ``(None, "")`` when ``t`` is not an augmentation at all. ``pil``: the transform gets a PIL image
    (its rows then follow Pillow's rules, as torchvision's ops on a PIL image do).

    Raises:
        ValueError: an argument torchvision would fail on or misuse (naming the transform and argument).
    """
    typ, cls = type(t), type(t).__name__
    if isinstance(t, _AUTO) and typ.__module__.startswith("torchvision.transforms"):
        return _auto_sampler(t, h, w, pil)
    if typ in (T1.AugMix, v2.AugMix):
        return _augmix(t, cls, h, w)
    if typ in (T1.ColorJitter, v2.ColorJitter):
        return _color_jitter(t, cls, pil), ""
    if typ in (T1.RandomRotation, v2.RandomRotation):
        return _rotation(t, cls, pil)
    if typ in (T1.RandomAffine, v2.RandomAffine):
        return _affine(t, cls, pil)
    if typ in (T1.GaussianBlur, v2.GaussianBlur):  # a PIL image too: torchvision blurs it as a tensor
        return _blur(t, cls), ""
    simple = {  # op, args: the tensor rule; the PIL image's (Pillow's) where it differs
        (T1.RandomGrayscale, v2.RandomGrayscale): (("grayscale", ()), ("pil_enhance", (pil_rows.ENHANCERS["saturation"], 0.0))),
        (T1.RandomAutocontrast, v2.RandomAutocontrast): (("autocontrast", ()), ("pil_autocontrast", ())),
        (T1.RandomEqualize, v2.RandomEqualize): (("equalize", ()),) * 2,
        (T1.RandomInvert, v2.RandomInvert): (("invert", ()),) * 2,
    }
    for types, forms in simple.items():
        if typ in types:
            return Sampler(cls, 1, _maybe(_check_p(t, t.p), _fixed(cls, *forms[pil], forms[0][0]))), ""
    if typ in (T1.RandomPosterize, v2.RandomPosterize):
        if not isinstance(t.bits, int) or not 0 <= t.bits <= 8:
            raise _bad(t, "bits", t.bits, "an int in [0, 8]")
        if pil and t.bits == 0:
            return None, "RandomPosterize(bits=0) of a PIL image (Pillow's posterize decides: black or an error)"
        return Sampler(cls, 1, _maybe(_check_p(t, t.p), _fixed(cls, "posterize", (float(t.bits),)))), ""
    if typ in (T1.RandomSolarize, v2.RandomSolarize):
        if pil:
            if not math.isfinite(float(t.threshold)):
                raise _bad(t, "threshold", t.threshold, "a finite number")
            op = _pil_solarize(float(t.threshold), cls, "solarize")
            return Sampler(cls, 1, _maybe(_check_p(t, t.p), _fixed(cls, op.op, op.args, "solarize"))), ""
        if not float(t.threshold) <= 255.0:
            raise _bad(t, "threshold", t.threshold, "at most 255 for uint8 images")
        return Sampler(cls, 1, _maybe(_check_p(t, t.p), _fixed(cls, "solarize", (float(t.threshold),)))), ""
    if typ in (T1.RandomAdjustSharpness, v2.RandomAdjustSharpness):
        if not float(t.sharpness_factor) >= 0.0:
            raise _bad(t, "sharpness_factor", t.sharpness_factor, "a non-negative number")
        factor = float(t.sharpness_factor)
        op, args = ("pil_enhance", (pil_rows.ENHANCERS["sharpness"], factor)) if pil else ("sharpness", (factor,))
        return Sampler(cls, 1, _maybe(_check_p(t, t.p), _fixed(cls, op, args, "sharpness"))), ""
    if typ in (T1.RandomApply, v2.RandomApply):
        return _random_apply(t, cls, h, w, pil)
    return None, ""


def _random_apply(t: Any, cls: str, h: int, w: int, pil: bool) -> tuple[Sampler | None, str]:
    subs = list(t.transforms)
    if not subs:
        raise _bad(t, "transforms", subs, "a non-empty list of transforms")
    p = _check_p(t, t.p)
    inner = []
    for sub in subs:
        s, why = match_augment(sub, h, w, pil)
        if s is None:
            return None, f"RandomApply of {type(sub).__name__}: {why or 'not a fusable augmentation'}"
        inner.append(s)

    def ops(rng: Rng, hh: int, ww: int) -> list[AugmentOp]:
        return [op for s in inner for op in s.draw(rng, hh, ww)]

    return Sampler(f"{cls}({', '.join(s.name for s in inner)})", sum(s.max_rows for s in inner), _maybe(p, ops)), ""


# ------------------------------------------------------------------------------------------------ erasing

def match_erasing(t: Any, channels: int) -> tuple[Sampler | None, str]:
    """A sampler of ``RandomErasing`` (v1 or v2) on the normalised slot of ``channels`` channels.

    Raises:
        ValueError: ``p``, ``scale``, ``ratio`` or ``value`` invalid (naming the transform and argument).
    """
    cls = type(t).__name__
    p = _check_p(t, t.p)
    s0, s1 = (float(s) for s in t.scale)
    if not 0.0 <= s0 <= s1 <= 1.0:
        raise _bad(t, "scale", t.scale, "0 <= min <= max <= 1")
    r0, r1 = (float(r) for r in t.ratio)
    if not 0.0 < r0 <= r1:
        raise _bad(t, "ratio", t.ratio, "0 < min <= max")
    value = t.value
    if isinstance(value, str):
        if value != "random":
            raise _bad(t, "value", value, "a number, a sequence of numbers or 'random'")
        value = None
    elif isinstance(value, (int, float)):
        value = [float(value)]
    if value is not None:
        value = [float(v) for v in value]
        if len(value) not in (1, channels):
            raise _bad(t, "value", t.value, f"1 or {channels} values (the image's channels)")
    apply = ERASE_RANDOM if value is None else ERASE_VALUE
    vals = (0.0, 0.0, 0.0) if value is None else tuple((value * 3)[:3]) if len(value) == 1 else tuple(value + [0.0] * (3 - len(value)))
    log_r0, log_r1 = math.log(r0), math.log(r1)

    def erase(rng: Rng, h: int, w: int) -> list[AugmentOp]:
        area = h * w
        for _ in range(10):
            erase_area = area * rng.uniform(s0, s1)
            aspect = math.exp(rng.uniform(log_r0, log_r1))
            eh = int(round(math.sqrt(erase_area * aspect)))
            ew = int(round(math.sqrt(erase_area / aspect)))
            if not (eh < h and ew < w):
                continue
            i, j = rng.randint(h - eh + 1), rng.randint(w - ew + 1)
            return [AugmentOp("erase", (float(apply), float(i), float(j), float(eh), float(ew), *vals), cls, "RandomErasing")]
        return []

    return Sampler(cls, 1, _maybe(p, erase)), ""

