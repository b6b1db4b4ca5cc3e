"""The built pipeline: :class:`Pipeline` (user facing, re-runnable; each iteration is one :class:`~._run.Run`).
The engine imports no torch; ``spdl_torch.datasets.PipelineDataset`` lets PyTorch use a pipeline as a dataset (it
imports this package; nothing here imports it)."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any

from ._pool import ThreadPool
from ._queues import EOF
from ._run import PipelineSpec, Run, make_pool
from ._stages import describe_stage
from ._stats import format_stats

__all__ = ["Pipeline"]


class Pipeline:
    """A built pipeline; create it with :class:`~spdl_torch.pipeline.PipelineBuilder`.

    **Iteration and epochs.** ``iter(pipeline)`` starts a *run*: a scheduler thread, a thread pool and
    fresh queues, and a new ``iter()`` of the source (so a list or any re-iterable source yields the
    same items every epoch; a one-shot iterator such as a generator object is exhausted after the
    first epoch and later epochs yield nothing). The iterator yields the items reaching the sink, then
    ends. Only one run exists at a time: calling ``iter()`` again stops the previous run (its iterator
    ends). The exception is a run started in advance with :meth:`start` / :meth:`auto_stop` / ``with
    pipeline:`` and not iterated yet: the next ``iter()`` consumes that run (it has been prefetching).
    Leaving a ``for`` loop early (``break``) closes the iterator, which stops its run.

    **Errors.** When a failure budget is exceeded, or the source raises, the consumer gets the items
    already finished, then :class:`~spdl_torch.pipeline.PipelineFailure` (original exception chained).

    **Stopping.** :meth:`stop` returns within about 1 s (:data:`STOP_TIMEOUT_S`) even when a user
    function is blocked: tasks are cancelled; a pool thread blocked in a user function is abandoned
    (daemon): it finishes the call, its result is discarded, then it exits. Deleting the pipeline (and
    its iterators) or exiting the interpreter stops the run silently; at interpreter exit the calls in progress
    are waited for (5 s at most in all), so that no thread is inside native code when the interpreter finalizes.
    """

    def __init__(self, spec: PipelineSpec) -> None:
        self._spec = spec
        self._pool: ThreadPool | None = None  # with persistent_threads: shared by all runs
        self._run: Run | None = None
        self._prefetched = False
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        stages = " -> ".join(["source", *(describe_stage(s) for s in self._spec.stages), f"sink({self._spec.buffer_size})"])
        return f"Pipeline({stages}, num_threads={self._spec.num_threads})"

    def start(self) -> None:
        """Starts a run in the background (it fills the queues up to their bounds) without consuming.
        No-op if a started run was not iterated yet."""
        with self._lock:
            if self._run is not None and self._prefetched:
                return
            self._stop_locked()
            self._run = self._new_run()
            self._prefetched = True

    def stop(self, *, wait: bool = True) -> None:
        """Stops the current run, if any (see the class docstring); returns within about 1 s, or at
        once with ``wait=False`` (the scheduler thread then ends by itself; e.g. from ``__del__``).
        A consumer iterating the run sees its iterator end."""
        with self._lock:
            self._stop_locked(wait)

    def _stop_locked(self, wait: bool = True) -> None:
        if self._run is not None:
            self._run.stop() if wait else self._run.stop(timeout=0)
        self._prefetched = False

    @contextlib.contextmanager
    def auto_stop(self) -> Iterator[Pipeline]:
        """Context manager: starts a run on entry, stops it on exit (also on exceptions)."""
        self.start()
        try:
            yield self
        finally:
            self.stop()

    def __enter__(self) -> Pipeline:
        self.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def __iter__(self) -> Iterator[Any]:
        return self.iterate()

    def iterate(self, *, timeout: float | None = None) -> Iterator[Any]:
        """Like ``iter(pipeline)``, but waiting at most ``timeout`` seconds (``None``: no limit) for
        each item.

        Raises:
            ValueError: ``timeout`` is not ``None`` nor > 0.
            TimeoutError: (from ``next()``) no item reached the sink within ``timeout`` seconds; the
                run is stopped and the iterator ends.
        """
        if timeout is not None and not timeout > 0:
            raise ValueError(f"timeout must be > 0 seconds or None, got {timeout}")
        with self._lock:
            if self._run is None or not self._prefetched:
                self._stop_locked()
                self._run = self._new_run()
            self._prefetched = False
            run = self._run
        return self._iterate(run, timeout)

    def _new_run(self) -> Run:
        if not self._spec.persistent_threads:
            return Run(self._spec)
        if self._pool is None:
            self._pool = make_pool(self._spec)
        return Run(self._spec, self._pool)

    def _iterate(self, run: Run, timeout: float | None = None) -> Iterator[Any]:
        # a bound-method generator: holds ``self`` so the pipeline is not collected while iterated
        try:
            while True:
                box = [run.get(timeout)]
                if box[0] is EOF:
                    return
                # yielded without a name left bound in this (suspended) frame: once the consumer drops
                # the item, nothing here keeps it (a loader's batch must not outlive the hand-off)
                yield box.pop()
        finally:
            run.stop()

    def close(self, *, wait: bool = True) -> None:
        """Stops the current run and, with ``persistent_threads``, ends the pool threads (they exit
        once their current call returns). A later ``iter()`` starts new threads. ``wait=False``: see
        :meth:`stop`."""
        with self._lock:
            self._stop_locked(wait)
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown()

    @property
    def threads(self) -> list[threading.Thread]:
        """The pool threads of the current run (or the persistent pool); empty if none."""
        pool = self._pool if self._pool is not None else getattr(self._run, "pool", None)
        return list(pool.threads) if pool is not None else []

    def stats(self) -> dict[str, Any]:
        """Statistics of the current (or last) run.

        Returns:
            ``{"state": "not started" | "running" | "completed" | "failed" | "stopped", "elapsed_s",
            "consumed", "failures", "stages": [...]}``; one entry per stage, the source first, with
            ``name, kind, concurrency, count`` (inputs processed successfully), ``failures``,
            ``outputs``, ``items_per_s`` (count / elapsed), ``latency_p50_s / p90 / p99`` (seconds in
            the user function per input, over the last 10 000 inputs; ``None`` if none),
            ``utilization`` (busy time / (elapsed * concurrency)) and ``queue``: the stage's output
            queue ``{name, size, occupancy_mean, occupancy_max, producer_wait_s, consumer_wait_s}``
            (for the last stage, the sink; its ``consumer_wait_s`` is the time the consumer waited).

            A stage with high utilization, a full input queue and an empty output queue is the
            bottleneck.
        """
        run = self._run
        if run is None:
            return {"state": "not started", "elapsed_s": 0.0, "consumed": 0, "failures": 0, "stages": []}
        return run.stats()

    def format_stats(self) -> str:
        """:meth:`stats` as a text table."""
        return format_stats(self.stats()) if self._run is not None else "pipeline not started"

    def __reduce__(self) -> Any:
        raise TypeError(
            "a Pipeline cannot be pickled or copied: it runs its own threads; use it in the main process "
            "(e.g. torch.utils.data.DataLoader(spdl_torch.datasets.PipelineDataset(pipeline), batch_size=None, num_workers=0))"
        )

    def __del__(self) -> None:
        run = getattr(self, "_run", None)
        pool = getattr(self, "_pool", None)
        try:
            if run is not None:
                run.stop(timeout=0)  # never block in __del__ (it may run on any thread, e.g. another loop's)
            if pool is not None:
                pool.shutdown()
        except Exception:  # pragma: no cover - interpreter shutdown
            pass
