"""timm's ``RandomErasing`` (``timm.data.random_erasing``) as a fused eraser: its box rule, box count and colour
modes drawn from each sample's seed, written by ``decode_images(erase=...)`` into the normalised slot.

timm's rule, per sample of ``H x W``: skipped when ``random() > probability``; ``count`` boxes (``min_count``, or
uniform in ``[min_count, max_count]``), each from up to 10 attempts of ``area = uniform(min_area, max_area) *
H * W / count``, ``aspect = exp(uniform(log_aspect_ratio))``, ``h = round(sqrt(area * aspect))``, ``w =
round(sqrt(area / aspect))``, kept when ``h < H and w < W``, at ``top`` uniform in ``[0, H - h]`` and ``left``
in ``[0, W - w]``; later boxes overwrite earlier ones. ``mode``: ``"const"`` zeros, ``"rand"`` one normal(0, 1)
value per channel and box, ``"pixel"`` normal(0, 1) per pixel (the op's random erase, one stream per box).
"""

from __future__ import annotations

import math
import numbers
from typing import Any

from ._augment_program import AugmentOp, Rng, Sampler

__all__ = ["TimmErasing"]

_MODES = ("const", "rand", "pixel", "")


def _normal(rng: Rng) -> float:
    """One normal(0, 1) value (Box-Muller, the cosine half)."""
    u1 = 1.0 - rng.random()  # (0, 1]
    return math.sqrt(-2.0 * math.log(u1)) * math.cos(2.0 * math.pi * rng.random())


class TimmErasing:
    """Stands for a timm ``RandomErasing`` in a fused plan (what :func:`._timm.translate` maps it to).

    What timm runs fuses with timm's meaning: any ``probability`` (skipped when ``random() > probability``),
    areas in either order (``uniform(min_area, max_area)``; a box too large for the image is never placed), a
    count of 0 or less (no box).

    Raises:
        ValueError: ``probability`` not a number, a negative or infinite area (timm's box of it fails), counts not
            integers with ``min_count <= max_count`` (timm's ``randint`` refuses them), or an unknown ``mode``
            (naming the argument).
    """

    def __init__(self, t: Any) -> None:
        p = t.probability
        if isinstance(p, bool) or not isinstance(p, numbers.Real):
            raise ValueError(f"RandomErasing (timm): probability={p!r} is invalid (a number: the probability)")
        areas = (t.min_area, t.max_area)
        if not all(isinstance(a, numbers.Real) and 0 <= a < math.inf for a in areas):
            raise ValueError(f"RandomErasing (timm): min_area/max_area=({t.min_area}, {t.max_area}) is invalid "
                             "(finite numbers >= 0)")
        counts = (t.min_count, t.max_count)
        if not all(isinstance(c, int) and not isinstance(c, bool) for c in counts) or not t.min_count <= t.max_count:
            raise ValueError(f"RandomErasing (timm): min_count/max_count=({t.min_count}, {t.max_count}) is invalid "
                             "(integers, min <= max)")
        if t.mode not in _MODES:
            raise ValueError(f"RandomErasing (timm): mode={t.mode!r} is invalid (one of 'const', 'rand', 'pixel')")
        self.probability = float(p)
        self.min_area, self.max_area = float(t.min_area), float(t.max_area)
        self.log_aspect_ratio = tuple(float(r) for r in t.log_aspect_ratio)
        self.min_count, self.max_count = t.min_count, t.max_count
        self.mode = t.mode or "const"

    def __repr__(self) -> str:
        return (f"RandomErasing(timm, p={self.probability}, mode={self.mode}, "
                f"count=({self.min_count}, {self.max_count}))")

    def sampler(self, channels: int) -> tuple[Sampler, str]:
        """The eraser of a slot with ``channels`` channels: up to ``max_count`` erase rows per sample."""
        p, lo, hi, (r0, r1) = self.probability, self.min_area, self.max_area, self.log_aspect_ratio
        c0, c1, mode = self.min_count, self.max_count, self.mode

        def draw(rng: Rng, h: int, w: int) -> list[AugmentOp]:
            if rng.random() > p:
                return []
            count = c0 if c0 == c1 else c0 + rng.randint(c1 - c0 + 1)
            ops = []
            for _ in range(count):
                for _attempt in range(10):
                    target = rng.uniform(lo, hi) * h * w / count
                    aspect = math.exp(rng.uniform(r0, r1))
                    eh = int(round(math.sqrt(target * aspect)))
                    ew = int(round(math.sqrt(target / aspect)))
                    if ew < w and eh < h:
                        top, left = rng.randint(h - eh + 1), rng.randint(w - ew + 1)
                        if mode == "pixel":
                            fill, vals = "random", (0.0, 0.0, 0.0)
                        elif mode == "rand":
                            vals = tuple(_normal(rng) for _ in range(channels)) + (0.0,) * (3 - channels)
                            fill = "value"
                        else:
                            fill, vals = "value", (0.0, 0.0, 0.0)
                        box = {"top": top, "left": left, "height": eh, "width": ew}
                        ops.append(AugmentOp("erase", {"mode": fill, **box, "value": vals}, "RandomErasing",
                                             "RandomErasing"))
                        break
            return ops

        return Sampler("RandomErasing", max(c1, 0), draw), ""
