"""A pool of daemon threads that runs sync functions for an asyncio event loop.

Unlike :class:`concurrent.futures.ThreadPoolExecutor`, the threads are daemons, so a user function that never
returns cannot hang ``stop()``. A call whose awaiting task was cancelled (the pipeline was stopped) is
abandoned: the thread finishes the call, discards its result (or exception) and exits if the pool was shut
down. At interpreter exit every pool is shut down and its threads are joined for a bounded time
(:mod:`spdl_torch._exit`): a thread still inside native code when the interpreter finalizes would abort it.
"""

from __future__ import annotations

import asyncio
import collections
import threading
import time
import weakref
from collections.abc import Callable
from typing import Any

from .. import _exit

__all__ = ["ThreadPool"]


def _set_future(fut: asyncio.Future, result: Any, exc: BaseException | None) -> None:
    if fut.done():  # cancelled meanwhile: the result is discarded
        return
    if exc is None:
        fut.set_result(result)
    else:
        fut.set_exception(exc)


_LIVE_POOLS: weakref.WeakSet[ThreadPool] = weakref.WeakSet()


@_exit.on_stop
def _shutdown_all() -> None:
    for pool in list(_LIVE_POOLS):
        pool.shutdown()


class ThreadPool:
    """``num_threads`` daemon threads fed by one shared FIFO queue and one FIFO queue per thread.

    A job submitted with ``thread=i`` runs on thread ``i`` only (after the jobs already queued for it), so
    state bound to a thread (a worker's iterator, a file or database handle opened there) is only ever
    used by that thread; a job without ``thread`` runs on the first free thread. A thread runs its own
    jobs before shared ones.

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
        self._cond = threading.Condition()
        self._shared: collections.deque = collections.deque()
        self._own: list[collections.deque] = [collections.deque() for _ in range(num_threads)]
        self._shut = False
        self._initializer = initializer
        prefix = thread_name if thread_name is not None else f"{name}-worker"
        self._threads = [
            threading.Thread(target=self._work, args=(i,), name=f"{prefix}-{i}", daemon=True)
            for i in range(num_threads)
        ]
        for t in self._threads:
            _exit.track(t)
            t.start()
        _LIVE_POOLS.add(self)

    @property
    def threads(self) -> list[threading.Thread]:
        return list(self._threads)

    def submit(
        self, loop: asyncio.AbstractEventLoop, fn: Callable[..., Any], *args: Any, thread: int | None = None
    ) -> asyncio.Future:
        """Schedules ``fn(*args)`` on a pool thread (thread ``thread`` if given); must be called from
        ``loop``'s thread.

        Returns:
            A future of ``loop`` holding the result, or the exception ``fn`` raised.

        Raises:
            IndexError: ``thread`` is not in ``[0, num_threads)``.
        """
        if thread is not None and not 0 <= thread < len(self._own):
            raise IndexError(f"thread={thread} is not in [0, {len(self._own)})")
        fut = loop.create_future()
        with self._cond:
            if thread is None:
                self._shared.append((loop, fut, fn, args))
                self._cond.notify()
            else:
                self._own[thread].append((loop, fut, fn, args))
                self._cond.notify_all()  # the one thread that may run it must wake
        return fut

    def shutdown(self) -> None:
        """Asks the threads to exit after their current call (queued jobs are dropped); does not wait.
        Idempotent."""
        with self._cond:
            self._shut = True
            self._cond.notify_all()

    def _next_job(self, index: int) -> Any:
        """The thread's next job (its own first), or ``None`` once the pool is shut down."""
        own = self._own[index]
        with self._cond:
            while not (own or self._shared or self._shut):
                self._cond.wait()
            if self._shut:
                return None
            job = own.popleft() if own else self._shared.popleft()
            if self._shared:
                self._cond.notify()  # a shared job is left: another idle thread may take it
            return job

    def join(self, timeout: float | None = None) -> None:
        """Waits for the threads to exit, at most ``timeout`` seconds in all."""
        deadline = None if timeout is None else time.monotonic() + timeout
        for t in self._threads:
            t.join(None if deadline is None else max(0.0, deadline - time.monotonic()))

    def _work(self, index: int) -> None:
        init_error: BaseException | None = None
        if self._initializer is not None:
            try:
                self._initializer(index)
            except BaseException as e:  # noqa: BLE001 - raised by every job of this thread
                init_error = e
        while True:
            job = self._next_job(index)
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
