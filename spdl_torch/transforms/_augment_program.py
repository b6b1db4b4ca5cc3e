"""Augmentation programs: the per-sample rows of ``decode_images(augment=..., erase=...)``.

A fused plan holds a list of samplers (:mod:`._policies`), one per fused torchvision augmentation; for each
sample they draw, from a stream seeded by the sample's seed only, the ops that sample gets
(:class:`AugmentOp`), which become one row of 8 float32 values each:

* ``augment`` Tensor[N, K, 8]: ``[code, a0 .. a6]`` applied in order to the uint8 RGB crop after the resize
  and flips, before the dtype conversion (code 0: nothing; K: the most rows any sample can get);
* ``erase`` Tensor[N, 8] (or Tensor[N, B, 8] for an eraser of up to B boxes, timm's ``max_count``):
  ``[apply, i, j, h, w, v0, v1, v2]`` on the slot after the normalisation (apply 0: padding).

The affine row follows ``torchvision.transforms.v2.functional.affine``'s conventions about the image centre:
``angle`` clockwise in degrees, ``translate`` in pixels (a centre other than the image's is folded into the
translation, so it may be fractional), ``shear`` in degrees; ``rotate(a)`` is ``affine(angle=-a)``; fill
``NO_FILL`` (-1) stands for torchvision's ``fill=None``.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

import torch

from .._seeds import splitmix64

# Op codes of the augment rows: the native op's table (csrc/core/augment/ops.h, mirrored in _augment_codes).
from ._augment_codes import (
    AFFINE, AUTOCONTRAST, BRIGHTNESS, CONTRAST, EQUALIZE, FILL, GAUSSIAN_BLUR, GRAYSCALE, HUE, INVERT, MIX_ADD,
    MIX_BEGIN, MIX_END, NO_FILL, NOOP, PIL_AFFINE, PIL_AFFINE_LOW, PIL_AUTOCONTRAST, PIL_ENHANCE, PIL_HUE, POSTERIZE,
    SATURATION, SHARPNESS, SOLARIZE, SOLARIZE_ADD,
)
from ._augment_codes import AUGMENT_COLUMNS as ROW
from ._augment_codes import ERASE_OFF as ERASE_NONE
from ._augment_codes import ERASE_RANDOM, ERASE_VALUE

# The row constants are also this module's names (the policies and the tests' reference read them here).
__all__ = ["AugmentOp", "AugmentProgram", "ERASE_NONE", "ERASE_RANDOM", "ERASE_VALUE", "NO_FILL", "Rng", "affine_args",
           "interpolation_choice", "native_augment"]

#: Op name -> code, as reported in :class:`AugmentOp`.
CODES = {
    "identity": NOOP, "affine": AFFINE, "brightness": BRIGHTNESS, "contrast": CONTRAST, "saturation": SATURATION, "hue": HUE,
    "sharpness": SHARPNESS, "posterize": POSTERIZE, "solarize": SOLARIZE, "autocontrast": AUTOCONTRAST,
    "equalize": EQUALIZE, "invert": INVERT, "grayscale": GRAYSCALE, "gaussian_blur": GAUSSIAN_BLUR,
    "fill": FILL, "pil_affine": PIL_AFFINE, "solarize_add": SOLARIZE_ADD, "mix_begin": MIX_BEGIN, "mix_add": MIX_ADD,
    "mix_end": MIX_END, "pil_affine_low": PIL_AFFINE_LOW, "pil_enhance": PIL_ENHANCE, "pil_hue": PIL_HUE,
    "pil_autocontrast": PIL_AUTOCONTRAST,
}

_MASK64 = (1 << 64) - 1
_SALT = 0x6A09E667F3BCC909  # separates the augmentation stream from the geometry's draws of the same seed


_INTERP_SALT = 0xBB67AE8584CAA73B  # the per-sample choice of a resampling filter (timm's interpolation="random")


def interpolation_choice(seed: int, n: int) -> int:
    """Which of ``n`` resampling filters the sample with this ``seed`` gets (uniform, as ``random.choice``)."""
    return Rng(int(seed) ^ _INTERP_SALT).randint(n)


def native_augment() -> bool:
    """Whether this build's :func:`spdl_torch.io.decode_images` takes ``augment`` / ``erase`` (the fused
    augmentations need it; without it they run per sample in Python)."""
    import inspect

    from ..io import decode_images

    return "augment" in inspect.signature(decode_images).parameters


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
    """One op a sample gets. ``op``: a kernel op name (``"affine"``, ``"brightness"``, ..., ``"erase"``);
    ``args``: the row's arguments ``a0..a6`` as ``decode_images`` takes them (``erase``: ``apply, i, j, h, w,
    v0, v1, v2``; the codes and arguments of every op: :func:`spdl_torch.io.decode_images`, "Augment and erase
    rows", e.g. ``pil_affine``'s a6 is 0 nearest, 1 bilinear, 2 bicubic); ``transform``: the transform that drew it;
    ``name`` / ``magnitude``: the policy's op name and its value: for torchvision's policies the signed
    magnitude as torchvision draws it (e.g. ``"ShearX"``, -0.3), for timm's the op's argument after timm's
    level rule (Posterize: bits, Solarize: threshold, ShearX: the shear factor); ``None`` where there is none.
    A ``fill`` or ``pil_affine_low`` row carries the name of the geometric op it serves (a PIL image's rotation
    or affine: ``fill``, ``pil_affine_low`` rows, ``pil_affine`` with the magnitude). AugMix's rows:
    ``mix_begin`` (the weight of the original image), then each chain's ops and a ``mix_add`` (the chain's
    weight), then ``mix_end`` (mode 0 torchvision's mix, 1 timm's, whose a1 is the blend factor ``m``)."""

    op: str
    args: tuple[float, ...]
    transform: str
    name: str
    magnitude: float | None = None

    def row(self) -> list[float]:
        if self.op == "erase":
            return list(self.args)
        return [float(CODES[self.op]), *self.args, *([0.0] * (ROW - 1 - len(self.args)))]


def _forward_matrix(angle: float, shear: Sequence[float]) -> tuple[float, float, float, float]:
    """torchvision's rotation-shear matrix (scale 1) of ``_get_inverse_affine_matrix``, forward direction."""
    rot, sx, sy = math.radians(angle), math.radians(shear[0]), math.radians(shear[1])
    a = math.cos(rot - sy) / math.cos(sy)
    b = -math.cos(rot - sy) * math.tan(sx) / math.cos(sy) - math.sin(rot)
    c = math.sin(rot - sy) / math.cos(sy)
    d = -math.sin(rot - sy) * math.tan(sx) / math.cos(sy) + math.cos(rot)
    return a, b, c, d


def affine_args(angle: float, translate: Sequence[float], shear: Sequence[float], center: Sequence[float] | None,
                interp: int, fill: float, height: int, width: int) -> tuple[float, ...]:
    """The affine row's ``a0..a6`` for ``F.affine(angle, translate, scale=1, shear, center)`` of a
    ``height x width`` image: a ``center`` other than the image's centre is folded into the translation
    (``t' = c + t - M c`` in centred coordinates, ``M`` the rotation-shear matrix)."""
    tx, ty = float(translate[0]), float(translate[1])
    if center is not None:
        cx, cy = float(center[0]) - width * 0.5, float(center[1]) - height * 0.5
        a, b, c, d = _forward_matrix(angle, shear)
        tx += cx - (a * cx + b * cy)
        ty += cy - (c * cx + d * cy)
    return (float(angle), tx, ty, float(shear[0]), float(shear[1]), float(interp), float(fill))


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
        pad = [0.0] * ROW
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
            erase += pad * (boxes - erased)
        shape = (n, ROW) if boxes == 1 else (n, boxes, ROW)
        return {"augment": torch.tensor(aug, dtype=torch.float32).view(n, k, ROW) if self.samplers else None,
                "erase": torch.tensor(erase, dtype=torch.float32).view(shape) if self.eraser is not None else None}

    def names(self) -> list[str]:
        return [s.name for s in self.samplers] + ([self.eraser.name] if self.eraser is not None else [])
