"""Augmentation programs: the per-sample rows of ``decode_images(augment=..., erase=...)``, and what draws them.

A fused plan holds a list of :class:`Sampler` (one per fused torchvision or timm augmentation, built by
:mod:`._policies` and :mod:`._timm_policies`); for each sample they draw, from an :class:`Rng` seeded by the
sample's seed only, the ops that sample gets (:class:`AugmentOp`), each one row of the op table the library
declares (:mod:`._augment_codes`; the rows' layout: :func:`spdl_torch.io.decode_images`, "Augment and erase rows"):

* ``augment`` Tensor[N, K, 8]: each sample's rows, applied in order to the uint8 RGB crop after the resize and
  flips, before the dtype conversion (``identity`` rows pad; K: the most rows any sample can get);
* ``erase`` Tensor[N, 8] (or Tensor[N, B, 8] for an eraser of up to B boxes, timm's ``max_count``): the erase
  rows, on the slot after the normalisation (mode ``"off"``: padding).

The affine row follows ``torchvision.transforms.v2.functional.affine``'s conventions about the image centre:
``angle`` clockwise in degrees, ``translate`` in pixels (a centre other than the image's is folded into the
translation, so it may be fractional), ``shear`` in degrees; ``rotate(a)`` is ``affine(angle=-a)``; ``fill=None``
is torchvision's ``fill=None``.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from typing import Any

import torch

from .._seeds import splitmix64
from . import _augment_codes as codes

__all__ = ["AugmentOp", "AugmentProgram", "Rng", "Sampler", "affine_args", "interpolation_choice"]

_MASK64 = (1 << 64) - 1
_SALT = 0x6A09E667F3BCC909  # separates the augmentation stream from the geometry's draws of the same seed


_INTERP_SALT = 0xBB67AE8584CAA73B  # the per-sample choice of a resampling filter (timm's interpolation="random")


def interpolation_choice(seed: int, n: int) -> int:
    """Which of ``n`` resampling filters the sample with this ``seed`` gets (uniform, as ``random.choice``)."""
    return Rng(int(seed) ^ _INTERP_SALT).randint(n)


class Rng:
    """A SplitMix64 stream seeded by a sample's seed: the same draws for the same seed, in any thread."""

    __slots__ = ("_state",)

    def __init__(self, seed: int) -> None:
        self._state = splitmix64((int(seed) ^ _SALT) & _MASK64)

    def _next(self) -> int:
        self._state = (self._state + 0x9E3779B97F4A7C15) & _MASK64
        z = self._state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK64
        return z ^ (z >> 31)

    def random(self) -> float:
        """Uniform in [0, 1) with 53 bits."""
        return (self._next() >> 11) * (1.0 / (1 << 53))

    def uniform(self, low: float, high: float) -> float:
        return low + (high - low) * self.random()

    def randint(self, n: int) -> int:
        """Uniform in [0, n) (n >= 1), by the multiply-shift rule over 64 bits."""
        return (self._next() * n) >> 64

    def normal(self) -> float:
        """Standard normal (Box-Muller, two uniforms per draw)."""
        u1 = 1.0 - self.random()
        return math.sqrt(-2.0 * math.log(u1)) * math.cos(2.0 * math.pi * self.random())

    def gamma(self, shape: float) -> float:
        """Gamma(shape, 1) for shape > 0 (Marsaglia and Tsang; shape < 1: Gamma(shape + 1) * U^(1 / shape)).
        At least the smallest positive double, so that a Dirichlet's sum is never 0."""
        boost = 1.0
        if shape < 1.0:
            boost = (1.0 - self.random()) ** (1.0 / shape)
            shape += 1.0
        d = shape - 1.0 / 3.0
        c = 1.0 / math.sqrt(9.0 * d)
        while True:
            x = self.normal()
            v = 1.0 + c * x
            if v <= 0.0:
                continue
            v = v * v * v
            u = 1.0 - self.random()
            if u < 1.0 - 0.0331 * x ** 4 or math.log(u) < 0.5 * x * x + d * (1.0 - v + math.log(v)):
                return max(d * v * boost, 2.2250738585072014e-308)

    def dirichlet(self, alphas: Sequence[float]) -> list[float]:
        """Dirichlet(alphas): independent Gamma(alpha_i) draws over their sum, in logs (a shape < 1 as
        Gamma(shape + 1) * U^(1 / shape)) so that small shapes do not underflow to a zero sum."""
        logs = [math.log(self.gamma(a + 1.0)) + math.log(1.0 - self.random()) / a if a < 1.0
                else math.log(self.gamma(a)) for a in alphas]
        top = max(logs)
        g = [math.exp(v - top) for v in logs]
        total = sum(g)
        return [v / total for v in g]

    def randperm(self, n: int) -> list[int]:
        """A uniform permutation of range(n) (Fisher-Yates)."""
        perm = list(range(n))
        for i in range(n - 1, 0, -1):
            j = self.randint(i + 1)
            perm[i], perm[j] = perm[j], perm[i]
        return perm


@dataclasses.dataclass(frozen=True)
class AugmentOp:
    """One op a sample gets. ``op``: the op's name in the library's table (``"affine"``, ``"adjust_brightness"``,
    ..., ``"identity"``) or ``"erase"``; ``args``: its arguments, given by name (``{"angle": 17.0, "translate": (0,
    0), ...}``; the names, meanings and ranges: :func:`spdl_torch.io.decode_images`, "Augment and erase rows"),
    held as the row's argument columns in order (a tuple of floats; :attr:`arguments` reads them back by name);
    ``transform``: the transform that drew it; ``name`` / ``magnitude``: the policy's op name and its value: for
    torchvision's policies the signed magnitude as torchvision draws it (e.g. ``"ShearX"``, -0.3), for timm's the
    op's argument after timm's level rule (Posterize: bits, Solarize: threshold, ShearX: the shear factor);
    ``None`` where there is none. A ``fill`` or ``pil_affine_low`` row carries the name of the geometric op it
    serves (a PIL image's rotation or affine: ``fill``, ``pil_affine_low`` rows, ``pil_affine`` with the
    magnitude). AugMix's rows: ``mix_begin`` (the weight of the original image), then each chain's ops and a
    ``mix_add`` (the chain's weight), then ``mix_end`` (``alpha``: 1 torchvision's mix, below 1 timm's blend).

    Raises:
        KeyError: ``op`` is not in the table. TypeError, ValueError: an argument unknown, missing, of the wrong
            number of values or an unknown choice (the values' ranges are checked by ``decode_images``).
    """

    op: str
    args: tuple[float, ...]
    transform: str
    name: str
    magnitude: float | None = None

    def __post_init__(self) -> None:
        spec = codes.ERASE if self.op == "erase" else codes.OPS[self.op]
        if isinstance(self.args, dict):
            columns = codes.encode(spec, self.args)
        else:  # the columns themselves (as `args` holds them: dataclasses.replace, a copy)
            columns = tuple(float(v) for v in self.args)
            if len(columns) != _width(spec):
                raise TypeError(f"{self.op}: expected its {_width(spec)} argument columns, got {len(columns)}")
        object.__setattr__(self, "args", columns)

    @property
    def arguments(self) -> dict[str, float | tuple[float, ...]]:
        """The arguments by name (a tuple for an argument of several columns, e.g. ``translate``)."""
        return codes.named_args(codes.ERASE if self.op == "erase" else codes.OPS[self.op], self.args)

    def row(self) -> list[float]:
        if self.op == "erase":
            return [*self.args, *([0.0] * (codes.ERASE_COLUMNS - len(self.args)))]
        return [float(codes.OPS[self.op].code), *self.args, *([0.0] * (codes.AUGMENT_COLUMNS - 1 - len(self.args)))]


def _width(op: codes.Op) -> int:
    return sum(a.count for a in op.args)


class Sampler:
    """Draws one transform's ops: ``draw(rng, height, width)`` -> list of :class:`AugmentOp` (at most
    ``max_rows`` of them); ``name`` is the transform's class name."""

    def __init__(self, name: str, max_rows: int, draw: Callable[[Rng, int, int], list[AugmentOp]]) -> None:
        self.name, self.max_rows, self.draw = name, max_rows, draw

    def __repr__(self) -> str:
        return f"Sampler({self.name}, max_rows={self.max_rows})"


def _forward_matrix(angle: float, shear: Sequence[float]) -> tuple[float, float, float, float]:
    """torchvision's rotation-shear matrix (scale 1) of ``_get_inverse_affine_matrix``, forward direction."""
    rot, sx, sy = math.radians(angle), math.radians(shear[0]), math.radians(shear[1])
    a = math.cos(rot - sy) / math.cos(sy)
    b = -math.cos(rot - sy) * math.tan(sx) / math.cos(sy) - math.sin(rot)
    c = math.sin(rot - sy) / math.cos(sy)
    d = -math.sin(rot - sy) * math.tan(sx) / math.cos(sy) + math.cos(rot)
    return a, b, c, d


def affine_args(angle: float, translate: Sequence[float], shear: Sequence[float], center: Sequence[float] | None,
                interp: int, fill: float | None, height: int, width: int) -> dict[str, Any]:
    """The affine row's arguments for ``F.affine(angle, translate, scale=1, shear, center, interpolation, fill)``
    of a ``height x width`` image (``interp``: the index of the row's interpolation choice, 0 nearest, 1
    bilinear; ``fill``: a grey level, or ``None``): a ``center`` other than the image's centre is folded into the
    translation (``t' = c + t - M c`` in centred coordinates, ``M`` the rotation-shear matrix)."""
    tx, ty = float(translate[0]), float(translate[1])
    if center is not None:
        cx, cy = float(center[0]) - width * 0.5, float(center[1]) - height * 0.5
        a, b, c, d = _forward_matrix(angle, shear)
        tx += cx - (a * cx + b * cy)
        ty += cy - (c * cx + d * cy)
    return {"angle": float(angle), "translate": (tx, ty), "shear": (float(shear[0]), float(shear[1])),
            "interpolation": int(interp), "fill": fill}


class AugmentProgram:
    """The fused augmentations of a plan: ``samplers`` (uint8 ops, in order) and ``eraser`` (the erasing
    after the normalisation, or ``None``), for crops of ``height x width``."""

    def __init__(self, samplers: Sequence[Any], eraser: Any, height: int, width: int) -> None:
        self.samplers = list(samplers)
        self.eraser = eraser
        self.height, self.width = int(height), int(width)
        self.max_rows = sum(s.max_rows for s in self.samplers)

    def sample(self, seed: int) -> list[AugmentOp]:
        """The ops of the sample with this ``seed`` (uint8 ops first, then the erasing if it happens)."""
        rng = Rng(seed)
        ops: list[AugmentOp] = []
        for s in self.samplers:
            ops.extend(s.draw(rng, self.height, self.width))
        if self.eraser is not None:
            ops.extend(self.eraser.draw(rng, self.height, self.width))
        return ops

    def build(self, seeds: torch.Tensor) -> dict[str, torch.Tensor | None]:
        """``{"augment": Tensor[N, K, 8] | None, "erase": Tensor[N, 8] | Tensor[N, B, 8] | None}`` for int64
        ``seeds`` [N] (``erase`` 3-D when the eraser can draw more than one box).

        Raises:
            TypeError, ValueError: a sample drew an op torchvision fails on (Posterize of a one-bin policy):
                the error torchvision raises, naming the sample (attributes ``sample_index``, its index in
                ``seeds``, and ``reason``, the message without it) and its seed.
        """
        n = len(seeds)
        k = max(self.max_rows, 1)
        boxes = max(self.eraser.max_rows, 1) if self.eraser is not None else 1
        aug: list[float] = []
        erase: list[float] = []
        row, erase_row = codes.AUGMENT_COLUMNS, codes.ERASE_COLUMNS
        pad, erase_pad = [0.0] * row, [0.0] * erase_row
        for i, seed in enumerate(seeds.tolist()):
            rows = erased = 0
            try:
                ops = self.sample(seed)
            except (TypeError, ValueError) as e:
                err = type(e)(f"sample {i} (seed {seed}): {e}")
                err.sample_index, err.reason = i, f"(seed {seed}): {e}"  # type: ignore[attr-defined]
                raise err from None
            for op in ops:
                if op.op == "erase":
                    erase += op.row()
                    erased += 1
                else:
                    aug += op.row()
                    rows += 1
            aug += pad * (k - rows)
            erase += erase_pad * (boxes - erased)
        shape = (n, erase_row) if boxes == 1 else (n, boxes, erase_row)
        return {"augment": torch.tensor(aug, dtype=torch.float32).view(n, k, row) if self.samplers else None,
                "erase": torch.tensor(erase, dtype=torch.float32).view(shape) if self.eraser is not None else None}

    def names(self) -> list[str]:
        return [s.name for s in self.samplers] + ([self.eraser.name] if self.eraser is not None else [])
