"""timm's ``RandAugment``, ``AutoAugment`` and ``AugMixAugment`` (``timm.data.auto_augment``, what
``timm.data.create_transform(auto_augment=...)`` builds) as fused samplers, read from the timm objects (never
from their config strings) without importing timm.

Each timm ``AugmentOp`` (``name``, ``prob``, ``magnitude``, ``hparams``, ``kwargs``) is drawn with timm's rules:
applied unless ``random() > prob``; the magnitude ``m`` gets its noise (``magnitude_std``: ``gauss(m, std)``,
``inf``: ``uniform(0, m)``) and is clipped to ``[0, magnitude_max or 10]``; then timm's ``LEVEL_TO_ARG`` rule
of the op's name turns it into the op's argument (the sign of Rotate / Shear / Translate / the ``*Increasing``
enhancements drawn with probability 1/2); the geometric ops draw their filter from ``kwargs["resample"]``
(one filter, or a uniform choice per call). ``RandAugment`` picks ``num_layers`` ops uniformly with
replacement, or by ``choice_weights`` without replacement (numpy's ``choice(replace=False, p=...)``:
successive draws, each renormalised over the ops not drawn yet); ``AutoAugment`` picks one sub-policy
uniformly and runs its ops in order; ``AugMixAugment`` draws Dirichlet(``alpha``) chain weights and a
Beta(``alpha``, ``alpha``) blend, ``width`` chains of ``depth`` ops (``depth <= 0``: 1..3 per chain) picked
uniformly with replacement, each from the un-augmented crop, and mixes them as ``_apply_basic`` does.

The ops become rows (:mod:`._augment_codes`):

==========================================  ======================================================================
timm op                                     rows
==========================================  ======================================================================
Rotate, ShearX/Y, TranslateX/Y(Rel)         ``fill`` (``kwargs["fillcolor"]``) + ``pil_affine_low`` +
                                            ``pil_affine`` (Pillow's AFFINE matrix: ``Image.rotate``'s about
                                            (w/2, h/2), angle 0 the identity, 180 the exact flip; shear
                                            ``(1, f, 0, 0, 1, 0)``; translate ``(1, 0, px, 0, 1, 0)``), the drawn
                                            filter
SolarizeAdd                                 ``solarize_add`` (threshold 128)
Solarize(Increasing)                        ``solarize`` (threshold 256: the identity)
Posterize, PosterizeIncreasing / Original   ``posterize`` (bits >= 8: the identity; bits <= 0: all zero, as
                                            Pillow < 12 gives it; Pillow >= 12 raises in timm itself)
Color(Increasing), Desaturate               ``pil_enhance`` (``ImageEnhance.Color``)
Contrast / Brightness / Sharpness(Incr.)    ``pil_enhance`` (``ImageEnhance.Contrast`` / ``Brightness`` /
                                            ``Sharpness``)
AutoContrast, Equalize, Invert              ``pil_autocontrast``, ``equalize``, ``invert``
AugMixAugment's mix                         ``mix_begin(0)``, per chain its ops + ``mix_add(w)``,
                                            ``mix_end(1, m)`` (Pillow's ``Image.blend``)
==========================================  ======================================================================

The rows give Pillow's values, identical to timm's own ops (measured: ``docs/images.md``): the point and
histogram ops' kernels compute Pillow's values, the enhancements are ``pil_enhance`` (``ImageEnhance``),
AutoContrast ``pil_autocontrast``, and the geometric ops carry Pillow's double matrix exactly (float32 hi + mid
+ lo parts, :func:`~._pil_rows.split_double`). Not fused, with the reason: the ``GaussianBlur`` /
``GaussianBlurRand`` ops (timm's ``3a`` sets: Pillow's box-approximated blur), ``AugMixAugment(blended=True)``,
a fill colour other than integers 0..255, an op that is not timm's ``AugmentOp`` or a subclass overriding its
``__call__`` (it runs as written), and the rows on a build without them. What timm accepts and runs fuses with
its meaning: an op's ``prob``, ``magnitude``, ``magnitude_std`` and ``magnitude_max`` are any numbers, compared
and clipped as timm does (the last two read from the op's attributes, as timm's ``__call__`` reads them);
``choice_weights`` sum to 1 within numpy's tolerance; ``width <= 0`` mixes no chain.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from typing import Any

from . import _pil_rows as pil_rows
from ._augment_program import AugmentOp, Rng, Sampler
from ._classes import behaves_as, runs_as_written
from ._pil_rows import rotate_matrix

__all__ = ["match_timm_policy", "timm_sampler"]

_POLICIES = ("RandAugment", "AutoAugment", "AugMixAugment")

_LEVEL_DENOM = 10.0
_PIL_FILTERS = {0: 0, 2: 1, 3: 2}  # Pillow's NEAREST, BILINEAR, BICUBIC -> the pil_affine row's resample index
_COLOR = {"Color": "saturation", "Contrast": "contrast", "Brightness": "brightness", "Sharpness": "sharpness"}
_UNFUSED = {"GaussianBlur": "Pillow's GaussianBlur filter (box blurs) has no fused kernel",
            "GaussianBlurRand": "Pillow's GaussianBlur filter (box blurs) has no fused kernel"}


class _Unfused(Exception):
    """A timm op or argument that has no fused form (the message is the reason)."""


def _bad(cls: str, arg: str, value: Any, want: str) -> ValueError:
    return ValueError(f"{cls} (timm): {arg}={value!r} is invalid ({want})")


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) or type(v).__module__ == "numpy"


class _Op:
    """One timm ``AugmentOp``, read and checked: draws its rows for a sample."""

    def __init__(self, op: Any, cls: str) -> None:
        kind = behaves_as(op)
        if kind is None or kind.__name__ != "AugmentOp" or kind.__module__.split(".")[0] != "timm":
            raise _Unfused(runs_as_written(op) or f"an op of class {type(op).__name__} (not timm's AugmentOp): "
                           "runs as written")
        name = getattr(op, "name", None)
        if name not in _NAMES:
            raise _bad(cls, "op name", name, f"one of timm's LEVEL_TO_ARG names: {', '.join(sorted(_NAMES))}")
        if name in _UNFUSED:
            raise _Unfused(f"timm's {name} op ({_UNFUSED[name]})")
        self.name, self.cls = name, cls
        # timm compares and clips these as Python numbers: any prob (above 1: always, below 0: never, NaN:
        # always), magnitude (NaN: 0 after the clip), std (<= 0 or NaN: no noise), magnitude_max (0 or None: 10)
        prob = getattr(op, "prob", None)
        if not _number(prob):
            raise _bad(cls, f"{name}.prob", prob, "a number: the probability")
        self.prob = float(prob)
        m = getattr(op, "magnitude", None)
        if not _number(m):
            raise _bad(cls, f"{name}.magnitude", m, "a number")
        self.magnitude = float(m)
        hp = dict(getattr(op, "hparams", None) or {})
        # timm's __call__ reads the attributes (set from hparams when the op is made), its level rules hparams
        std = getattr(op, "magnitude_std", hp.get("magnitude_std", 0)) or 0
        if not _number(std):
            raise _bad(cls, f"{name}.magnitude_std", std, "a number (> 0: gauss(m, std), inf: uniform(0, m))")
        self.std = float(std)
        mmax = getattr(op, "magnitude_max", hp.get("magnitude_max"))
        if mmax is not None and not _number(mmax):
            raise _bad(cls, f"{name}.magnitude_max", mmax, "None or a number")
        self.upper = float(mmax or _LEVEL_DENOM)
        if self.upper == math.inf and self.magnitude == math.inf:  # timm's level would be infinite
            raise _bad(cls, f"{name}.magnitude", m, "finite, or clipped by a finite magnitude_max")
        self.translate_const = float(hp.get("translate_const", 250))
        self.translate_pct = float(hp.get("translate_pct", 0.45))
        self.geometric = name in _GEOMETRY_LEVELS
        self.fill: tuple[float, float, float] = (0.0, 0.0, 0.0)
        self.filters: tuple[int, ...] = ()
        if self.geometric:
            kw = getattr(op, "kwargs", {}) or {}
            self.fill = _fill(kw.get("fillcolor"))
            resample = kw.get("resample", 3)
            choices = list(resample) if isinstance(resample, (tuple, list)) else [resample]
            try:
                self.filters = tuple(_PIL_FILTERS[int(r)] for r in choices)
            except (KeyError, TypeError, ValueError):
                self.filters = ()
            if not self.filters:
                raise _bad(cls, f"{name}.kwargs['resample']", resample,
                           "Pillow's NEAREST, BILINEAR or BICUBIC, or a sequence of them (Image.transform's filters)")

    def max_rows(self) -> int:
        return pil_rows.GEOMETRY_ROWS if self.geometric else 1

    def _level(self, rng: Rng) -> float:
        m = self.magnitude
        if self.std > 0:
            m = rng.uniform(0.0, m) if self.std == math.inf else m + self.std * rng.normal()
        return max(0.0, min(m, self.upper))

    def draw(self, rng: Rng, h: int, w: int, state: list[Any]) -> list[AugmentOp]:
        """The rows of one call of the op (``[]`` when it does not apply); ``state[0]``: the fill set by this
        sampler's rows so far (``None``: none yet)."""
        if self.prob < 1.0 and rng.random() > self.prob:
            return []
        level = self._level(rng)
        name, cls = self.name, self.cls

        def signed(v: float) -> float:
            return -v if rng.random() > 0.5 else v

        if self.geometric:
            arg, matrix = _GEOMETRY_LEVELS[name](level / _LEVEL_DENOM, signed, self, w, h)
            resample = self.filters[rng.randint(len(self.filters))] if len(self.filters) > 1 else self.filters[0]
            if matrix is None:  # Pillow's copy
                return [AugmentOp("identity", {}, cls, name, arg)]
            ops = []
            if state[0] != self.fill:
                state[0] = self.fill
                ops.append(AugmentOp("fill", {"color": self.fill}, cls, name))
            return ops + pil_rows.affine_rows(matrix, resample, None, cls, name, arg)
        op, args, magnitude = _COLOR_LEVELS[name](level / _LEVEL_DENOM, signed)
        return [AugmentOp(op, args, cls, name, magnitude)]


# timm's level rules (its LEVEL_TO_ARG, with NAME_TO_OP's op), as tables. ``f``: the level over its denominator
# (magnitude / 10); ``signed(v)``: -v or v, with probability 1/2 each (one draw, only where the rule calls it).
# A geometric op: (its argument, the Pillow AFFINE matrix; None: Pillow's copy, an identity row).
_GEOMETRY_LEVELS: dict[str, Callable[..., tuple[float, tuple[float, ...] | None]]] = {
    "Rotate": lambda f, signed, op, w, h: (a := signed(f * 30.0), rotate_matrix(a, w, h)),
    "ShearX": lambda f, signed, op, w, h: (a := signed(f * 0.3), (1.0, a, 0.0, 0.0, 1.0, 0.0)),
    "ShearY": lambda f, signed, op, w, h: (a := signed(f * 0.3), (1.0, 0.0, 0.0, a, 1.0, 0.0)),
    "TranslateX": lambda f, signed, op, w, h: (a := signed(f * op.translate_const), (1.0, 0.0, a, 0.0, 1.0, 0.0)),
    "TranslateY": lambda f, signed, op, w, h: (a := signed(f * op.translate_const), (1.0, 0.0, 0.0, 0.0, 1.0, a)),
    "TranslateXRel": lambda f, signed, op, w, h: (a := signed(f * op.translate_pct), (1.0, 0.0, a * w, 0.0, 1.0, 0.0)),
    "TranslateYRel": lambda f, signed, op, w, h: (a := signed(f * op.translate_pct), (1.0, 0.0, 0.0, 0.0, 1.0, a * h)),
}


def _posterize(bits: int) -> tuple[str, dict[str, Any], float]:
    """timm's posterize: 8 bits or more keep the image (Pillow's posterize would refuse them)."""
    if bits >= 8:
        return "identity", {}, float(bits)
    return "posterize", {"bits": max(bits, 0)}, float(bits)


def _solarize(thresh: int) -> tuple[str, dict[str, Any], float]:
    return ("identity", {}, float(thresh)) if thresh >= 256 else ("solarize", {"threshold": float(thresh)},
                                                                   float(thresh))


def _solarize_add(add: int) -> tuple[str, dict[str, Any], float]:
    return "solarize_add", {"add": add, "threshold": 128.0}, float(add)


def _enhance(base: str, factor: float, magnitude: float | None = None) -> tuple[str, dict[str, Any], float]:
    args = {"enhancer": pil_rows.ENHANCERS[_COLOR[base]], "factor": factor}
    return "pil_enhance", args, factor if magnitude is None else magnitude


def _desaturate(f: float) -> tuple[str, dict[str, Any], float]:
    lv = max(0.5, min(1.0, 0.5 + 0.5 * f))
    return _enhance("Color", min(1.0, max(0.0, 1.0 - lv)), lv)


# The other ops: (the row's op, its arguments, the magnitude an AugmentOp reports).
_COLOR_LEVELS: dict[str, Callable[[float, Callable[[float], float]], tuple[str, dict[str, Any], float | None]]] = {
    "AutoContrast": lambda f, signed: ("pil_autocontrast", {}, None),
    "Equalize": lambda f, signed: ("equalize", {}, None),
    "Invert": lambda f, signed: ("invert", {}, None),
    "Posterize": lambda f, signed: _posterize(int(f * 4)),
    "PosterizeIncreasing": lambda f, signed: _posterize(4 - int(f * 4)),
    "PosterizeOriginal": lambda f, signed: _posterize(int(f * 4) + 4),
    "Solarize": lambda f, signed: _solarize(min(256, int(f * 256))),
    "SolarizeIncreasing": lambda f, signed: _solarize(256 - min(256, int(f * 256))),
    "SolarizeAdd": lambda f, signed: _solarize_add(min(128, int(f * 110))),
    "Desaturate": lambda f, signed: _desaturate(f),
    **{name: (lambda base: lambda f, signed: _enhance(base, f * 1.8 + 0.1))(name) for name in _COLOR},
    **{f"{name}Increasing": (lambda base: lambda f, signed: _enhance(base, max(0.1, 1.0 + signed(f * 0.9))))(name)
       for name in _COLOR},
}
#: timm's op names (LEVEL_TO_ARG's), the fused ones and those refused with a reason
_NAMES = set(_GEOMETRY_LEVELS) | set(_COLOR_LEVELS) | set(_UNFUSED)


def _byte(v: Any) -> int | None:
    """An integer 0..255 (Python's or NumPy's), else None."""
    if isinstance(v, bool):
        return None
    try:
        i = operator.index(v)
    except TypeError:
        return None
    return i if 0 <= i <= 255 else None


def _fill(color: Any) -> tuple[float, float, float]:
    """Pillow's fill of an RGB image: ``None`` black, one integer ``v`` (v, 0, 0), three integers 0..255 as given."""
    if color is None:
        return (0.0, 0.0, 0.0)
    if _byte(color) is not None:
        return (float(_byte(color)), 0.0, 0.0)
    if isinstance(color, (tuple, list)) and len(color) == 3 and all(_byte(c) is not None for c in color):
        return (float(color[0]), float(color[1]), float(color[2]))
    raise _Unfused(f"fillcolor={color!r} (the fused fill is three integers 0..255)")


def _ops(t: Any, attr: str, cls: str) -> list[_Op]:
    ops = getattr(t, attr, None)
    if not isinstance(ops, (list, tuple)) or not ops:
        raise _bad(cls, attr, ops, "a non-empty list of timm AugmentOps")
    return [_Op(op, cls) for op in ops]


def _sum_tolerance(weights: Any) -> float:
    """NumPy's ``choice(p=...)`` tolerance of ``|sum(p) - 1|``: sqrt of float64's eps, or of the array's own
    float dtype's when that is coarser (a float32 array: ~3.5e-4)."""
    tol = math.sqrt(2.220446049250313e-16)
    dtype = getattr(weights, "dtype", None)
    if dtype is not None and getattr(dtype, "kind", "") == "f":
        import numpy as np  # only for a NumPy array of weights, which timm itself gives

        tol = max(tol, math.sqrt(float(np.finfo(dtype).eps)))
    return tol


def _rand_augment(t: Any, cls: str) -> Sampler:
    n = getattr(t, "num_layers", None)
    if not isinstance(n, int) or isinstance(n, bool) or n < 0:  # numpy's choice refuses the others
        raise _bad(cls, "num_layers", n, "an int >= 0")
    if n == 0 and isinstance(getattr(t, "ops", None), (list, tuple)) and not t.ops \
            and getattr(t, "choice_weights", None) is None:
        return Sampler(cls, 0, lambda rng, h, w: [])  # numpy's choice of 0 of no ops: nothing
    ops = _ops(t, "ops", cls)
    weights = getattr(t, "choice_weights", None)
    if weights is not None:
        tol = _sum_tolerance(weights)
        weights = [float(p) for p in weights]
        if len(weights) != len(ops) or not all(math.isfinite(p) and p >= 0 for p in weights) \
                or abs(math.fsum(weights) - 1.0) > tol:
            raise _bad(cls, "choice_weights", t.choice_weights,
                       f"{len(ops)} probabilities >= 0 that sum to 1 within {tol:.2g} (one per op), as numpy's choice takes")
        if sum(p > 0 for p in weights) < n:
            raise _bad(cls, "choice_weights", t.choice_weights,
                       f"at least num_layers={n} non-zero weights (ops are drawn without replacement)")

    def draw(rng: Rng, h: int, w: int) -> list[AugmentOp]:
        state: list[Any] = [None]
        if weights is None:
            picks = [ops[rng.randint(len(ops))] for _ in range(n)]
        else:  # successive draws without replacement, renormalised over what is left
            left = list(weights)
            picks = []
            for _ in range(n):
                live = [k for k, p in enumerate(left) if p > 0]
                u = rng.random() * sum(left[k] for k in live)
                for k in live:
                    u -= left[k]
                    if u < 0:
                        break
                picks.append(ops[k])
                left[k] = 0.0
        return [row for op in picks for row in op.draw(rng, h, w, state)]

    return Sampler(cls, n * max(op.max_rows() for op in ops), draw)


def _auto_augment(t: Any, cls: str) -> Sampler:
    subs = getattr(t, "policy", None)
    if not isinstance(subs, (list, tuple)) or not subs or not all(isinstance(sub, (list, tuple)) and sub for sub in subs):
        raise _bad(cls, "policy", subs, "a non-empty list of non-empty sub-policies of timm AugmentOps")
    policy = [[_Op(op, cls) for op in sub] for sub in subs]

    def draw(rng: Rng, h: int, w: int) -> list[AugmentOp]:
        state: list[Any] = [None]
        return [row for op in policy[rng.randint(len(policy))] for row in op.draw(rng, h, w, state)]

    return Sampler(cls, max(sum(op.max_rows() for op in sub) for sub in policy), draw)


def _augmix(t: Any, cls: str) -> Sampler:
    if getattr(t, "blended", False):
        raise _Unfused("blended=True (its per-chain blends are not fused; blended=False, timm's default, is)")
    ops = _ops(t, "ops", cls)
    alpha, width, depth = (getattr(t, a, None) for a in ("alpha", "width", "depth"))
    if not _number(alpha) or not (math.isfinite(float(alpha)) and float(alpha) > 0):
        raise _bad(cls, "alpha", alpha, "a finite number > 0")
    if not isinstance(width, int) or isinstance(width, bool):
        raise _bad(cls, "width", width, "an int (<= 0: no chains)")
    width = max(width, 0)  # dirichlet([alpha] * width): no chains for width <= 0
    if not isinstance(depth, int) or isinstance(depth, bool):
        raise _bad(cls, "depth", depth, "an int (<= 0: 1 to 3 ops per chain)")
    alpha = float(alpha)
    max_depth = depth if depth > 0 else 3

    def draw(rng: Rng, h: int, w: int) -> list[AugmentOp]:
        weights = rng.dirichlet([alpha] * width) if width else []  # no chains: the crop blended with zeros
        m = rng.dirichlet([alpha, alpha])[0]  # Beta(alpha, alpha)
        state: list[Any] = [None]
        rows = [AugmentOp("mix_begin", {"weight": 0.0}, cls, "AugMix")]
        for wk in weights:
            d = depth if depth > 0 else 1 + rng.randint(3)
            for _ in range(d):
                rows += ops[rng.randint(len(ops))].draw(rng, h, w, state)
            rows.append(AugmentOp("mix_add", {"weight": wk}, cls, "AugMix", wk))
        rows.append(AugmentOp("mix_end", {"alpha": m}, cls, "AugMix", m))
        return rows

    return Sampler(cls, 2 + width * (1 + max_depth * max(op.max_rows() for op in ops)), draw)


def timm_sampler(t: Any) -> Sampler:
    """The sampler of timm's ``RandAugment`` / ``AutoAugment`` / ``AugMixAugment`` ``t``, whatever this build runs.

    Raises:
        ValueError: an argument timm would fail on or misuse (naming the transform and the argument).
        LookupError: ``t`` has no fused form (the message says why).
    """
    kind = behaves_as(t)
    cls = type(t).__name__ if kind is None else kind.__name__
    try:
        if kind is None:
            raise _Unfused(runs_as_written(t) or "not timm's class")
        if cls == "RandAugment":
            return _rand_augment(t, cls)
        if cls == "AutoAugment":
            return _auto_augment(t, cls)
        if cls == "AugMixAugment":
            return _augmix(t, cls)
    except _Unfused as e:
        raise LookupError(f"timm's {cls}: {e}") from None
    raise LookupError(f"timm's {cls} is not an augmentation policy")


def match_timm_policy(t: Any, h: int, w: int, pil: bool = False) -> tuple[Sampler | None, str]:
    """A sampler for timm's ``RandAugment`` / ``AutoAugment`` / ``AugMixAugment`` ``t`` (crops of any size: the
    sizes come with each draw; timm's ops take PIL images, whatever ``pil`` says), ``(None, why not)`` when it
    has no fused form or this build lacks its rows, ``(None, "")`` for any other transform.

    Raises:
        ValueError: an argument timm would fail on or misuse (naming the transform and the argument).
    """
    kind = behaves_as(t)
    cls = None if kind is None else kind.__name__
    if kind is None or kind.__module__.split(".")[0] != "timm" or cls not in _POLICIES:
        return None, ""
    try:
        sampler = timm_sampler(t)
    except LookupError as e:
        return None, str(e)
    return sampler, ""
