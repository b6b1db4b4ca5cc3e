"""A pool of daemon threads that runs sync functions for an asyncio event loop.

Unlike :class:`concurrent.futures.ThreadPoolExecutor`, the threads are daemons that the interpreter
does not join at exit, so a user function that never returns cannot hang ``stop()`` or interpreter
exit. A call whose awaiting task was cancelled (the pipeline was stopped) is abandoned: the thread
finishes the call, discards its result (or exception) and exits if the pool was shut down.
"""

from __future__ import annotations

import asyncio
import queue
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["ThreadPool"]


def _set_future(fut: asyncio.Future, result: Any, exc: BaseException | None) -> None:
    if fut.done():  # cancelled meanwhile: the result is discarded
        return
    if exc is None:
        fut.set_result(result)
    else:
        fut.set_exception(exc)


class ThreadPool:
    """``num_threads`` daemon threads fed by one FIFO queue.

    Args:
        num_threads: number of threads (>= 1).
        name: thread name prefix.
    """

    def __init__(self, num_threads: int, name: str = "spdl_torch.pipeline") -> None:
        if num_threads < 1:
            raise ValueError(f"num_threads must be >= 1, got {num_threads}")
        self._jobs: queue.SimpleQueue = queue.SimpleQueue()
        self._threads = [
            threading.Thread(target=self._work, name=f"{name}-worker-{i}", daemon=True) for i in range(num_threads)
        ]
        for t in self._threads:
            t.start()

    def submit(self, loop: asyncio.AbstractEventLoop, fn: Callable[..., Any], *args: Any) -> asyncio.Future:
        """Schedules ``fn(*args)`` on a pool thread; must be called from ``loop``'s thread.

        Returns:
            A future of ``loop`` holding the result, or the exception ``fn`` raised.
        """
        fut = loop.create_future()
        self._jobs.put((loop, fut, fn, args))
        return fut

    def shutdown(self) -> None:
        """Asks the threads to exit after their current call; does not wait."""
        for _ in self._threads:
            self._jobs.put(None)

    def _work(self) -> None:
        jobs = self._jobs
        while True:
            job = jobs.get()
            if job is None:
                return
            loop, fut, fn, args = job
            del job
            if fut.done():  # cancelled before it started
                continue
            result, exc = None, None
            try:
                result = fn(*args)
            except BaseException as e:  # noqa: BLE001 - handed to the awaiting task
                exc = e
            try:
                loop.call_soon_threadsafe(_set_future, fut, result, exc)
            except RuntimeError:  # loop closed: the pipeline was stopped, discard
                pass
            del loop, fut, fn, args, result, exc
