"""Interpreter exit with work in flight: the threads spdl_torch starts are stopped and joined before the
interpreter finalizes.

Why: a daemon thread that is inside native code with the GIL released (a torch op, one of this library's ops)
when the interpreter finalizes is ended by ``pthread_exit`` as soon as it takes the GIL back; that unwinding
through C++ frames aborts the whole process (``terminate called without an active exception``, exit status
134). So no thread of ours may still run when finalization starts.

At exit (one :mod:`atexit` handler, registered when this module is first imported: it runs after the user's
non-daemon threads were joined and after the atexit handlers registered later, i.e. the user's own):

1. every function given to :func:`on_stop` runs (loaders end their epochs, a fetch ending at its next sample;
   pipeline runs are cancelled; pools drop their queued jobs and end after their current call);
2. every thread given to :func:`track` is joined, :data:`EXIT_JOIN_TIMEOUT_S` seconds at most in all;
3. every function given to :func:`on_close` runs (the shared remote-fetch loop closes its aiohttp sessions and ends).

A thread still running at the deadline (a user function that does not return) is left to the interpreter, as
torch's DataLoader leaves a worker process it has waited 5 s for; nothing is printed.
"""

from __future__ import annotations

import atexit
import threading
import time
import weakref
from collections.abc import Callable

__all__ = ["EXIT_JOIN_TIMEOUT_S", "on_close", "on_stop", "shutdown", "track"]

#: Seconds the exit handler waits in all for the tracked threads (a call in progress: one sample, one batch op);
#: torch's DataLoader waits as long for a worker process before it terminates it.
EXIT_JOIN_TIMEOUT_S = 5.0

_lock = threading.Lock()
_threads: weakref.WeakSet[threading.Thread] = weakref.WeakSet()
_stops: list[Callable[[], None]] = []
_closes: list[Callable[[], None]] = []


def track(thread: threading.Thread) -> threading.Thread:
    """Makes the exit handler join ``thread`` (a thread that may call native code); returns it."""
    with _lock:
        _threads.add(thread)
    return thread


def on_stop(fn: Callable[[], None]) -> Callable[[], None]:
    """Registers ``fn`` (must not block; called once at exit, before the joins); usable as a decorator."""
    with _lock:
        _stops.append(fn)
    return fn


def on_close(fn: Callable[[], None]) -> Callable[[], None]:
    """Registers ``fn`` (called once at exit, after the joins; may wait a bounded time); usable as a decorator."""
    with _lock:
        _closes.append(fn)
    return fn


def _call_all(fns: list[Callable[[], None]]) -> None:
    for fn in fns:
        try:
            fn()
        except Exception:  # noqa: BLE001 -- best effort at exit: the other owners still stop
            pass


def shutdown(timeout: float = EXIT_JOIN_TIMEOUT_S) -> list[threading.Thread]:
    """The exit handler (also callable directly): stops every owner, joins the tracked threads (``timeout``
    seconds in all), closes the shared resources. Returns the threads still alive after the deadline."""
    with _lock:
        stops, closes = list(_stops), list(_closes)
    _call_all(stops)
    deadline = time.monotonic() + timeout
    me = threading.current_thread()
    while True:  # a thread may start another (a run's scheduler its pool) while we join: join until none is left
        with _lock:
            pending = [t for t in _threads if t is not me and t.is_alive()]
        if not pending or time.monotonic() >= deadline:
            break
        for t in pending:
            t.join(max(0.0, deadline - time.monotonic()))
        _call_all(stops)  # owners created meanwhile
    _call_all(closes)
    return pending


@atexit.register
def _at_exit() -> None:
    shutdown(EXIT_JOIN_TIMEOUT_S)
