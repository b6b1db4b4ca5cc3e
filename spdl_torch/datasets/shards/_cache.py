"""An optional local cache directory for remote shards, bounded in bytes: a shard is downloaded (in ranges, through
the same retries) into the directory ahead of its reader, the least recently used files are deleted to stay under
the bound, and a shard larger than the bound is streamed instead of cached."""

from __future__ import annotations

import asyncio
import hashlib
import os
import threading
from concurrent.futures import Future

from ._remote import FetchFn, RetryPolicy, _Loop, fetch_range

__all__ = ["ShardCache"]


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
