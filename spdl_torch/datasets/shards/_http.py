"""``HttpFetch``: the built-in fetch of remote shards (aiohttp, HTTP range requests), with the checks on what a
server answers (``Content-Range``, a 200 to a range request) and the sessions closed at interpreter exit."""

from __future__ import annotations

import asyncio
import re
import warnings
from typing import Any
from urllib.parse import urlsplit

from ... import _exit
from ._remote import FetchStatusError, TransientFetchError, _Loop

__all__ = ["HttpFetch"]


_CONTENT_RANGE = re.compile(r"bytes (\d+)-(\d+)/(\d+|\*)")


def _check_content_range(url: str, r: Any, start: int, stop: int) -> int:
    """The body length of a 206 answer to the range ``[start, stop)``, from its ``Content-Range``.

    Raises:
        TransientFetchError: no ``Content-Range``, or one whose start differs from ``start`` or whose end
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
    raise TransientFetchError(f"{url}: a 206 answer with Content-Range {header!r} to a request for bytes "
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
    """HTTP(S) range requests with aiohttp (one session per event loop, ``limit`` connections).

    ``await fetch(url, start, stop)`` -> the bytes ``[start, stop)`` (fewer at the end of the object; empty
    past it). Raises :class:`FetchStatusError` for an error status and :class:`TransientFetchError` (retried)
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
            raise TransientFetchError(f"{url}: HTTP {r.status} to a range request")
        expected = _check_content_range(url, r, start, stop)
        n = 0
        while n < expected:
            chunk = await r.content.readany()
            if not chunk:
                break
            if n + len(chunk) > expected:
                raise TransientFetchError(f"a body longer than the {expected} bytes announced")
            out[n:n + len(chunk)] = chunk
            n += len(chunk)
        if n != expected:
            raise TransientFetchError(f"short body: {n} of {expected} bytes")
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
