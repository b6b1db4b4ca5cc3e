"""The read-ahead thread of a shard stream: one daemon thread running the calls submitted to it, in order.

A one-thread ``concurrent.futures.ThreadPoolExecutor`` refuses new calls once the main thread has returned (its
exit hook runs before the interpreter waits for the user's non-daemon threads): a training thread still reading
shards then failed with "cannot schedule new futures after interpreter shutdown". This thread keeps serving
until the interpreter's own exit, where :mod:`spdl_torch._exit` ends it once idle and joins it.
"""

from __future__ import annotations

import collections
import threading
import weakref
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from ... import _exit

__all__ = ["ReadAhead"]

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
