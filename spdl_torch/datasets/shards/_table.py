"""A shard's member table (``<shard>.members.json``, written by ``write_shards``) and the reads it allows: the
table held compactly (:class:`MemberTable`: a few flat arrays instead of Python lists per sample); a local plain
tar read sample by sample with one positioned read each (:class:`TableCursor`); a remote one by fetching only the
byte ranges of the samples a reader asks for, straight into the buffers their members are views of
(:class:`StreamTableCursor`). Neither parses a tar header: each is only checked against the table.

Why: a table of n samples parsed as JSON rows is about 7n lists that live as long as the shard is read. In a
process that imported torch and torchvision, each full collection of Python's cyclic garbage collector scans
every live container, about 170 ms with the GIL held (measured: parsing one 2,000-sample table tipped a full
collection that cost the first batch of an epoch 0.17 s). Here the rows are parsed with the collector paused
and converted at once to arrays of untracked objects (str, int), so a loaded table adds a handful of
containers whatever its size.
"""

from __future__ import annotations

import dataclasses
import gc
import json
import os
from array import array
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from typing import Any

import torch

from ._tar import Sample, _error, split_name

__all__ = ["MemberTable", "StreamTableCursor", "TableCursor", "sample_span", "split_sample"]

class MemberTable:
    """Rows ``(key, exts, offsets, sizes)`` of a shard's samples: ``exts`` a tuple of the members' extensions,
    ``offsets`` / ``sizes`` lists of their data offsets and sizes in bytes (a member's 512-byte header precedes
    its data).

    Raises:
        ValueError: the text is not a member table of ``format`` with ``num_samples`` rows, or (``num_bytes``
            given) one of its members ends past the shard's size.
    """

    __slots__ = ("_keys", "_exts", "_first", "_offsets", "_sizes")

    def __init__(self, text: str | bytes, *, format: str, num_samples: int, num_bytes: int | None = None) -> None:
        enabled = gc.isenabled()
        gc.disable()
        try:
            doc = json.loads(text)
            rows = doc.get("samples") if isinstance(doc, dict) and doc.get("format") == format else None
            if not isinstance(rows, list) or len(rows) != num_samples:
                got = "no table" if rows is None else f"{len(rows)} samples"
                raise ValueError(f"not a {format} member table of {num_samples} samples ({got})")
            try:
                self._keys = [str(r[0]) for r in rows]
                shared: dict[tuple, tuple] = {}
                self._exts = [shared.setdefault(t, t) for t in (tuple(str(e) for e in r[1]) for r in rows)]
                self._first = array("q", [0])
                self._offsets, self._sizes = array("q"), array("q")
                for r in rows:
                    if not len(r[1]) == len(r[2]) == len(r[3]) > 0:
                        raise ValueError(f"not a {format} member table: row {r[0]!r} has {len(r[1])} extensions, "
                                         f"{len(r[2])} offsets and {len(r[3])} sizes")
                    self._offsets.extend(r[2])
                    self._sizes.extend(r[3])
                    self._first.append(len(self._offsets))
            except (TypeError, IndexError, KeyError, OverflowError) as e:
                raise ValueError(f"not a {format} member table: a row is not [key, [ext], [offset], [size]] "
                                 f"({type(e).__name__}: {e})") from None
            if self._offsets and (min(self._offsets) < 512 or min(self._sizes) < 0):
                raise ValueError(f"not a {format} member table: an offset below 512 or a negative size")
            if num_bytes is not None and self._offsets:
                end = max(o + n for o, n in zip(self._offsets, self._sizes))
                if end > num_bytes:  # nothing is allocated or fetched for a member the shard cannot hold
                    raise ValueError(f"a member ends at byte {end}, past the shard's {num_bytes} bytes")
            del doc, rows
        finally:
            if enabled:
                gc.enable()

    def __len__(self) -> int:
        return len(self._keys)

    def __getitem__(self, i: int) -> tuple[str, tuple, list[int], list[int]]:
        a, b = self._first[i], self._first[i + 1]
        return self._keys[i], self._exts[i], self._offsets[a:b].tolist(), self._sizes[a:b].tolist()


class TableCursor:
    """Reads the samples of a local plain tar by the member table ``write_shards`` wrote beside it: each sample
    with one positioned read (``os.preadv``) of its headers and data into one buffer, each member's data a uint8
    tensor view of it; no header is parsed, only checked against the table (name and size), so a table that
    does not match its shard is an error, not silent garbage. Same interface as :class:`ShardCursor`."""

    def __init__(self, name: str, path: str, table: list) -> None:
        self.name, self._path, self._table = name, path, table
        self._fd: int | None = None
        self._file_size = 0

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def _read(self, key: str, exts: list, offsets: list, sizes: list) -> dict[str, torch.Tensor]:
        """The sample's members with one positioned read (they are consecutive in the archive: from the first
        header to the end of the last member's data) into one uninitialised buffer; members are views of it."""
        first, end = sample_span(offsets, sizes)
        if end > self._file_size or first < 0:
            raise _error(self.name, key, f"{key}.{exts[-1]}", f"truncated member (the shard ends at byte "
                                                             f"{self._file_size}, the member at {end})")
        buf = torch.empty(end - first, dtype=torch.uint8)
        got = os.preadv(self._fd, [buf.numpy()], first)
        if got != end - first:
            raise _error(self.name, key, f"{key}.{exts[-1]}", f"truncated member (read {got} of {end - first} bytes)")
        return split_sample(self.name, key, exts, offsets, sizes, buf, first)

    def sample(self, index: int) -> Sample | None:
        """Sample ``index`` read now (random access), or None past the table's end."""
        if self._fd is None:
            self._fd = os.open(self._path, os.O_RDONLY)
            self._file_size = os.fstat(self._fd).st_size
        if not 0 <= index < len(self._table):
            return None
        key, exts, offsets, sizes = self._table[index]
        return Sample(key, index, self._read(key, exts, offsets, sizes))

    def key_after(self, index: int) -> str | None:
        """After the table's last sample: the name of the member whose header follows it in the shard, when
        one does (the index and table under-count the shard), else None. Only the block after the last
        member's data is read."""
        if index != len(self._table) - 1 or self._fd is None:
            return None
        _, _, offsets, sizes = self._table[index]
        at = offsets[-1] + -(-sizes[-1] // 512) * 512
        block = os.pread(self._fd, 512, at) if at + 512 <= self._file_size else b""
        if len(block) < 512 or not block.strip(b"\0"):
            return None
        return split_name(block[:100].split(b"\0", 1)[0].decode("utf-8", "replace"))[0]

    def read(self, start: int, stop: int, want: Callable[[int], bool] | None = None) -> Iterator[Sample]:
        if self._fd is None:
            self._fd = os.open(self._path, os.O_RDONLY)
            self._file_size = os.fstat(self._fd).st_size
        for index in range(start, min(stop, len(self._table))):
            key, exts, offsets, sizes = self._table[index]
            if want is not None and not want(index):
                yield Sample(key, index, None)
                continue
            yield Sample(key, index, self._read(key, exts, offsets, sizes))


def sample_span(offsets: list, sizes: list) -> tuple[int, int]:
    """A table row's bytes in the shard: from its first member's header to the end of its last member's data
    (in a table write_shards wrote; one whose members are out of order still gets every member inside, never a
    negative span: the members' headers then tell it does not match the shard)."""
    return min(offsets) - 512, max(o + n for o, n in zip(offsets, sizes))


def split_sample(name: str, key: str, exts: list, offsets: list, sizes: list, buf: torch.Tensor,
                 first: int) -> dict[str, torch.Tensor]:
    """The members of a sample read into ``buf`` (its bytes from shard offset ``first`` on), as views of it,
    after checking each member's header against the table (name and size): a table that does not match its
    shard is a :class:`spdl_torch.DecodeError`, not silent garbage."""
    raw = buf.numpy()
    out = {}
    for ext, offset, size in zip(exts, offsets, sizes):
        member = f"{key}.{ext}"
        h = offset - 512 - first
        encoded = member.encode()
        if h < 0 or len(encoded) < 100 and (raw[h:h + len(encoded)].tobytes() != encoded or raw[h + len(encoded)] != 0
                                            or _octal(raw[h + 124:h + 136].tobytes()) != size):
            raise _error(name, key, member, "the member table does not match the shard (rewrite it with "
                                            "write_shards, or remove the index's 'members' entry)")
        out[ext] = buf[h + 512:h + 512 + size]
    return out


def _octal(field: bytes) -> int:
    text = bytes(field).split(b"\0", 1)[0].strip()
    try:
        return int(text or b"0", 8)
    except ValueError:
        return -1


FetchInto = Callable[[int, int, memoryview], "Future[int]"]  # (start, stop, out) -> bytes written, on the loop


@dataclasses.dataclass
class _Span:
    """Rows ``[a, b)`` read into one buffer: the shard's bytes ``[lo, hi)``, from the first wanted sample's
    header to the last one's end (short runs of unwanted samples between are read through). ``short``: the
    shard ends before ``hi`` (found before a buffer of that size was made)."""

    a: int
    b: int
    lo: int
    hi: int
    buf: torch.Tensor | None = None
    short: bool = False


class StreamTableCursor:
    """Reads the samples of a remote plain tar by its member table. The wanted samples are grouped into spans
    of consecutive samples (up to ``max_run`` bytes; a run of unwanted samples shorter than ``max_gap`` bytes is
    read through, a longer one skipped); each span is one buffer, fetched in pieces of ``chunk_size`` bytes by
    ``fetch_into(start, stop, out)``, ``read_ahead`` pieces in flight ahead of the reader (across spans), and
    its samples' members are views of it. A span over ``max_run`` bytes (one large sample) is made only once its
    last byte was fetched: a table whose sizes the shard does not hold costs no memory for them. Same interface as
    :class:`ShardCursor`."""

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
                last.b, last.hi = i + 1, max(last.hi, hi)  # rows that overlap (a forged table) never shrink it
            else:
                spans.append(_Span(i, i + 1, lo, hi))
        return spans

    def read(self, start: int, stop: int, want: Callable[[int], bool] | None = None) -> Iterator[Sample]:
        rows = range(start, min(stop, len(self._table)))
        spans = self._spans(rows, want)

        def pieces_of() -> Iterator[tuple[_Span, int, int]]:
            for s in spans:
                probe = memoryview(bytearray(1))
                if s.hi - s.lo > self.max_run and self._fetch_into(s.hi - 1, s.hi, probe).result() < 1:
                    s.short = True  # no buffer, no fetch: its samples are truncated
                    continue
                for off in range(s.lo, s.hi, self._chunk):
                    yield s, off, min(off + self._chunk, s.hi)

        pieces = pieces_of()
        piece = next(pieces, None)

        def submit() -> None:
            nonlocal piece
            while piece is not None and len(self._inflight) < self._ahead:
                s, off, end = piece
                if s.buf is None:
                    s.buf = torch.empty(s.hi - s.lo, dtype=torch.uint8)
                view = memoryview(s.buf.numpy()).cast("B")[off - s.lo:end - s.lo]
                self._inflight.append((s, off, end, self._fetch_into(off, end, view)))
                piece = next(pieces, None)

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
                    if s.short:
                        raise _error(self.name, key, f"{key}.{exts[-1]}",
                                     f"truncated member (the shard ends before byte {s.hi}, where the member ends)")
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
