"""Bounded queues between stages (asyncio side) and the sink queue read by the consumer thread.

Both record occupancy (sampled at every put, after the put) and the time producers spent blocked on
a full queue and consumers on an empty one, for :meth:`Pipeline.stats`.
"""

from __future__ import annotations

import asyncio
import collections
import threading
import time
from typing import Any

__all__ = ["EOF", "QueueStats", "SinkQueue", "StageQueue"]


class _EndOfStream:
    def __repr__(self) -> str:
        return "<EOF>"


#: Sentinel put by a stage after its last output.
EOF = _EndOfStream()


class QueueStats:
    """Counters of one queue. Times in seconds."""

    __slots__ = ("name", "size", "puts", "occupancy_sum", "occupancy_max", "producer_wait_s", "consumer_wait_s")

    def __init__(self, name: str, size: int) -> None:
        self.name = name
        self.size = size
        self.puts = 0
        self.occupancy_sum = 0
        self.occupancy_max = 0
        self.producer_wait_s = 0.0
        self.consumer_wait_s = 0.0

    def sample(self, occupancy: int) -> None:
        self.puts += 1
        self.occupancy_sum += occupancy
        if occupancy > self.occupancy_max:
            self.occupancy_max = occupancy

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "size": self.size,
            "occupancy_mean": self.occupancy_sum / self.puts if self.puts else 0.0,
            "occupancy_max": self.occupancy_max,
            "producer_wait_s": self.producer_wait_s,
            "consumer_wait_s": self.consumer_wait_s,
        }


class StageQueue(asyncio.Queue):
    """``asyncio.Queue`` of ``maxsize`` items (>= 1) connecting two stages, with :class:`QueueStats`."""

    def __init__(self, name: str, maxsize: int) -> None:
        super().__init__(maxsize)
        self.stats = QueueStats(name, maxsize)

    async def put(self, item: Any) -> None:
        if self.full():
            t0 = time.perf_counter()
            await super().put(item)
            self.stats.producer_wait_s += time.perf_counter() - t0
        else:
            self.put_nowait(item)
        self.stats.sample(self.qsize())

    async def get(self) -> Any:
        if self.empty():
            t0 = time.perf_counter()
            item = await super().get()
            self.stats.consumer_wait_s += time.perf_counter() - t0
            return item
        return self.get_nowait()


class SinkQueue:
    """The last queue: filled by the scheduler thread (``await put``), drained by the consumer thread
    (:meth:`get`, blocking). Holds at most ``maxsize`` items.

    After :data:`EOF` or :meth:`close`, :meth:`get` returns the remaining items, then raises the
    error given to :meth:`close` if any, else returns :data:`EOF`.
    """

    def __init__(self, name: str, maxsize: int, loop: asyncio.AbstractEventLoop) -> None:
        self.stats = QueueStats(name, maxsize)
        self._maxsize = maxsize
        self._loop = loop
        self._buf: collections.deque = collections.deque()
        self._cond = threading.Condition(threading.Lock())
        self._space = asyncio.Event()  # only touched on the loop thread
        self._done = False
        self.eof = False  # the last stage finished normally
        self._error: BaseException | None = None

    # -- scheduler thread --------------------------------------------------------------------------
    async def put(self, item: Any) -> None:
        if item is EOF:
            self.eof = True
            self.close()
            return
        t0 = None
        while True:
            with self._cond:
                if self._done:
                    return  # stopped: drop
                n = len(self._buf)
                if n < self._maxsize:
                    self._buf.append(item)
                    self._cond.notify()
                    break
                self._space.clear()
            if t0 is None:
                t0 = time.perf_counter()
            await self._space.wait()
        if t0 is not None:
            self.stats.producer_wait_s += time.perf_counter() - t0
        self.stats.sample(n + 1)

    # -- any thread --------------------------------------------------------------------------------
    def close(self, error: BaseException | None = None, *, discard: bool = False) -> None:
        """Marks the end of the stream. ``error`` (first one wins) is raised by :meth:`get` once the
        buffered items are consumed; ``discard`` drops the buffered items (used by ``stop()``)."""
        with self._cond:
            self._done = True
            if error is not None and self._error is None:
                self._error = error
            if discard:
                self._buf.clear()
            self._cond.notify_all()

    # -- consumer thread ---------------------------------------------------------------------------
    def get(self, alive: Any = None, timeout: float | None = None) -> Any:
        """Blocks until an item is available and returns it; returns :data:`EOF` at the end.

        Args:
            alive: optional callable; when it returns False while waiting (the scheduler thread died),
                the queue is treated as closed.
            timeout: seconds to wait at most (``None``: no limit).

        Raises:
            BaseException: the error passed to :meth:`close`, after the buffered items.
            TimeoutError: nothing arrived within ``timeout`` seconds.
        """
        with self._cond:
            if not self._buf:
                t0 = time.perf_counter()
                deadline = None if timeout is None else t0 + timeout
                while not self._buf and not self._done:
                    wait = 0.1
                    if deadline is not None:
                        wait = min(wait, deadline - time.perf_counter())
                        if wait <= 0:
                            self.stats.consumer_wait_s += time.perf_counter() - t0
                            raise TimeoutError(f"no item within {timeout} seconds")
                    self._cond.wait(wait)
                    if alive is not None and not alive() and not self._buf:
                        self._done = True
                self.stats.consumer_wait_s += time.perf_counter() - t0
            if self._buf:
                was_full = len(self._buf) >= self._maxsize
                item = self._buf.popleft()
                if was_full:
                    try:
                        self._loop.call_soon_threadsafe(self._space.set)
                    except RuntimeError:  # loop closed
                        pass
                return item
            if self._error is not None:
                err, self._error = self._error, None
                raise err
            return EOF
