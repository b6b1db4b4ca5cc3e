"""Per-sample seeds: a SplitMix64 chain over (base seed, epoch, index), shared by the loader's worker info and
the fused transforms, so a sample's random draws never depend on threads, batches or completion order."""

from __future__ import annotations

from collections.abc import Sequence

import torch

__all__ = ["sample_seed", "sample_seeds", "splitmix64"]

_MASK64 = (1 << 64) - 1


def splitmix64(x: int) -> int:
    """One SplitMix64 step of the 64-bit value ``x`` (taken modulo 2**64); a value in [0, 2**64)."""
    x = (x + 0x9E3779B97F4A7C15) & _MASK64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _MASK64
    return x ^ (x >> 31)


def _chain(base_seed: int, epoch: int, index: int) -> int:
    head = splitmix64(splitmix64(int(base_seed) & _MASK64) ^ (int(epoch) & _MASK64))
    return splitmix64(head ^ (int(index) & _MASK64))


def sample_seed(base_seed: int, epoch: int, index: int) -> int:
    """A 63-bit seed in [0, 2**63) that depends only on ``(base_seed, epoch, index)``."""
    return _chain(base_seed, epoch, index) >> 1


def sample_seeds(base_seed: int, epoch: int, indices: Sequence[int]) -> torch.Tensor:
    """``splitmix64(splitmix64(splitmix64(base_seed) ^ epoch) ^ index)`` as int64 Tensor[N] (the 64 bits
    reinterpreted as signed), one per index: the seeds the fused ``decode_images`` call draws from."""
    out = []
    for i in indices:
        v = _chain(base_seed, epoch, i)
        out.append(v - (1 << 64) if v >= 1 << 63 else v)
    return torch.tensor(out, dtype=torch.int64)
