"""Samplers of torchvision's random augmentations (v1 and v2 classes): each turns a sample's stream
(:class:`~._augment_program.Rng`) and the crop size into the ops that sample gets, with torchvision's rules
for which op, which magnitude, which sign and which probability.

The rows follow what torchvision computes for the image the transform gets: its tensor kernels for a tensor,
Pillow's own rules (:mod:`._pil_rows`) for a PIL image (``pil=True``: a v1 pipeline before its
``ToTensor`` / ``PILToTensor``), where torchvision calls ``img.rotate``, ``img.transform(AFFINE)``,
``ImageEnhance``, ``ImageOps`` and ``convert("HSV")``. ``AugMix`` converts a PIL image to a tensor first, so
its ops keep the tensor rule either way; ``GaussianBlur`` does the same.

:func:`match_augment` maps one transform onto a sampler, ``(None, why not)`` when it has no fused form, and
raises ``ValueError`` (naming the transform and the argument) for arguments torchvision itself refuses (in its
constructor, or in its forward whenever the op is drawn: a magnitude index out of range, an unknown policy,
``p`` outside [0, 1] for v2) or misuses (weights of a Dirichlet with ``alpha <= 0``). What torchvision accepts
and runs fuses with torchvision's meaning (v1's ``p`` outside [0, 1]: always / never; a negative RandAugment
``magnitude``: an index from the end; ``num_magnitude_bins=1``: the one bin torchvision's tables give), or
stays unfused with the reason. With one magnitude bin, torchvision's Posterize table gives ``int(NaN)`` bits,
which its posterize refuses: a sample that draws that Posterize raises the error torchvision raises for it
(``TypeError`` for v2, ``ValueError`` for v1).
"""

from __future__ import annotations

import math
import numbers
import operator
from collections.abc import Callable
from typing import Any

import torchvision.transforms as T1
from torchvision.transforms import v2
from torchvision.transforms.v2 import InterpolationMode

from . import _pil_rows as pil_rows
from ._augment_program import AugmentOp, Rng, Sampler, affine_args
from ._classes import behaves_as, runs_as_written

__all__ = ["ERASERS", "apply_probability", "draw_probability", "match_augment", "match_erasing"]

ERASERS = (T1.RandomErasing, v2.RandomErasing)
_AUTO = (T1.AutoAugment, v2.AutoAugment, T1.RandAugment, v2.RandAugment, T1.TrivialAugmentWide, v2.TrivialAugmentWide)


def _bad(t: Any, arg: str, value: Any, want: str) -> ValueError:
    return ValueError(f"{type(t).__name__}: {arg}={value!r} is invalid ({want})")


def _is_v1(t: Any) -> bool:
    typ = behaves_as(t) or type(t)
    return not typ.__module__.startswith("torchvision.transforms.v2")


def _int(v: Any) -> int | None:
    """``v`` as an int (Python's or NumPy's; not a bool), else None."""
    if isinstance(v, bool):
        return None
    try:
        return operator.index(v)
    except TypeError:
        return None


def _probability(t: Any, nan: float) -> float:
    """How often ``t`` (its ``p``) applies, as torchvision's forward compares ``p`` with ``torch.rand(1)``: v2's
    constructors refuse ``p`` outside [0, 1]; v1's take any number (above 1: always, below 0: never; NaN:
    ``nan``, what the comparison gives)."""
    p = t.p
    if not isinstance(p, numbers.Real):
        raise _bad(t, "p", p, "a number: the probability")
    p = float(p)
    if not _is_v1(t) and not 0.0 <= p <= 1.0:
        raise _bad(t, "p", t.p, "a probability in [0, 1]")
    return nan if math.isnan(p) else min(max(p, 0.0), 1.0)


def draw_probability(t: Any) -> float:
    """The probability that the random transform ``t`` (a flip, ``RandomGrayscale``, ``RandomInvert``, ...,
    ``RandomErasing``) applies: torchvision applies it when ``torch.rand(1) < p`` (v2: unless ``rand >= p``).

    Raises:
        ValueError: ``p`` not a number, or outside [0, 1] for a v2 transform (its constructor refuses it).
    """
    return _probability(t, 0.0 if _is_v1(t) else 1.0)


def apply_probability(t: Any) -> float:
    """The probability that ``RandomApply`` ``t`` runs its transforms (torchvision skips them when ``p <
    torch.rand(1)``, v2 when ``rand >= p``: a NaN ``p`` always runs them).

    Raises:
        ValueError: as :func:`draw_probability`.
    """
    return _probability(t, 1.0)


def _interp(mode: Any) -> int | None:
    """Row interpolation code: 0 nearest, 1 bilinear; None for anything else."""
    if mode in (InterpolationMode.NEAREST, "nearest", 0):
        return 0
    if mode in (InterpolationMode.BILINEAR, "bilinear", 2):
        return 1
    return None


_NO_FILL = "none"  # _fill's answer for fill=None


def _fill(fill: Any) -> float | str | None:
    """One grey fill value, ``"none"`` for ``fill=None`` (torchvision then pads with zeros without its
    fill mask: a bilinear edge differs from ``fill=0``), or None when it differs per channel or is out of
    0..255."""
    if isinstance(fill, dict):
        values = {_fill(v) for v in fill.values()}
        return values.pop() if len(values) == 1 else (_NO_FILL if not values else None)
    if fill is None:
        return _NO_FILL
    if isinstance(fill, (int, float)):
        value = float(fill)
    else:
        vals = {float(f) for f in fill}
        if len(vals) != 1:
            return None
        value = vals.pop()
    return value if 0.0 <= value <= 255.0 else None


def _geometry_args(t: Any) -> tuple[tuple[int, float | None] | None, str]:
    """The affine row's (interpolation, fill) of ``t`` (fill ``None``: torchvision's ``fill=None``), or (None,
    why not)."""
    interp = _interp(t.interpolation)
    if interp is None:
        return None, f"interpolation {t.interpolation} (the fused affine is nearest or bilinear)"
    fill = _fill(t.fill)
    if fill is None:
        return None, f"fill={t.fill!r} (the fused affine fills with one grey value in 0..255)"
    return (interp, None if fill == _NO_FILL else fill), ""


# ----------------------------------------------------------------------------------------------- policies

def _policy_op(name: str, magnitude: float, v1: bool, interp: int, fill: float | None, h: int, w: int
               ) -> tuple[str, dict[str, Any]]:
    """torchvision's ``_apply_op`` / ``_apply_image_or_video_transform`` as (op, its arguments by name)."""
    if name == "Identity":
        return "identity", {}
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
        return f"adjust_{op}", {f"{op}_factor": 1.0 + magnitude}
    if name == "Posterize":
        return "posterize", {"bits": int(magnitude)}
    if name == "Solarize":  # v2: a fraction of the dtype's maximum; v1: in 0..255
        return "solarize", {"threshold": magnitude if v1 else 255.0 * magnitude}
    if name in ("AutoContrast", "Equalize", "Invert"):
        return name.lower(), {}
    raise ValueError(f"no fused form of the policy op {name!r}")


def _op_maker(cls: str, v1: bool, interp: Any, fill: Any, h: int, w: int, pil: bool = False
              ) -> Callable[[str, float], list[AugmentOp]]:
    """A policy's ``op(name, signed magnitude) -> [AugmentOp, ...]`` (one row, or a PIL image's geometric op:
    :data:`~._pil_rows.GEOMETRY_ROWS` at most), one list per (name, magnitude): the magnitudes are a few bins.
    ``pil``: Pillow's rules, ``interp`` the ``pil_affine`` resample and ``fill`` the RGB fill colour.

    A Posterize of bits outside [0, 8] (the one-bin tables give ``int(NaN)``) raises what torchvision's
    posterize raises for it when drawn: ``TypeError`` (v2), ``ValueError`` (v1)."""
    cache: dict[tuple[str, float], list[AugmentOp]] = {}

    def op(name: str, magnitude: float) -> list[AugmentOp]:
        found = cache.get((name, magnitude))
        if found is None:
            if name == "Posterize" and not 0 <= int(magnitude) <= 8:
                raise (ValueError if v1 else TypeError)(
                    f"{cls} drew Posterize with {int(magnitude)} bits (its magnitude table's value), which "
                    "torchvision's posterize refuses (bits in [0, 8]): torchvision fails on this draw too")
            found = pil_rows.policy_rows(name, magnitude, v1, interp, fill, h, w, cls) if pil else None
            if found is None:  # a tensor, or an op whose tensor row gives Pillow's values
                kind, a = _policy_op(name, magnitude, v1, 0 if pil else interp, None if pil else fill, h, w)
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
    """The transform's own augmentation space (torchvision's tables, evaluated for the crop size: the values
    torchvision computes on this machine, e.g. one bin's ``linspace(0, x, 1) = [0.0]``)."""
    out: dict[str, tuple[list[float] | None, bool]] = {}
    if not _is_v1(t):
        for name, (fn, signed) in t._AUGMENTATION_SPACE.items():
            mags = fn(num_bins, h, w)
            out[name] = (None if mags is None else [float(m) for m in mags], signed)
        return out
    space = t._augmentation_space(num_bins) if behaves_as(t) is T1.TrivialAugmentWide else \
        t._augmentation_space(num_bins, (h, w))
    for name, (mags, signed) in space.items():
        out[name] = (None if mags.ndim == 0 else [float(m) for m in mags], signed)
    return out


def _check_bins(t: Any) -> int:
    bins = _int(t.num_magnitude_bins)
    if bins is None or bins < 1:  # torchvision: linspace of 0 bins, nothing to draw from
        raise _bad(t, "num_magnitude_bins", t.num_magnitude_bins, "an int >= 1")
    return bins


def _nothing(rng: Rng, h: int, w: int) -> list[AugmentOp]:
    return []


def _auto_sampler(t: Any, h: int, w: int, pil: bool) -> tuple[Sampler | None, str]:
    v1 = _is_v1(t)
    typ, cls = behaves_as(t), type(t).__name__
    args, why = pil_rows.geometry_args(t) if pil else _geometry_args(t)
    if args is None:
        return None, why
    interp, fill = args
    rows = pil_rows.GEOMETRY_ROWS if pil else 1  # the most rows of one op

    op = _op_maker(cls, v1, interp, fill, h, w, pil)

    if typ in (T1.TrivialAugmentWide, v2.TrivialAugmentWide):
        bins = _check_bins(t)
        table = list(_space(t, bins, h, w).items())

        def draw(rng: Rng, _h: int, _w: int) -> list[AugmentOp]:
            return op(*_pick(rng, table, lambda r: r.randint(bins)))

        return Sampler(cls, rows, draw), ""
    if typ in (T1.RandAugment, v2.RandAugment):
        num_ops = _int(t.num_ops)
        if num_ops is None or num_ops < 0 and not v1:  # v2's constructor refuses a negative one
            raise _bad(t, "num_ops", t.num_ops, "an int >= 0" if not v1 else "an int")
        num_ops = max(num_ops, 0)  # v1: range() of a negative one is empty
        if num_ops == 0:  # torchvision draws nothing, whatever the magnitude
            return Sampler(cls, 0, _nothing), ""
        bins = _check_bins(t)
        m = _int(t.magnitude)
        if m is None or not -bins <= m < bins:  # torchvision's magnitudes[m] raises IndexError for the others
            raise _bad(t, "magnitude", t.magnitude, f"an int in [-{bins}, {bins}): an index into the "
                       f"num_magnitude_bins={bins} magnitudes (negative: from the end, as torchvision indexes them)")
        m %= bins
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
    value = _int(getattr(t, arg))
    if value is None or not low <= value <= high:
        want = f"an int in [{low}, {high}]" if high != math.inf else f"an int >= {low}"
        raise _bad(t, arg, getattr(t, arg), want)
    return value


def _augmix(t: Any, cls: str, h: int, w: int) -> tuple[Sampler | None, str]:
    """torchvision's AugMix: weights m ~ Dirichlet([alpha, alpha]) (m0: the image's), chain weights
    Dirichlet([alpha] * mixture_width) * m1; each chain ``chain_depth`` ops (<= 0: uniform in 1..3), each op
    uniform over the augmentation space, its magnitude bin uniform in [0, severity) of the space's 10 bins,
    negated with probability 1/2 when signed. Rows: mix_begin(m0), per chain its ops and mix_add(w_i),
    mix_end(0). ``mixture_width <= 0`` (no chains: the image times m0) runs as in torchvision. torchvision
    converts a PIL image to a tensor first, so the ops follow the tensor rule for both."""
    v1 = _is_v1(t)
    severity = _int_arg(t, "severity", 1, t._PARAMETER_MAX)
    width = _int(t.mixture_width)
    if width is None:
        raise _bad(t, "mixture_width", t.mixture_width, "an int (<= 0: no chains)")
    width = max(width, 0)  # [alpha] * width chains: none for width <= 0
    depth = _int(t.chain_depth)
    if depth is None:
        raise _bad(t, "chain_depth", t.chain_depth, "an int (<= 0: a depth drawn from 1..3)")
    alpha = t.alpha
    if isinstance(alpha, bool) or not isinstance(alpha, numbers.Real) or not math.isfinite(alpha) or alpha <= 0:
        raise _bad(t, "alpha", alpha, "a finite number > 0; torch's Dirichlet sampler gives fixed or NaN weights "
                   "for the others")
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
        if kind == "mix_end":  # alpha 1: the mix itself, as torchvision's AugMix
            return AugmentOp(kind, {"alpha": value}, cls, kind)
        return AugmentOp(kind, {"weight": value}, cls, kind, value)

    def draw(rng: Rng, _h: int, _w: int) -> list[AugmentOp]:
        m0, m1 = rng.dirichlet((alpha, alpha))
        weights = [d * m1 for d in rng.dirichlet([alpha] * width)] if width else []
        ops = [mix("mix_begin", m0)]
        for wi in weights:
            for _ in range(depth if depth > 0 else 1 + rng.randint(3)):
                ops.extend(op(*_pick(rng, table, lambda r: r.randint(severity))))
            ops.append(mix("mix_add", wi))
        ops.append(mix("mix_end", 1.0))
        return ops

    max_depth = depth if depth > 0 else 3
    return Sampler(cls, 2 + width * (max_depth + 1), draw), ""


# ------------------------------------------------------------------------------------- single transforms

def _maybe(p: float, ops: Callable[[Rng, int, int], list[AugmentOp]]) -> Callable[[Rng, int, int], list[AugmentOp]]:
    """Applied with probability ``p`` (torchvision: skipped when ``rand() >= p``)."""

    def draw(rng: Rng, h: int, w: int) -> list[AugmentOp]:
        return ops(rng, h, w) if rng.random() < p else []

    return draw


def _fixed(cls: str, op: str, args: dict[str, Any] | None = None, name: str | None = None
           ) -> Callable[[Rng, int, int], list[AugmentOp]]:
    args = args or {}
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
            return AugmentOp(f"adjust_{names[k]}", {f"{names[k]}_factor": factor}, cls, names[k], factor)
        if k == 3:  # adjust_hue of a PIL image: Pillow's uint8 hue shifted by int(factor * 255)
            return AugmentOp("pil_hue", {"shift": pil_rows.hue_shift(factor)}, cls, "hue", factor)
        return AugmentOp("pil_enhance", {"enhancer": pil_rows.ENHANCERS[names[k]], "factor": factor}, cls, names[k],
                         factor)

    def draw(rng: Rng, h: int, w: int) -> list[AugmentOp]:
        order = rng.randperm(4)
        factors = [None if r is None else rng.uniform(r[0], r[1]) for r in ranges]
        return [row(k, factors[k]) for k in order if factors[k] is not None]

    return Sampler(cls, sum(r is not None for r in ranges), draw)


def _ordered(t: Any, arg: str, pair: Any) -> tuple[float, float]:
    """A (min, max) range torchvision draws ``uniform_(min, max)`` from (it raises for min > max)."""
    lo, hi = (float(v) for v in pair)
    if not lo <= hi:
        raise _bad(t, arg, getattr(t, arg), "a range min <= max")
    return lo, hi


def _rotation(t: Any, cls: str, pil: bool) -> tuple[Sampler | None, str]:
    if t.expand:
        return None, "RandomRotation(expand=True) changes the image size"
    args, why = pil_rows.geometry_args(t) if pil else _geometry_args(t)
    if args is None:
        return None, why
    lo, hi = _ordered(t, "degrees", t.degrees)
    center = t.center

    def draw(rng: Rng, h: int, w: int) -> list[AugmentOp]:
        angle = rng.uniform(lo, hi)
        if pil:  # F.rotate of a PIL image: img.rotate(angle, resample, False, center, fillcolor)
            m = pil_rows.rotate_matrix(angle, w, h, center)
            return [AugmentOp("identity", {}, cls, "Rotate", angle)] if m is None else \
                pil_rows.affine_rows(m, *args, cls, "Rotate", angle)
        return [AugmentOp("affine", affine_args(-angle, (0, 0), (0.0, 0.0), center, *args, h, w), cls, "Rotate", angle)]

    return Sampler(cls, pil_rows.GEOMETRY_ROWS if pil else 1, draw), ""


def _affine(t: Any, cls: str, pil: bool) -> tuple[Sampler | None, str]:
    if t.scale is not None and not pil:
        return None, "RandomAffine with scale of a tensor (the fused tensor affine has no scale)"
    args, why = pil_rows.geometry_args(t) if pil else _geometry_args(t)
    if args is None:
        return None, why
    lo, hi = _ordered(t, "degrees", t.degrees)
    translate = None if t.translate is None else tuple(float(v) for v in t.translate)
    if translate is not None and not all(0.0 <= v <= 1.0 for v in translate):
        raise _bad(t, "translate", t.translate, "fractions in [0, 1]")
    scale = None if t.scale is None else tuple(float(v) for v in t.scale)
    if scale is not None and not 0.0 < scale[0] <= scale[1]:
        raise _bad(t, "scale", t.scale, "0 < min <= max")
    if scale is not None and scale[0] < 1e-30:  # 1 / scale in Pillow's matrix: past float32's range of the rows
        return None, f"RandomAffine(scale={t.scale!r}) below 1e-30 (its matrix leaves float32's range)"
    shear = None if t.shear is None else [float(s) for s in t.shear]
    if shear is not None:
        _ordered(t, "shear", shear[:2])
        if len(shear) == 4:
            _ordered(t, "shear", shear[2:])
    center = t.center
    v2_class = not _is_v1(t)

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
        return [AugmentOp("gaussian_blur", {"kernel_size": (kx, ky), "sigma": (s, s)}, cls, "GaussianBlur", s)]

    return Sampler(cls, 1, draw)


def match_augment(t: Any, h: int, w: int, pil: bool = False) -> tuple[Sampler | None, str]:
    """A sampler for the uint8 augmentation ``t`` on ``h x w`` crops (``pil``: the image is still a PIL image
    there, as in a v1 pipeline before ``ToTensor``: its rows then follow Pillow's rules, as torchvision's ops on
    a PIL image do), ``(None, why not)`` when it has none, ``(None, "")`` when ``t`` is not an augmentation at
    all (or runs code of its own: :func:`._classes.behaves_as`).

    Raises:
        ValueError: an argument torchvision refuses or misuses (naming the transform and argument).
    """
    typ, cls = behaves_as(t), type(t).__name__
    if typ in _AUTO:
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
    if typ in (T1.RandomApply, v2.RandomApply):
        return _random_apply(t, cls, h, w, pil)
    if typ not in _SIMPLE:
        return None, ""
    p = draw_probability(t)
    if p == 0.0:  # never applied: torchvision never reads its other arguments
        return Sampler(cls, 0, _nothing), ""
    op, why = _SIMPLE[typ](t, _is_v1(t), pil)
    if op is None:
        return None, why
    return Sampler(cls, 1, _maybe(p, _fixed(cls, *op))), ""


# The single transforms: (op, args, name) of their row, the tensor rule or, on a PIL image, Pillow's.

def _posterize(t: Any, v1: bool, pil: bool) -> tuple[tuple[str, dict, str] | None, str]:
    bits = t.bits
    if v1 and not pil and isinstance(bits, float) and bits.is_integer():  # v1's tensor kernel takes 4.0
        bits = int(bits)
    if _int(bits) is None or not 0 <= _int(bits) <= 8:  # torchvision's posterize refuses it when applied
        raise _bad(t, "bits", t.bits, "an int in [0, 8]")
    if pil and _int(bits) == 0:
        return None, "RandomPosterize(bits=0) of a PIL image (Pillow's posterize decides: black or an error)"
    return ("posterize", {"bits": _int(bits)}, "posterize"), ""


def _solarize(t: Any, v1: bool, pil: bool) -> tuple[tuple[str, dict, str], str]:
    """``v >= threshold`` inverted; on a PIL image Pillow's rule ``not v < threshold`` with the double
    threshold (the row holds its ceiling, a whole number): a threshold above 255 leaves it as it is, NaN
    inverts all; on a tensor above 255 torchvision refuses, NaN leaves it."""
    thr = t.threshold
    if not isinstance(thr, numbers.Real):
        raise _bad(t, "threshold", thr, "a number")
    thr = float(thr)
    if math.isnan(thr):
        return (("invert", {}, "solarize") if pil else ("identity", {}, "solarize")), ""
    if thr > 255.0:
        if not pil:
            raise _bad(t, "threshold", t.threshold, "at most 255 for uint8 images")
        return ("identity", {}, "solarize"), ""
    if thr <= 0.0:
        return ("invert", {}, "solarize"), ""
    if pil:
        op = pil_rows.solarize_row(thr, "", "solarize")
        return (op.op, op.arguments, "solarize"), ""
    return ("solarize", {"threshold": thr}, "solarize"), ""


def _sharpness(t: Any, v1: bool, pil: bool) -> tuple[tuple[str, dict, str] | None, str]:
    factor = t.sharpness_factor
    if not isinstance(factor, numbers.Real) or math.isnan(factor) or math.isinf(factor):
        raise _bad(t, "sharpness_factor", factor, "a finite number")
    if factor < 0:
        if not pil:  # torchvision's tensor kernel refuses it (Pillow extrapolates)
            raise _bad(t, "sharpness_factor", factor, "a non-negative number")
        return None, "RandomAdjustSharpness with a negative factor of a PIL image (the fused sharpness takes factors >= 0)"
    if pil:  # ImageEnhance.Sharpness
        return ("pil_enhance", {"enhancer": pil_rows.ENHANCERS["sharpness"], "factor": float(factor)}, "sharpness"), ""
    return ("adjust_sharpness", {"sharpness_factor": float(factor)}, "sharpness"), ""


def _plain(op: str, pil_op: str, pil_args: dict[str, Any] | None = None
           ) -> Callable[[Any, bool, bool], tuple[tuple[str, dict, str], str]]:
    """A transform without arguments: ``op`` on a tensor, ``pil_op(**pil_args)`` on a PIL image."""
    return lambda t, v1, pil: ((pil_op, pil_args or {}, op) if pil else (op, {}, op), "")


_SIMPLE: dict[type, Callable[[Any, bool, bool], tuple[tuple[str, dict, str] | None, str]]] = {
    **{typ: rule for types, rule in [
        ((T1.RandomGrayscale, v2.RandomGrayscale),  # Pillow's convert("L"): ImageEnhance.Color's enhance(0)
         _plain("rgb_to_grayscale", "pil_enhance", {"enhancer": pil_rows.ENHANCERS["saturation"], "factor": 0.0})),
        ((T1.RandomAutocontrast, v2.RandomAutocontrast), _plain("autocontrast", "pil_autocontrast")),
        ((T1.RandomEqualize, v2.RandomEqualize), _plain("equalize", "equalize")),
        ((T1.RandomInvert, v2.RandomInvert), _plain("invert", "invert"))] for typ in types},
    T1.RandomPosterize: _posterize, v2.RandomPosterize: _posterize,
    T1.RandomSolarize: _solarize, v2.RandomSolarize: _solarize,
    T1.RandomAdjustSharpness: _sharpness, v2.RandomAdjustSharpness: _sharpness,
}


def _random_apply(t: Any, cls: str, h: int, w: int, pil: bool) -> tuple[Sampler | None, str]:
    subs = list(t.transforms)
    if not subs and not _is_v1(t):  # v2's constructor refuses it; v1's runs nothing
        raise _bad(t, "transforms", subs, "a non-empty list of transforms")
    p = apply_probability(t)
    inner = []
    for sub in subs:
        s, why = match_augment(sub, h, w, pil)
        if s is None:
            why = why or runs_as_written(sub) or "not a fusable augmentation"
            return None, f"RandomApply of {type(sub).__name__}: {why}"
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
    p = draw_probability(t)
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
    mode = "random" if value is None else "value"
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
            return [AugmentOp("erase", {"mode": mode, "top": i, "left": j, "height": eh, "width": ew, "value": vals}, cls,
                              "RandomErasing")]
        return []

    return Sampler(cls, 1, _maybe(p, erase)), ""

