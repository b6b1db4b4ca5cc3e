"""Per-sample seeds of the fused random transforms."""

from __future__ import annotations

from collections.abc import Sequence

import torch

__all__ = ["sample_seeds"]

_MASK64 = (1 << 64) - 1


def _splitmix64(x: int) -> int:
    x = (x + 0x9E3779B97F4A7C15) & _MASK64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _MASK64
    return x ^ (x >> 31)


def sample_seeds(base_seed: int, epoch: int, indices: Sequence[int]) -> torch.Tensor:
    """Per-sample seeds: ``splitmix64(splitmix64(splitmix64(base_seed) ^ epoch) ^ index)`` as int64 [N].
    Depends only on (base_seed, epoch, index), never on batch composition or thread count."""
    head = _splitmix64(_splitmix64(int(base_seed) & _MASK64) ^ (int(epoch) & _MASK64))
    out = []
    for i in indices:
        v = _splitmix64(head ^ (int(i) & _MASK64))
        out.append(v - (1 << 64) if v >= 1 << 63 else v)
    return torch.tensor(out, dtype=torch.int64)
