"""Remote shards read by their member table: only the byte ranges of the samples a reader asks for are
fetched, straight into the buffers their members are views of, and no tar header is parsed (each is only
checked against the table)."""

from __future__ import annotations

import dataclasses
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from typing import Any

import torch

from ._tar import Sample, _error, sample_span, split_sample

__all__ = ["StreamTableCursor"]

FetchInto = Callable[[int, int, memoryview], "Future[int]"]  # (start, stop, out) -> bytes written, on the loop


@dataclasses.dataclass
class _Span:
    """Rows ``[a, b)`` read into one buffer: the shard's bytes ``[lo, hi)``, from the first wanted sample's
    header to the last one's end (short runs of unwanted samples between are read through)."""

    a: int
    b: int
    lo: int
    hi: int
    buf: torch.Tensor | None = None


class StreamTableCursor:
    """Reads the samples of a remote plain tar by its member table. The wanted samples are grouped into spans
    of consecutive samples (up to ``max_run`` bytes; a run of unwanted samples shorter than ``max_gap`` bytes is
    read through, a longer one skipped); each span is one buffer, fetched in pieces of ``chunk_size`` bytes by
    ``fetch_into(start, stop, out)``, ``read_ahead`` pieces in flight ahead of the reader (across spans), and
    its samples' members are views of it. Same interface as :class:`ShardCursor`."""

    max_run = 16 << 20  # bytes of one span's buffer

    def __init__(self, name: str, table: Any, fetch_into: FetchInto, *, max_gap: int, chunk_size: int,
                 read_ahead: int) -> None:
        self.name, self._table, self._fetch_into = name, table, fetch_into
        self._max_gap, self._chunk, self._ahead = max_gap, max(1, chunk_size), max(1, read_ahead)
        self._inflight: deque[tuple[_Span, int, int, Future]] = deque()

    def close(self) -> None:
        for *_, fut in self._inflight:
            fut.cancel()
        self._inflight.clear()

    def key_after(self, index: int) -> None:
        """Not checked for a remote shard read by its table (it would cost a request): None."""
        return None

    def _spans(self, rows: range, want: Callable[[int], bool] | None) -> list[_Span]:
        spans: list[_Span] = []
        for i in rows:
            if want is not None and not want(i):
                continue
            lo, hi = sample_span(*self._table[i][2:])
            last = spans[-1] if spans else None
            if last is not None and lo - last.hi <= self._max_gap and hi - last.lo <= self.max_run:
                last.b, last.hi = i + 1, hi
            else:
                spans.append(_Span(i, i + 1, lo, hi))
        return spans

    def read(self, start: int, stop: int, want: Callable[[int], bool] | None = None) -> Iterator[Sample]:
        rows = range(start, min(stop, len(self._table)))
        spans = self._spans(rows, want)
        pieces = deque((s, off, min(off + self._chunk, s.hi)) for s in spans for off in range(s.lo, s.hi, self._chunk))

        def submit() -> None:
            while pieces and len(self._inflight) < self._ahead:
                s, off, end = pieces.popleft()
                if s.buf is None:
                    s.buf = torch.empty(s.hi - s.lo, dtype=torch.uint8)
                view = memoryview(s.buf.numpy()).cast("B")[off - s.lo:end - s.lo]
                self._inflight.append((s, off, end, self._fetch_into(off, end, view)))

        try:
            row = rows.start
            for s in spans:
                for index in range(row, s.a):  # unwanted rows before the span
                    yield Sample(self._table[index][0], index, None)
                submit()
                got = 0  # bytes of the span's buffer filled from its start
                while self._inflight and self._inflight[0][0] is s:
                    _, off, end, fut = self._inflight.popleft()
                    n = fut.result()
                    if got == off - s.lo:
                        got += n
                    submit()
                for index in range(s.a, s.b):
                    key, exts, offsets, sizes = self._table[index]
                    if want is not None and not want(index):
                        yield Sample(key, index, None)
                        continue
                    if sample_span(offsets, sizes)[1] > s.lo + got:
                        raise _error(self.name, key, f"{key}.{exts[-1]}",
                                     f"truncated member (the shard ended at byte {s.lo + got})")
                    yield Sample(key, index, split_sample(self.name, key, exts, offsets, sizes, s.buf, s.lo))
                s.buf = None  # the samples hold their views; the cursor does not
                row = s.b
            for index in range(row, rows.stop):
                yield Sample(self._table[index][0], index, None)
        finally:
            self.close()
