"""The epoch's global sample order and its split over ranks and worker threads.

Definitions (all pure functions of ``(seed, epoch, shard sample counts, shuffle_buffer)``):

* the *input sequence* X: the shards in a seeded permutation, each shard's samples in file order;
* the *global order* G: X cut into consecutive blocks of ``shuffle_buffer`` samples, each block in a seeded
  permutation of its own (a reader holds one block, so memory is bounded by the buffer; a block mixes the
  samples of every shard it spans; without shuffling, G is X, still read a block at a time). ``G[p]`` is a
  global sample index (shard offset + index in the shard);
* a *split*: the positions of G still to deliver (intervals; the whole epoch at first) cut into ``world_size``
  equal contiguous parts (padded by repeating from the start, or the tail dropped, as ``DistributedSampler``),
  each cut into ``num_workers`` contiguous parts (sizes differ by at most one). A unit ``(rank, worker)``
  delivers its part in G's order, so it reads a contiguous stretch of X: few shards, sequentially.

Nothing depends on completion order. Progress is "unit u consumed the first c positions of its part", so a
state is a handful of integers, and the positions not yet consumed are known whatever split comes next.
"""

from __future__ import annotations

import bisect
import dataclasses
from collections.abc import Iterator, Sequence

import torch

from ..._seeds import sample_seed

__all__ = ["Layout", "Split", "intervals_len", "positions", "subtract", "take"]

Intervals = list[tuple[int, int]]  # half-open [start, stop) position ranges, in order
_SHARD_TAG = 0x5348  # keeps the shard permutation's stream apart from the blocks' (which use index >= 0)


def intervals_len(iv: Sequence[tuple[int, int]]) -> int:
    return sum(b - a for a, b in iv)


def take(iv: Sequence[tuple[int, int]], start: int, stop: int) -> Intervals:
    """Positions ``[start, stop)`` of the sequence that ``iv`` lists, as intervals."""
    out: Intervals = []
    pos = 0
    for a, b in iv:
        n = b - a
        lo, hi = max(start - pos, 0), min(stop - pos, n)
        if lo < hi:
            out.append((a + lo, a + hi))
        pos += n
        if pos >= stop:
            break
    return out


def positions(iv: Sequence[tuple[int, int]]) -> Iterator[int]:
    for a, b in iv:
        yield from range(a, b)


def normalize(iv: Sequence[tuple[int, int]]) -> Intervals:
    """Sorted, merged, non-empty."""
    out: Intervals = []
    for a, b in sorted((int(a), int(b)) for a, b in iv if b > a):
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def subtract(base: Sequence[tuple[int, int]], removed: Sequence[tuple[int, int]]) -> Intervals:
    """The positions of ``base`` (in its order) that are not in ``removed``."""
    rem = normalize(removed)
    out: Intervals = []
    for a, b in base:
        cur = a
        i = bisect.bisect_right(rem, (a, 1 << 62)) - 1
        i = max(i, 0)
        while cur < b:
            while i < len(rem) and rem[i][1] <= cur:
                i += 1
            if i == len(rem) or rem[i][0] >= b:
                out.append((cur, b))
                break
            ra, rb = rem[i]
            if ra > cur:
                out.append((cur, ra))
            cur = max(cur, rb)
    return out


@dataclasses.dataclass(frozen=True)
class Split:
    """Which part of ``base`` (intervals of G positions) unit ``(rank, worker)`` delivers."""

    world_size: int
    rank: int
    num_workers: int
    worker: int
    drop_last: bool

    def rank_size(self, base_len: int) -> int:
        """Samples per rank: equal on every rank."""
        if self.drop_last:
            return base_len // self.world_size
        return -(-base_len // self.world_size)

    def part(self, base: Sequence[tuple[int, int]]) -> Intervals:
        m = intervals_len(base)
        n = self.rank_size(m)
        if m == 0 or n == 0:
            return []
        padded = list(base)
        total = n * self.world_size
        while intervals_len(padded) < total:  # DistributedSampler's padding: repeat from the start
            padded += take(base, 0, total - intervals_len(padded))
        q, r = divmod(n, self.num_workers)
        lo = self.rank * n + self.worker * q + min(self.worker, r)
        hi = lo + q + (1 if self.worker < r else 0)
        return take(padded, lo, hi)


class Layout:
    """The epoch's order over shards with ``counts[i]`` samples each; ``offsets[i]`` is shard i's first global
    sample index."""

    def __init__(self, counts: Sequence[int], seed: int, epoch: int, shuffle: bool, shuffle_buffer: int) -> None:
        self.counts = [int(c) for c in counts]
        self.offsets = [0]
        for c in self.counts:
            self.offsets.append(self.offsets[-1] + c)
        self.num_samples = self.offsets[-1]
        self.seed, self.epoch, self.shuffle = int(seed), int(epoch), bool(shuffle)
        self.block = max(1, int(shuffle_buffer))  # unshuffled too: the unit of reading (one range per block)
        n = len(self.counts)
        if shuffle and n > 1:
            g = torch.Generator().manual_seed(sample_seed(self.seed, self.epoch, -_SHARD_TAG))
            self.shard_order = torch.randperm(n, generator=g).tolist()
        else:
            self.shard_order = list(range(n))
        self._x_offsets = [0]  # X position of each shard in permuted order
        for s in self.shard_order:
            self._x_offsets.append(self._x_offsets[-1] + self.counts[s])
        self._perm_cache: dict[int, list[int]] = {}

    def block_perm(self, k: int) -> list[int]:
        """Block k's permutation: G position ``k * block + j`` holds X position ``k * block + perm[j]``."""
        perm = self._perm_cache.get(k)
        if perm is None:
            size = min(self.block, self.num_samples - k * self.block)
            if not self.shuffle or self.block == 1 or size <= 1:
                perm = list(range(size))
            else:
                g = torch.Generator().manual_seed(sample_seed(self.seed, self.epoch, k))
                perm = torch.randperm(size, generator=g).tolist()
            if len(self._perm_cache) > 4:
                self._perm_cache.clear()
            self._perm_cache[k] = perm
        return perm

    def x_of(self, p: int) -> int:
        k, j = divmod(p, self.block)
        return k * self.block + self.block_perm(k)[j]

    def locate(self, x: int) -> tuple[int, int]:
        """``(shard, index in shard)`` of X position ``x``."""
        i = bisect.bisect_right(self._x_offsets, x) - 1
        return self.shard_order[i], x - self._x_offsets[i]

    def global_index(self, shard: int, j: int) -> int:
        return self.offsets[shard] + j

    def block_segments(self, k: int) -> list[tuple[int, int, int]]:
        """The X range of block k as ``(shard, first, stop)`` segments, in reading order."""
        lo = k * self.block
        hi = min(lo + self.block, self.num_samples)
        out = []
        x = lo
        while x < hi:
            shard, j = self.locate(x)
            n = min(hi - x, self.counts[shard] - j)
            out.append((shard, j, j + n))
            x += n
        return out
