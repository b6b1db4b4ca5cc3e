"""Remote shards: byte ranges fetched by an ``async def fetch(url, start, stop) -> bytes`` on one background event
loop, with bounded concurrency, a per-request timeout and retries (exponential backoff with jitter), streamed
into the tar reader through a read-ahead window (a shard is never held whole in memory).

:class:`HttpFetch` is the built-in fetch of ``http(s)://`` URLs (aiohttp, HTTP range requests, with checks on
what a server answers: ``Content-Range``, a 200 to a range request; its aiohttp sessions closed at interpreter exit);
object URLs (``s3://``, ``gs://``, ``az://``) are read by :class:`._object_store.ObjectStoreFetch`. Any other
client plugs in as a coroutine function of the same signature; it returns the bytes ``[start, stop)``, fewer only
at the end of the object, and raises :class:`FetchStatusError` for an HTTP-like status (4xx but 408 and 429: not
retried; 5xx, 408, 429: retried), ``ConnectionError`` or ``TimeoutError`` (or a subclass: aiohttp's client errors
too) for what a retry may fix::

    async def fetch(url, start, stop):      # e.g. a client of a store obstore does not serve
        return await my_client.read(url, offset=start, length=stop - start)

    ds = TarShardDataset(urls, fetch=fetch)

:class:`ShardCache` is the optional local cache directory for remote shards, bounded in bytes: a shard is
downloaded (in ranges, through the same retries) into the directory ahead of its reader, the least recently used
files are deleted to stay under the bound, and a shard larger than the bound is streamed instead of cached.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import io
import os
import random
import re
import threading
import warnings
from collections import deque
from collections.abc import Awaitable, Callable
from concurrent.futures import Future
from typing import Any
from urllib.parse import urlsplit

from ... import _exit

__all__ = ["FetchStatusError", "HttpFetch", "RemoteStream", "RetryPolicy", "ShardCache", "error_kind",
           "fetch_range", "fetch_range_into"]

FetchFn = Callable[[str, int, int], Awaitable[bytes]]


class FetchStatusError(OSError):
    """The server answered ``status`` (an HTTP status code) for ``url``."""

    def __init__(self, url: str, status: int, message: str = "") -> None:
        super().__init__(f"{url}: HTTP {status}{': ' + message if message else ''}")
        self.url, self.status = url, int(status)


class _TransientFetchError(ConnectionError):
    """A failure a retry may fix that no transport raised (a short body, another range than asked): a
    ``ConnectionError``, as a user's fetch signals one."""


def error_kind(e: BaseException | None) -> str:
    """The name a message gives ``e``'s type: its first public class (``ConnectionError`` for the private
    transient error)."""
    return next((c.__name__ for c in type(e).__mro__ if not c.__name__.startswith("_")), type(e).__name__)


@dataclasses.dataclass(frozen=True)
class RetryPolicy:
    """Retries of one range request: at most ``attempts`` tries, each limited to ``timeout`` seconds; before
    retry k (1-based) a sleep of ``min(max_backoff, backoff * 2**(k-1))`` times a uniform factor in
    ``[1 - jitter, 1 + jitter]``. Retried: connection errors, timeouts, short bodies, a 206 for another range
    than asked, 5xx, 408 (request timeout) and 429 (throttling); never another 4xx."""

    attempts: int = 5
    timeout: float = 30.0
    backoff: float = 0.05
    max_backoff: float = 2.0
    jitter: float = 0.5

    def __post_init__(self) -> None:
        if self.attempts < 1 or self.timeout <= 0 or self.backoff < 0 or not 0 <= self.jitter <= 1:
            raise ValueError(f"RetryPolicy: expected attempts >= 1, timeout > 0, backoff >= 0, 0 <= jitter <= 1, got {self}")

    def delay(self, retry: int, rng: random.Random) -> float:
        base = min(self.max_backoff, self.backoff * (2 ** (retry - 1)))
        return base * (1 + self.jitter * (2 * rng.random() - 1))


def _retryable(e: BaseException) -> bool:
    if isinstance(e, FetchStatusError):
        return e.status >= 500 or e.status in (408, 429)  # a server error, a request timeout, throttling
    if isinstance(e, (ConnectionError, TimeoutError, asyncio.TimeoutError)):
        return True
    try:
        import aiohttp
    except ImportError:
        return False
    return isinstance(e, aiohttp.ClientError)


class _Loop:
    """One daemon thread running the event loop that every remote read of the process shares."""

    _lock = threading.Lock()
    _loop: asyncio.AbstractEventLoop | None = None

    @classmethod
    def get(cls) -> asyncio.AbstractEventLoop:
        with cls._lock:
            if cls._loop is None or cls._loop.is_closed():
                loop = asyncio.new_event_loop()
                threading.Thread(target=loop.run_forever, name="spdl_torch-shard-fetch", daemon=True).start()
                cls._loop = loop
            return cls._loop


class _Limiter:
    """Bounds the requests in flight of one fetch function (created on the loop)."""

    def __init__(self, n: int) -> None:
        self.sem = asyncio.Semaphore(n)


_limiters: dict[tuple[int, int], _Limiter] = {}


def _after_fork() -> None:
    """In a forked child (a worker process of torch's DataLoader): the parent's loop thread is not there, and
    its semaphores belong to that loop; the child's first remote read starts its own."""
    _Loop._lock = threading.Lock()
    _Loop._loop = None
    _limiters.clear()


os.register_at_fork(after_in_child=_after_fork)


async def _with_retries(attempt: Callable[[], Awaitable[Any]], length: Callable[[Any], int], url: str, start: int,
                        stop: int, policy: RetryPolicy, max_concurrency: int, limiter_key: int,
                        rng: random.Random | None) -> Any:
    """``await attempt()`` under the concurrency bound, the timeout and the retries; an answer whose
    ``length`` exceeds the range is retried too."""
    rng = rng or random.Random()
    key = (limiter_key, max_concurrency)
    limiter = _limiters.get(key)
    if limiter is None:
        limiter = _limiters[key] = _Limiter(max_concurrency)
    last: BaseException | None = None
    for n in range(1, policy.attempts + 1):
        if n > 1:
            await asyncio.sleep(policy.delay(n - 1, rng))
        try:
            async with limiter.sem:
                got = await asyncio.wait_for(attempt(), policy.timeout)
        except Exception as e:  # noqa: BLE001 -- classified right below
            if not _retryable(e):
                raise OSError(f"{url}: bytes {start}-{stop - 1}: {e}") from e
            last = e
            continue
        if length(got) > stop - start:
            last = _TransientFetchError(f"{length(got)} bytes for a range of {stop - start}")
            continue
        return got
    raise OSError(f"{url}: bytes {start}-{stop - 1}: failed after {policy.attempts} attempts: "
                  f"{error_kind(last)}: {last}") from last


async def fetch_range(fetch: FetchFn, url: str, start: int, stop: int, policy: RetryPolicy,
                      max_concurrency: int, rng: random.Random | None = None) -> bytes:
    """``fetch(url, start, stop)`` under the concurrency bound, the timeout and the retries.

    Raises:
        OSError: a 4xx answer (at once), or the last failure once ``policy.attempts`` are spent; the message
            names the URL and the byte range.
    """
    return await _with_retries(lambda: fetch(url, start, stop), len, url, start, stop, policy, max_concurrency,
                               id(fetch), rng)


async def fetch_range_into(fetch: FetchFn, url: str, start: int, stop: int, out: memoryview, policy: RetryPolicy,
                           max_concurrency: int, rng: random.Random | None = None) -> int:
    """The bytes ``[start, stop)`` of ``url`` written into ``out`` (``len(out) == stop - start``), as
    :func:`fetch_range`; returns how many there were (fewer only at the end of the object). A fetch with an
    ``into(url, start, stop, out)`` coroutine method (:class:`HttpFetch`) writes the body straight into ``out``
    (no intermediate bytes object); any other fetch's bytes are copied there.

    Raises:
        OSError: as :func:`fetch_range`.
    """
    into = getattr(fetch, "into", None)

    async def attempt() -> int:
        if into is not None:
            return await into(url, start, stop, out)
        data = await fetch(url, start, stop)
        n = min(len(data), len(out))
        out[:n] = memoryview(data)[:n]
        return len(data)

    return await _with_retries(attempt, int, url, start, stop, policy, max_concurrency, id(fetch), rng)


class RemoteStream(io.RawIOBase):
    """A read-only stream over ``url``: chunks of ``chunk_size`` bytes fetched ``read_ahead`` at a time ahead of
    the reader on the shared loop. At most ``read_ahead`` chunks are held; the end of the object is the first
    chunk shorter than asked (or ``size`` when known)."""

    def __init__(self, url: str, fetch: FetchFn, *, policy: RetryPolicy, max_concurrency: int,
                 chunk_size: int = 4 << 20, read_ahead: int = 4, size: int | None = None,
                 sink: Callable[[bytes], None] | None = None) -> None:
        super().__init__()
        self.url, self._fetch, self._policy = url, fetch, policy
        self._concurrency = max_concurrency
        self._chunk, self._ahead = int(chunk_size), max(1, int(read_ahead))
        self._size = size
        self._sink = sink
        self._loop = _Loop.get()
        self._futures: deque[Future] = deque()
        self._next_start = 0
        self._eof_seen = False
        self._buf = memoryview(b"")
        self._rng = random.Random(hash(url))
        self._fill()

    def readable(self) -> bool:
        return True

    def _fill(self) -> None:
        # the size unknown: one request until the first answer shows the object is longer than a chunk
        ahead = self._ahead if self._size is not None or self._next_start > self._chunk else 1
        while len(self._futures) < ahead and not self._eof_seen:
            start = self._next_start
            if self._size is not None and start >= self._size:
                break
            stop = start + self._chunk if self._size is None else min(start + self._chunk, self._size)
            coro = fetch_range(self._fetch, self.url, start, stop, self._policy, self._concurrency, self._rng)
            self._futures.append((asyncio.run_coroutine_threadsafe(coro, self._loop), stop - start))
            self._next_start = stop

    def readinto(self, b: Any) -> int:
        while not len(self._buf):
            if not self._futures:
                return 0
            fut, asked = self._futures.popleft()
            data = fut.result()
            if len(data) < asked:  # the end of the object (shorter than an index's size: the tar reader then
                self._eof_seen = True  # finds a truncated member or fewer samples, as in a truncated local file)
                for f, _ in self._futures:
                    f.cancel()
                self._futures.clear()
            if self._sink is not None and data:
                self._sink(data)
            self._buf = memoryview(data)
            self._fill()
        n = min(len(b), len(self._buf))
        b[:n] = self._buf[:n]
        self._buf = self._buf[n:]
        return n

    def close(self) -> None:
        for f, _ in self._futures:
            f.cancel()
        self._futures.clear()
        super().close()


_CONTENT_RANGE = re.compile(r"bytes (\d+)-(\d+)/(\d+|\*)")


def _check_content_range(url: str, r: Any, start: int, stop: int) -> int:
    """The body length of a 206 answer to the range ``[start, stop)``, from its ``Content-Range``.

    Raises:
        ConnectionError: no ``Content-Range``, or one whose start differs from ``start`` or whose end
            differs from the range's (``stop - 1``, or the object's last byte when it ends before): another
            range than the one asked for (retried, as a server or proxy fault).
    """
    header = r.headers.get("Content-Range", "")
    m = _CONTENT_RANGE.fullmatch(header.strip())
    if m is not None:
        a, b, total = int(m.group(1)), int(m.group(2)), m.group(3)
        end = stop if total == "*" else min(stop, int(total))
        if a == start and a <= b and (b + 1 == end or total == "*" and b + 1 < end):
            return b + 1 - a
    raise _TransientFetchError(f"{url}: a 206 answer with Content-Range {header!r} to a request for bytes "
                               f"{start}-{stop - 1}: another range than the one asked for")


_warned_hosts: set[str] = set()


class _Body:
    """A 200 answer (the whole object, the server ignoring ``Range``) held open and read sequentially."""

    def __init__(self, response: Any) -> None:
        self.response, self.pos, self.busy = response, 0, False

    def close(self) -> None:
        if self.response.content.at_eof():
            self.response.release()  # read to its end: the connection is reusable
        else:
            self.response.close()


class _Bodies:
    """The bodies held for one URL, and the requests waiting to read from them (served by increasing start)."""

    def __init__(self) -> None:
        self.cond = asyncio.Condition()
        self.waiting: list[int] = []
        self.held: list[_Body] = []


class HttpFetch:
    """HTTP(S) range requests with aiohttp (one client session per event loop, ``limit`` connections).

    ``await fetch(url, start, stop)`` -> the bytes ``[start, stop)`` (fewer at the end of the object; empty
    past it). Raises :class:`FetchStatusError` for an error status and ``ConnectionError`` (retried)
    for a body shorter or longer than its ``Content-Range`` says, or a 206 answer for another range than asked
    (its ``Content-Range`` start or end differs; also none at all).

    A server that ignores ``Range`` (it answers 200 with the whole object, as ``python -m http.server`` does)
    is detected at its first such answer, with one ``RuntimeWarning`` naming it: its objects are then read
    as streams from their start, each answer held open (at most ``limit // 2``) and the requests for a URL
    served from it in increasing order, so a sequential reader downloads an object once; no answer is read
    beyond the range asked for, so an endless body costs no memory. A request behind the held answer's
    position (random access, a retry) opens a new one.
    """

    def __init__(self, *, limit: int = 32, headers: dict[str, str] | None = None) -> None:
        self.limit = int(limit)
        self.headers = dict(headers or {})
        self._sessions: dict[int, Any] = {}
        self._ignoring: set[str] = set()  # hosts that answered a range request with 200
        self._ranged_hosts: set[str] = set()  # hosts that answered one otherwise (206, 416, an error)
        self._probes: dict[tuple[int, str], asyncio.Future] = {}  # (loop, host) -> its first request's answer
        self._bodies: dict[tuple[int, str], _Bodies] = {}  # (loop, url) -> held 200 answers
        self._lru: list[tuple[tuple[int, str], _Body]] = []  # every held answer, least recently used first
        self._sizes: dict[tuple[int, str], int] = {}  # (loop, url) -> the object's size, from a 200 answer

    def __getstate__(self) -> dict[str, Any]:
        """A copy (``copy.deepcopy``, ``pickle``) keeps the limit, the headers and what was learned of the hosts;
        the aiohttp ClientSessions, held answers and probes belong to this process's event loop: the copy opens
        its own."""
        return {"limit": self.limit, "headers": self.headers, "ignoring": set(self._ignoring),
                "ranged_hosts": set(self._ranged_hosts)}

    def __setstate__(self, state: dict[str, Any]) -> None:
        HttpFetch.__init__(self, limit=state["limit"], headers=state["headers"])
        self._ignoring, self._ranged_hosts = state["ignoring"], state["ranged_hosts"]

    async def _session(self) -> Any:
        import aiohttp

        loop = asyncio.get_running_loop()
        s = self._sessions.get(id(loop))
        if s is None or s.closed:
            s = self._sessions[id(loop)] = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=self.limit), headers=self.headers)
            _open_sessions.add(s)
        return s

    async def __call__(self, url: str, start: int, stop: int) -> bytes:
        buf = bytearray(max(0, stop - start))
        n = await self.into(url, start, stop, memoryview(buf))
        del buf[n:]
        return buf

    async def into(self, url: str, start: int, stop: int, out: memoryview) -> int:
        """The bytes ``[start, stop)`` written into ``out`` as they arrive (no intermediate copy); returns how
        many there were. Raises as :meth:`__call__`."""
        host = urlsplit(url).netloc
        loop = asyncio.get_running_loop()
        probe = None
        if host not in self._ranged_hosts and host not in self._ignoring:
            # the first request to a host goes alone: if it ignores Range, the others wait for it to be known
            # rather than each downloading the whole object
            pending = self._probes.get((id(loop), host))
            if pending is not None:
                await asyncio.shield(pending)
            else:
                probe = self._probes[(id(loop), host)] = loop.create_future()
        if host in self._ignoring:
            return await self._from_body(url, start, stop, out)
        try:
            session = await self._session()
            r = await session.get(url, headers={"Range": f"bytes={start}-{stop - 1}"})
            if r.status != 200:
                self._ranged_hosts.add(host)
        finally:
            if probe is not None:
                del self._probes[(id(loop), host)]
                probe.set_result(None)
        if r.status != 200:
            try:
                return await self._ranged(url, r, start, stop, out)
            finally:
                r.release()
        self._ignoring.add(host)
        if host not in _warned_hosts:
            _warned_hosts.add(host)
            warnings.warn(f"HttpFetch: {host} ignores Range requests (it answered 200 to bytes {start}-{stop - 1} "
                          f"of {url}): its objects are read as streams from their start, once per sequential "
                          "reader (random access reads them again from the start)", RuntimeWarning, stacklevel=2)
        return await self._from_body(url, start, stop, out, _Body(r))

    async def _ranged(self, url: str, r: Any, start: int, stop: int, out: memoryview) -> int:
        """A ranged answer's body written into ``out``."""
        if r.status == 416:
            return 0
        if r.status >= 400:
            raise FetchStatusError(url, r.status, r.reason or "")
        if r.status != 206:
            raise _TransientFetchError(f"{url}: HTTP {r.status} to a range request")
        expected = _check_content_range(url, r, start, stop)
        n = 0
        while n < expected:
            chunk = await r.content.readany()
            if not chunk:
                break
            if n + len(chunk) > expected:
                raise _TransientFetchError(f"a body longer than the {expected} bytes announced")
            out[n:n + len(chunk)] = chunk
            n += len(chunk)
        if n != expected:
            raise _TransientFetchError(f"short body: {n} of {expected} bytes")
        return n

    async def _from_body(self, url: str, start: int, stop: int, out: memoryview, fresh: _Body | None = None) -> int:
        """``[start, stop)`` from ``fresh`` or a held 200 answer of ``url`` (a new one when none is at or before
        ``start``); the requests for a URL are served one at a time, the smallest start first."""
        key = (id(asyncio.get_running_loop()), url)
        bodies = self._bodies.setdefault(key, _Bodies())
        bodies.waiting.append(start)
        try:
            async with bodies.cond:
                await bodies.cond.wait_for(lambda: start <= min(bodies.waiting))
                if fresh is not None:
                    body, fresh = fresh, None
                    return await self._read_body(key, bodies, body, start, stop, out)
                size = self._sizes.get(key)
                if size is not None and start >= size:  # past the end of the object: nothing to read
                    return 0
                ahead = [b for b in bodies.held if b.pos <= start and not b.busy]
                if ahead:
                    body = max(ahead, key=lambda b: b.pos)
                    return await self._read_body(key, bodies, body, start, stop, out)
                self._evict()
                session = await self._session()
                r = await session.get(url, headers={"Range": f"bytes={start}-{stop - 1}"})
                if r.status != 200:  # ranges after all (another server behind the same host)
                    try:
                        return await self._ranged(url, r, start, stop, out)
                    finally:
                        r.release()
                return await self._read_body(key, bodies, _Body(r), start, stop, out)
        finally:
            if fresh is not None:  # cancelled before reading it
                fresh.close()
            bodies.waiting.remove(start)
            if not bodies.waiting and not bodies.held and self._bodies.get(key) is bodies:
                del self._bodies[key]
            async with bodies.cond:
                bodies.cond.notify_all()

    async def _read_body(self, key: tuple[int, str], bodies: _Bodies, body: _Body, start: int, stop: int,
                         out: memoryview) -> int:
        """Skips ``body`` to ``start`` and reads up to ``stop`` into ``out``; the body stays held for the next
        request unless it ended (or failed)."""
        body.busy = True
        if body.response.content_length is not None:
            if len(self._sizes) > 4096:
                self._sizes.clear()
            self._sizes[key] = body.response.content_length
        if body not in bodies.held:
            bodies.held.append(body)
            self._lru.append((key, body))
        ended = True
        try:
            content = body.response.content
            while body.pos < start:
                chunk = await content.read(min(1 << 20, start - body.pos))
                if not chunk:
                    return 0  # the object ends before start
                body.pos += len(chunk)
            n, want = 0, len(out)
            while n < want:
                chunk = await content.read(want - n)
                if not chunk:
                    return n
                out[n:n + len(chunk)] = chunk
                n += len(chunk)
            body.pos += n
            ended = content.at_eof()
            return n
        finally:
            body.busy = False
            if ended:
                self._drop(key, body)
            else:
                self._lru.remove((key, body))
                self._lru.append((key, body))

    def _drop(self, key: tuple[int, str], body: _Body) -> None:
        body.close()
        bodies = self._bodies.get(key)
        if bodies is not None and body in bodies.held:
            bodies.held.remove(body)
            if not bodies.held and not bodies.waiting:
                del self._bodies[key]
        if (key, body) in self._lru:
            self._lru.remove((key, body))

    def _evict(self) -> None:
        """Closes the least recently used idle answers so that at most ``limit // 2`` stay held with a new one
        (each holds a connection)."""
        cap = max(1, self.limit // 2)
        for key, body in list(self._lru):
            if len(self._lru) < cap:
                break
            if not body.busy and key[0] == id(asyncio.get_running_loop()):
                self._drop(key, body)


_open_sessions: set[Any] = set()


@_exit.on_close
def _close_sessions() -> None:
    """Closes the aiohttp sessions on their loop at exit (quietly: no "Unclosed client session"), once the threads
    that read through them were joined."""
    loop = _Loop._loop
    if loop is None or loop.is_closed() or not _open_sessions:
        return

    async def close_all() -> None:
        await asyncio.gather(*(s.close() for s in list(_open_sessions)), return_exceptions=True)

    try:
        asyncio.run_coroutine_threadsafe(close_all(), loop).result(timeout=2)
    except Exception:  # noqa: BLE001 -- best effort at exit
        pass
    _open_sessions.clear()


class ShardCache:
    """``directory`` holds at most ``max_bytes`` of downloaded shards (created if missing).

    Raises:
        ValueError: ``max_bytes`` is not positive.
    """

    def __init__(self, directory: str | os.PathLike, max_bytes: int) -> None:
        if int(max_bytes) <= 0:
            raise ValueError(f"ShardCache: expected max_bytes > 0, got {max_bytes=}")
        self.directory = os.fspath(directory)
        self.max_bytes = int(max_bytes)
        os.makedirs(self.directory, exist_ok=True)
        self._lock = threading.Lock()
        self._downloads: dict[str, Future] = {}

    def __getstate__(self) -> dict[str, Any]:
        """A copy (``copy.deepcopy``, ``pickle``) uses the same directory and bound, with its own lock; the
        downloads in flight are this process's."""
        return {"directory": self.directory, "max_bytes": self.max_bytes}

    def __setstate__(self, state: dict[str, Any]) -> None:
        ShardCache.__init__(self, state["directory"], state["max_bytes"])

    def path(self, url: str) -> str:
        digest = hashlib.sha1(url.encode()).hexdigest()[:20]
        return os.path.join(self.directory, f"{digest}-{os.path.basename(url)[-80:] or 'shard'}")

    def lookup(self, url: str) -> str | None:
        """The cached file of ``url`` (marked as just used), waiting for a download in progress; else None."""
        with self._lock:
            fut = self._downloads.get(url)
        if fut is not None:
            fut.result()
        p = self.path(url)
        try:
            os.utime(p)
            return p
        except FileNotFoundError:
            return None

    def prefetch(self, url: str, size: int | None, fetch: FetchFn, policy: RetryPolicy, max_concurrency: int,
                 chunk_size: int) -> None:
        """Starts downloading ``url`` into the cache unless it is there, is being downloaded, or is larger than
        the bound (``size`` known). Failures are raised by the reader's :meth:`lookup`."""
        if size is not None and size > self.max_bytes:
            return
        with self._lock:
            if url in self._downloads or os.path.exists(self.path(url)):
                return
            coro = self._download(url, size, fetch, policy, max_concurrency, chunk_size)
            fut = asyncio.run_coroutine_threadsafe(coro, _Loop.get())
            self._downloads[url] = fut
        fut.add_done_callback(lambda f: self._done(url))

    def _done(self, url: str) -> None:
        with self._lock:
            self._downloads.pop(url, None)

    async def _download(self, url: str, size: int | None, fetch: FetchFn, policy: RetryPolicy,
                        max_concurrency: int, chunk_size: int) -> None:
        final = self.path(url)
        tmp = f"{final}.part{threading.get_ident()}"
        written = 0
        try:
            with open(tmp, "wb") as f:
                while size is None or written < size:
                    stop = written + chunk_size if size is None else min(written + chunk_size, size)
                    data = await fetch_range(fetch, url, written, stop, policy, max_concurrency)
                    f.write(data)
                    written += len(data)
                    if len(data) < stop - written + len(data):
                        break
                    if written > self.max_bytes:  # larger than the whole cache: stream it instead
                        raise _TooLarge
            if size is not None and written != size:
                raise OSError(f"{url}: object ended at byte {written}, expected {size} bytes")
            self._evict(written)
            os.replace(tmp, final)
        except _TooLarge:
            pass
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)

    def _evict(self, incoming: int) -> None:
        """Deletes least recently used files until ``incoming`` more bytes fit under the bound."""
        entries = []
        for name in os.listdir(self.directory):
            p = os.path.join(self.directory, name)
            if ".part" in name:
                continue
            try:
                st = os.stat(p)
            except FileNotFoundError:
                continue
            entries.append((st.st_mtime, st.st_size, p))
        total = sum(s for _, s, _ in entries)
        for _, s, p in sorted(entries):
            if total + incoming <= self.max_bytes:
                break
            try:
                os.unlink(p)
            except FileNotFoundError:
                pass
            total -= s

    def used_bytes(self) -> int:
        return sum(os.path.getsize(os.path.join(self.directory, n)) for n in os.listdir(self.directory)
                   if ".part" not in n)


class _TooLarge(Exception):
    pass
