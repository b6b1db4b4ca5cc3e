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
import time
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
        name: thread name prefix; threads are named ``f"{name}-worker-{i}"``, or ``f"{name}-{i}"``
            when ``name`` is given as ``thread_name``.
        initializer: called once on each thread, with the thread's index in ``[0, num_threads)``,
            before it runs any job. If it raises, every job run by that thread fails with that
            exception (the other threads are unaffected).
        thread_name: exact prefix of thread names (overrides ``name``).
    """

    def __init__(
        self,
        num_threads: int,
        name: str = "spdl_torch.pipeline",
        *,
        initializer: Callable[[int], None] | None = None,
        thread_name: str | None = None,
    ) -> None:
        if num_threads < 1:
            raise ValueError(f"num_threads must be >= 1, got {num_threads}")
        self._jobs: queue.SimpleQueue = queue.SimpleQueue()
        self._initializer = initializer
        prefix = thread_name if thread_name is not None else f"{name}-worker"
        self._threads = [
            threading.Thread(target=self._work, args=(i,), name=f"{prefix}-{i}", daemon=True)
            for i in range(num_threads)
        ]
        for t in self._threads:
            t.start()

    @property
    def threads(self) -> list[threading.Thread]:
        return list(self._threads)

    def submit(self, loop: asyncio.AbstractEventLoop, fn: Callable[..., Any], *args: Any) -> asyncio.Future:
        """Schedules ``fn(*args)`` on a pool thread; must be called from ``loop``'s thread.

        Returns:
            A future of ``loop`` holding the result, or the exception ``fn`` raised.
        """
        fut = loop.create_future()
        self._jobs.put((loop, fut, fn, args))
        return fut

    def shutdown(self) -> None:
        """Asks the threads to exit after their current call; does not wait. Idempotent."""
        if getattr(self, "_shut", False):
            return
        self._shut = True
        for _ in self._threads:
            self._jobs.put(None)

    def join(self, timeout: float | None = None) -> None:
        """Waits for the threads to exit, at most ``timeout`` seconds in all."""
        deadline = None if timeout is None else time.monotonic() + timeout
        for t in self._threads:
            t.join(None if deadline is None else max(0.0, deadline - time.monotonic()))

    def _work(self, index: int) -> None:
        jobs = self._jobs
        init_error: BaseException | None = None
        if self._initializer is not None:
            try:
                self._initializer(index)
            except BaseException as e:  # noqa: BLE001 - raised by every job of this thread
                init_error = e
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
                if init_error is not None:
                    raise init_error
                result = fn(*args)
            except BaseException as e:  # noqa: BLE001 - handed to the awaiting task
                exc = e
            try:
                loop.call_soon_threadsafe(_set_future, fut, result, exc)
            except RuntimeError:  # loop closed: the pipeline was stopped, discard
                pass
            del loop, fut, fn, args, result, exc
