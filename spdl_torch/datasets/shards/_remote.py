"""Remote shards: byte ranges fetched by an ``async def fetch(url, start, stop) -> bytes`` on one background event
loop, with bounded concurrency, a per-request timeout and retries (exponential backoff with jitter), streamed
into the tar reader through a read-ahead window (a shard is never held whole in memory).

``HttpFetch`` (in ``_http.py``) is the built-in fetch (aiohttp, HTTP range requests). Any other client plugs in as a coroutine
function of the same signature; it returns the bytes ``[start, stop)``, fewer only at the end of the object, and
raises :class:`FetchStatusError` for an HTTP-like status (4xx: not retried; 5xx: retried), ``ConnectionError``,
``TimeoutError`` or :class:`TransientFetchError` for what a retry may fix. An S3 example with aiobotocore::

    session = aiobotocore.session.get_session()

    async def s3_fetch(url, start, stop):          # url: "https://<bucket>.s3.amazonaws.com/<key>"
        bucket, key = parse(url)
        async with session.create_client("s3") as s3:
            r = await s3.get_object(Bucket=bucket, Key=key, Range=f"bytes={start}-{stop - 1}")
            async with r["Body"] as body:
                return await body.read()

    ds = TarShardDataset(urls, fetch=s3_fetch)
"""

from __future__ import annotations

import asyncio
import dataclasses
import io
import random
import threading
from collections import deque
from collections.abc import Awaitable, Callable
from concurrent.futures import Future
from typing import Any


__all__ = ["FetchStatusError", "RemoteStream", "RetryPolicy", "TransientFetchError", "fetch_range",
           "fetch_range_into"]

FetchFn = Callable[[str, int, int], Awaitable[bytes]]


class FetchStatusError(OSError):
    """The server answered ``status`` (an HTTP status code) for ``url``."""

    def __init__(self, url: str, status: int, message: str = "") -> None:
        super().__init__(f"{url}: HTTP {status}{': ' + message if message else ''}")
        self.url, self.status = url, int(status)


class TransientFetchError(OSError):
    """A failure a retry may fix (a short body, a dropped connection)."""


@dataclasses.dataclass(frozen=True)
class RetryPolicy:
    """Retries of one range request: at most ``attempts`` tries, each limited to ``timeout`` seconds; before
    retry k (1-based) a sleep of ``min(max_backoff, backoff * 2**(k-1))`` times a uniform factor in
    ``[1 - jitter, 1 + jitter]``. Retried: connection errors, timeouts, short bodies, a 206 for another range
    than asked, 5xx; never 4xx."""

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
        return e.status >= 500
    if isinstance(e, (ConnectionError, TimeoutError, asyncio.TimeoutError, TransientFetchError)):
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
            last = TransientFetchError(f"{length(got)} bytes for a range of {stop - start}")
            continue
        return got
    raise OSError(f"{url}: bytes {start}-{stop - 1}: failed after {policy.attempts} attempts: "
                  f"{type(last).__name__}: {last}") from last


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
