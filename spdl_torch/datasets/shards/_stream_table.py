"""Remote shards read by their member table: only the byte ranges of the samples a reader asks for are
streamed, and no tar header is parsed (each is only checked against the table)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import torch

from ._remote import ShortObjectError
from ._tar import Sample, _error, sample_span, split_sample

__all__ = ["StreamTableCursor"]


class StreamTableCursor:
    """Reads the samples of a remote plain tar by its member table: the bytes of the samples asked for are
    streamed (``open_range(start, stop)`` -> a raw stream of the shard's bytes ``[start, stop)``), from the first
    wanted sample's header on, without parsing tar headers (only checking them against the table); a run of
    unwanted samples longer than ``max_gap`` bytes is skipped by a new range instead of being read through.
    Consecutive wanted samples (up to ``max_run`` bytes) are read into one buffer, their members views of it.
    Same interface as :class:`ShardCursor`."""

    max_run = 16 << 20  # bytes of consecutive wanted samples read into one buffer

    def __init__(self, name: str, table: Any, open_range: Callable[[int, int], Any], max_gap: int) -> None:
        self.name, self._table, self._open_range, self._max_gap = name, table, open_range, max_gap
        self._stream: Any = None
        self._pos = 0   # shard offset of the stream's next byte
        self._stop = 0  # shard offset where the stream ends

    def close(self) -> None:
        if self._stream is not None:
            self._stream.close()
            self._stream = None

    def _seek(self, first: int, stop: int) -> None:
        """Positions the stream at shard offset ``first`` (reading through a short gap, else a new range)."""
        if self._stream is not None and self._pos <= first <= self._pos + self._max_gap and stop <= self._stop:
            self._skip(first - self._pos)
            return
        self.close()
        self._stream, self._pos, self._stop = self._open_range(first, stop), first, stop

    def _skip(self, n: int) -> None:
        scratch = bytearray(min(n, 1 << 20))
        while n > 0:
            got = self._readinto(memoryview(scratch)[:min(n, len(scratch))])
            n -= got

    def _readinto(self, view: memoryview) -> int:
        got = self._stream.readinto(view)
        if not got:
            raise EOFError(f"the shard ended at byte {self._pos}")
        self._pos += got
        return got

    def _runs(self, rows: range, want: Callable[[int], bool] | None) -> Iterator[tuple[int, int, bool]]:
        """``rows`` as runs ``(a, b, wanted)`` of consecutive rows all wanted or all not; a wanted run spans at
        most ``max_run`` bytes (it is read into one buffer)."""
        a = rows.start
        while a < rows.stop:
            wanted = want is None or want(a)
            b, lo = a + 1, sample_span(*self._table[a][2:])[0]
            while b < rows.stop and (want is None or want(b)) == wanted and (
                    not wanted or sample_span(*self._table[b][2:])[1] - lo <= self.max_run):
                b += 1
            yield a, b, wanted
            a = b

    def read(self, start: int, stop: int, want: Callable[[int], bool] | None = None) -> Iterator[Sample]:
        rows = range(start, min(stop, len(self._table)))
        wanted = [i for i in rows if want is None or want(i)]
        end = sample_span(*self._table[wanted[-1]][2:])[1] if wanted else 0
        for a, b, is_wanted in self._runs(rows, want):
            if not is_wanted:
                for index in range(a, b):
                    yield Sample(self._table[index][0], index, None)
                continue
            # consecutive wanted samples: one buffer, members are views of it
            first, last = sample_span(*self._table[a][2:])[0], sample_span(*self._table[b - 1][2:])[1]
            buf = torch.empty(last - first, dtype=torch.uint8)
            view = memoryview(buf.numpy()).cast("B")
            got, failure = 0, None
            try:
                self._seek(first, end)
                while got < len(view):
                    got += self._readinto(view[got:])
            except (EOFError, ShortObjectError) as e:
                self.close()
                failure = e
            for index in range(a, b):
                key, exts, offsets, sizes = self._table[index]
                if failure is not None and sample_span(offsets, sizes)[1] > first + got:
                    raise _error(self.name, key, f"{key}.{exts[-1]}", f"truncated member ({failure})")
                yield Sample(key, index, split_sample(self.name, key, exts, offsets, sizes, buf, first))
