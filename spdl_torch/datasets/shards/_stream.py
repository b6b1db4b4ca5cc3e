"""One unit's samples in global order: the sources (local files, URLs, an index), and the reader that walks a
unit's part of the global order block by block, reading each block's stretch of shards once, sequentially, the
next block read ahead on a thread of its own (:class:`ReadAhead`).

The read-ahead thread is one daemon thread running the calls submitted to it, in order. A one-thread
``concurrent.futures.ThreadPoolExecutor`` refuses new calls once the main thread has returned (its exit hook runs
before the interpreter waits for the user's non-daemon threads): a training thread still reading shards then
failed with "cannot schedule new futures after interpreter shutdown". This thread keeps serving until the
interpreter's own exit, where :mod:`spdl_torch._exit` ends it once idle and joins it.
"""

from __future__ import annotations

import asyncio
import collections
import threading
import warnings
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future
from typing import Any, BinaryIO

from ... import _exit
from ..._errors import DecodeError
from ._index import checked_read, load_index, read_bounded_local, table_limit
from ._order import Layout, positions, take
from ._object_store import is_object_url, require_obstore
from ._remote import FetchFn, RemoteStream, RetryPolicy, _Loop, fetch_range, fetch_range_into
from ._sources import resolve_sources
from ._table import MemberTable, StreamTableCursor, TableCursor
from ._tar import Sample, ShardCursor, _error, count_samples, is_url, local_opener, more_samples_error
from ._write import INDEX_FORMAT

__all__ = ["SchemeFetch", "ShardSet", "unit_samples"]


class SchemeFetch:
    """The default fetch: ``http(s)://`` URLs through :class:`._remote.HttpFetch` (aiohttp), object URLs through
    :class:`._object_store.ObjectStoreFetch` (obstore), each made on first use."""

    def __init__(self, limit: int, storage_options: Mapping[str, Any] | None, timeout: float) -> None:
        self.limit, self.storage_options, self.timeout = limit, storage_options, timeout
        self._http: Any = None
        self._objects: Any = None

    def objects(self, url: str) -> Any:
        if self._objects is None:
            require_obstore(url)
            from ._object_store import ObjectStoreFetch

            self._objects = ObjectStoreFetch(self.storage_options, timeout=self.timeout)
        return self._objects

    def _for(self, url: str) -> Any:
        if is_object_url(url):
            return self.objects(url)
        if self._http is None:
            from ._remote import HttpFetch

            self._http = HttpFetch(limit=self.limit)
        return self._http

    async def __call__(self, url: str, start: int, stop: int) -> bytes:
        return await self._for(url)(url, start, stop)

    async def into(self, url: str, start: int, stop: int, out: memoryview) -> int:
        return await self._for(url).into(url, start, stop, out)

class ShardSet:
    """The shards of a dataset: names, sample counts (from ``index.json`` or counted once) and openers.

    Raises:
        ValueError: no shard; an index of another format.
        OSError, spdl_torch.DecodeError: a shard or the index cannot be read.
    """

    def __init__(self, sources: Any, *, fetch: FetchFn | None, policy: RetryPolicy, max_concurrency: int,
                 chunk_size: int, read_ahead: int, cache: Any = None,
                 storage_options: Mapping[str, Any] | None = None,
                 on_damage: Callable[[BaseException], None] | None = None) -> None:
        self._fetch, self.policy = fetch, policy
        self.max_concurrency, self.chunk_size, self.read_ahead = max_concurrency, chunk_size, read_ahead
        self.cache = cache
        self.storage_options = storage_options
        resolved = resolve_sources(sources, self._list)
        self.tables: list[str | None]
        if resolved.index is not None:
            self._check_scheme(resolved.index)
            index = load_index(resolved.index, self._read_all)
            self.names, self.counts, self.sizes, self.tables = index.names, index.counts, index.sizes, index.tables
        else:
            self.names, self.sizes = resolved.names, resolved.sizes
            self.counts = None
            self.tables = [None] * len(self.names)
        self._rows: dict[int, MemberTable] = {}  # loaded member tables
        self.cut: set[int] = set()  # shards counted up to their damage (no index, on_error="skip")
        if not self.names:
            raise ValueError("TarShardDataset: expected at least one shard")
        for n in self.names:
            self._check_scheme(n)
        if self.counts is None:
            # no index: counted once; a damaged shard (on_damage: on_error="skip") counts the samples before it,
            # and is cut there: the samples after its count are the damage's, told of once, not a stale count
            self.counts = []
            for i, n in enumerate(self.names):
                damage: list[DecodeError] = []
                self.counts.append(count_samples(n, self.opener(i), damage.append if on_damage is not None else None))
                if damage:
                    self.cut.add(i)
                    on_damage(damage[0])

    def looks_past(self, shard: int, j: int) -> bool:
        """Whether reading sample ``j`` of ``shard`` looks for a sample after it (a count that is stale): ``j`` is
        its last counted sample and the count was not cut by a damage."""
        return j == self.counts[shard] - 1 and shard not in self.cut

    def _check_scheme(self, name: str) -> None:
        """An object URL without obstore is an ImportError naming the extra (unless a fetch of one's own reads it)."""
        if self._fetch is None and is_object_url(name):
            require_obstore(name)

    @property
    def fetch(self) -> FetchFn:
        if self._fetch is None:
            self._fetch = SchemeFetch(self.max_concurrency, self.storage_options, self.policy.timeout)
        return self._fetch

    def _list(self, prefix: str) -> list[tuple[str, int]]:
        """The objects directly under an object prefix (``(url, size)``, by name)."""
        fetch = self.fetch
        if not isinstance(fetch, SchemeFetch):
            raise ValueError(f"TarShardDataset: {prefix} is a prefix: with fetch= given, name the index or the shards")
        return fetch.objects(prefix).list(prefix, self.policy)

    def _read_all(self, source: str, limit: int) -> bytes:
        """At most ``limit + 1`` bytes of ``source`` (a path or URL; see :mod:`._index`)."""
        if not is_url(source):
            return read_bounded_local(source, limit)
        out, start, step = bytearray(), 0, 1 << 20
        while len(out) <= limit:
            stop = min(start + step, limit + 1)
            coro = fetch_range(self.fetch, source, start, stop, self.policy, self.max_concurrency)
            data = asyncio.run_coroutine_threadsafe(coro, _Loop.get()).result()
            out += data
            if len(data) < stop - start:
                break
            start = stop
        return bytes(out)

    def opener(self, i: int) -> Callable[[], tuple[BinaryIO, bool]]:
        name = self.names[i]
        if not is_url(name):
            return local_opener(name)

        def open_remote() -> tuple[BinaryIO, bool]:
            if self.cache is not None:
                path = self.cache.lookup(name)
                if path is not None:
                    return local_opener(path)()
            raw = RemoteStream(name, self.fetch, policy=self.policy, max_concurrency=self.max_concurrency,
                               chunk_size=self.chunk_size, read_ahead=self.read_ahead, size=self.sizes[i])
            import io

            return io.BufferedReader(raw, buffer_size=1 << 20), False

        return open_remote

    def random_access(self, i: int) -> bool:
        """Whether shard i's samples are read one by one as the order asks (a local shard with a member table)."""
        return self.tables[i] is not None and not is_url(self.names[i])

    def rows(self, i: int) -> MemberTable:
        """Shard i's member table, loaded once.

        Raises:
            spdl_torch.DecodeError: the table does not match the index.
        """
        rows = self._rows.get(i)
        if rows is None:
            table = self.tables[i]
            try:
                text = checked_read(self._read_all, table, table_limit(self.sizes[i]), "the member table")
                rows = self._rows[i] = MemberTable(text, format=INDEX_FORMAT, num_samples=self.counts[i],
                                                   num_bytes=self.sizes[i])
            except ValueError as e:
                reason = f"the member table {table} does not match the index: {e}"
                raise DecodeError(f"{self.names[i]}: {reason}", path=self.names[i], reason=reason) from None
        return rows

    def cursor(self, i: int) -> ShardCursor | TableCursor | StreamTableCursor:
        """A reader of shard i: by its member table when it has one (plain tars from write_shards; a remote
        shard streams only the samples asked for, or reads its cached copy), else through tarfile."""
        name = self.names[i]
        if self.tables[i] is None:
            return ShardCursor(name, self.opener(i))
        rows = self.rows(i)
        if not is_url(name):
            return TableCursor(name, name, rows)
        cached = self.cache.lookup(name) if self.cache is not None else None
        if cached is not None:
            return TableCursor(name, cached, rows)

        def fetch_into(start: int, stop: int, out: memoryview) -> Future:
            coro = fetch_range_into(self.fetch, name, start, stop, out, self.policy, self.max_concurrency)
            return asyncio.run_coroutine_threadsafe(coro, _Loop.get())

        return StreamTableCursor(name, rows, fetch_into, max_gap=self.chunk_size, chunk_size=self.chunk_size,
                                 read_ahead=self.read_ahead)

    def prefetch(self, i: int) -> None:
        """Starts downloading shard i into the cache (remote shards with a cache only)."""
        if self.cache is not None and is_url(self.names[i]):
            self.cache.prefetch(self.names[i], self.sizes[i], self.fetch, self.policy, self.max_concurrency,
                                self.chunk_size)


def _groups(layout: Layout, shards: ShardSet, part: Sequence[tuple[int, int]], start: int) -> Iterator[tuple]:
    """The positions ``part[start:]`` cut by block: ``(k, xs, where, random_access)`` per block ``k``, with the
    X positions, their ``(shard, index)`` and whether every one of them is read sample by sample."""
    it = positions(take(part, start, 1 << 62))
    p = next(it, None)
    while p is not None:
        k = p // layout.block
        group = [p]
        for p in it:
            if p // layout.block != k:
                break
            group.append(p)
        else:
            p = None
        xs = [layout.x_of(q) for q in group]
        where = [layout.locate(x) for x in xs]
        yield k, xs, where, all(shards.random_access(s) for s, _ in where)


def unit_samples(layout: Layout, shards: ShardSet, part: Sequence[tuple[int, int]], start: int,
                 on_error: Callable[[DecodeError], None]) -> Iterator[tuple[int, int, str, Sample | None]]:
    """Yields ``(ordinal, global_index, shard_name, sample)`` for the positions ``part[start:]`` (``ordinal``:
    the position's place in ``part``), in order. A sample lost to a damaged shard comes as ``None`` after
    ``on_error`` (which raises under the "raise" policy) was told why.

    Local shards with a member table are read sample by sample as the order asks (positioned reads: nothing is
    held, and a sample is decoded while its bytes are still in the CPU's cache); the others block by block, each
    block's stretch of shards once, sequentially, the next block read on a helper thread while this one is
    consumed (memory: up to two blocks of encoded members)."""
    cursors: dict[int, Any] = {}  # used by the reader thread only
    tables: dict[int, Any] = {}
    ordinal = start
    reader = ReadAhead("spdl_torch-shard-reader")
    ahead: Future | None = None  # the next block's read

    def read(group: tuple) -> dict[int, Sample]:
        k, xs, _, _ = group
        return _read_block(layout, shards, k, set(xs), cursors, on_error)

    try:
        groups = _groups(layout, shards, part, start)
        group = next(groups, None)
        while group is not None:
            _, xs, where, random_access = group
            if random_access:
                for shard, j in where:
                    yield ordinal, layout.global_index(shard, j), shards.names[shard], \
                        _table_sample(shards, tables, shard, j, on_error)
                    ordinal += 1
                group = next(groups, None)
                continue
            got = (ahead or reader.submit(read, group)).result()
            ahead = None
            group = next(groups, None)
            if group is not None and not group[3]:
                ahead = reader.submit(read, group)
            for x, (shard, j) in zip(xs, where):
                yield ordinal, layout.global_index(shard, j), shards.names[shard], got.get(x)
                ordinal += 1
    finally:
        if ahead is not None:
            ahead.cancel()
        reader.shutdown()  # a read in progress ends before its cursors close
        for c in list(cursors.values()) + list(tables.values()):
            c.close()


def _table_sample(shards: ShardSet, tables: dict[int, Any], shard: int, j: int,
                  on_error: Callable[[DecodeError], None]) -> Sample | None:
    try:
        cursor = tables.get(shard)
        if cursor is None:
            if len(tables) >= 8:  # a bounded number of open shards
                tables.pop(next(iter(tables))).close()
            cursor = tables[shard] = shards.cursor(shard)
        sample = cursor.sample(j)
        extra = cursor.key_after(j) if shards.looks_past(shard, j) else None
    except (DecodeError, OSError) as e:  # a damaged or missing shard
        on_error(e)
        return None
    if extra is not None:  # the sample itself is good: it is kept under "skip"
        on_error(more_samples_error(shards.names[shard], shards.counts[shard], extra))
    return sample


def _read_block(layout: Layout, shards: ShardSet, k: int, needed: set[int], cursors: dict[int, ShardCursor],
                on_error: Callable[[DecodeError], None]) -> dict[int, Sample]:
    got: dict[int, Sample] = {}
    x0 = k * layout.block
    for shard, a, b in layout.block_segments(k):
        xs = x0 - a  # X position of sample 0 of this shard
        want = [j for j in range(a, b) if j + xs in needed]
        x0 += b - a
        if not want:
            continue
        wanted = set(want)
        error: BaseException | None = None
        try:
            cursor = cursors.get(shard)
            if cursor is None:
                for other in list(cursors):  # one open shard at a time
                    cursors.pop(other).close()
                cursor = cursors[shard] = shards.cursor(shard)
                nxt = _next_shard(layout, shard)
                if nxt is not None:
                    shards.prefetch(nxt)
            for s in cursor.read(want[0], want[-1] + 1, want=wanted.__contains__):
                if s.members is not None:
                    got[s.index + xs] = s
            extra = cursor.key_after(want[-1]) if shards.looks_past(shard, want[-1]) else None
        except (DecodeError, OSError) as e:  # a damaged, missing or unreachable shard
            error = e
        missing = [j for j in want if j + xs not in got]
        if error is None and missing:
            error = _error(shards.names[shard], None, None,
                           f"has fewer samples than its count ({layout.counts[shard]}): sample {missing[0]} is missing")
        if error is None and extra is not None:
            error = more_samples_error(shards.names[shard], layout.counts[shard], extra)
        if error is not None:
            _report_lost(shards.names[shard], error, missing, on_error)
    return got


def _report_lost(name: str, error: BaseException, missing: list[int], on_error: Callable[[BaseException], None]) -> None:
    """One report per sample lost to ``error`` (the first: the error itself; it raises under "raise"), so the
    skip policy counts every lost sample."""
    on_error(error)
    reason = getattr(error, "reason", None) or str(error)
    for j in missing[1:]:
        follow = _error(name, None, None, f"sample {j} lost with sample {missing[0]} ({reason})")
        follow.lost_with_another = True  # counted in skipped; no warning of its own
        on_error(follow)


def _next_shard(layout: Layout, shard: int) -> int | None:
    i = layout.shard_order.index(shard)
    return layout.shard_order[i + 1] if i + 1 < len(layout.shard_order) else None


def warn_skipped(error: BaseException) -> None:
    warnings.warn(f"TarShardDataset: skipped: {error}", RuntimeWarning, stacklevel=3)


_live: weakref.WeakSet[ReadAhead] = weakref.WeakSet()


@_exit.on_stop
def _close_all() -> None:
    for reader in list(_live):
        reader.close()


def _call(fut: Future, fn: Callable[..., Any], args: tuple) -> None:
    if not fut.set_running_or_notify_cancel():  # cancelled before it started
        return
    try:
        fut.set_result(fn(*args))
    except BaseException as e:  # noqa: BLE001 - handed to the caller through the future
        fut.set_exception(e)


class ReadAhead:
    """Runs submitted calls one at a time on one daemon thread (started on the first call), in order."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._cv = threading.Condition()
        self._jobs: collections.deque = collections.deque()
        self._thread: threading.Thread | None = None
        self._closed = False
        _live.add(self)

    def submit(self, fn: Callable[..., Any], *args: Any) -> Future:
        """``fn(*args)`` on the thread (run in the caller once :meth:`close` was called); a future of its
        result."""
        fut: Future = Future()
        with self._cv:
            if not self._closed:
                self._jobs.append((fut, fn, args))
                if self._thread is None:
                    self._thread = _exit.track(threading.Thread(target=self._work, name=self._name, daemon=True))
                    self._thread.start()
                self._cv.notify()
                return fut
        _call(fut, fn, args)
        return fut

    def _work(self) -> None:
        while True:
            with self._cv:
                while not self._jobs and not self._closed:
                    self._cv.wait()
                if not self._jobs:
                    return
                fut, fn, args = self._jobs.popleft()
            _call(fut, fn, args)
            del fut, fn, args

    def close(self) -> None:
        """The thread ends once the calls already submitted are done (cancelled ones are skipped); never waits."""
        with self._cv:
            self._closed = True
            self._cv.notify_all()

    def shutdown(self) -> None:
        """:meth:`close`, then waits for the thread to end."""
        self.close()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join()
