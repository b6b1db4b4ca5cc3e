"""One execution of a pipeline (``Run``): its event loop on a scheduler thread, its thread pool, queues and
stats; and the immutable :class:`PipelineSpec` a :class:`~._pipeline.Pipeline` re-runs.

Threads of one run:

* the **scheduler thread** (daemon) runs a private asyncio event loop with one task per stage, the
  source task and, if asked, the stats reporter; ``async def`` stage functions run there;
* ``num_threads`` **pool threads** (daemons, :class:`~._pool.ThreadPool`) run the sync functions,
  sync generators and ``next()`` of a sync source;
* the **consumer** (the thread iterating the pipeline) only takes finished items from the sink queue.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
import weakref
from collections.abc import AsyncIterable, Callable, Iterable
from dataclasses import dataclass
from typing import Any

from .. import _exit
from ._failures import FailureTracker, PipelineFailure
from ._pool import ThreadPool
from ._queues import EOF, SinkQueue, StageQueue
from ._stages import PipeStage, run_source, run_stage
from ._stats import StageStats, format_stats

__all__ = ["PipelineSpec", "Run", "STOP_TIMEOUT_S", "default_num_threads", "make_pool"]

_LG = logging.getLogger("spdl_torch.pipeline")

#: Seconds :meth:`Pipeline.stop` waits for the scheduler thread before abandoning it.
STOP_TIMEOUT_S = 1.0

_LIVE_RUNS: weakref.WeakSet[Run] = weakref.WeakSet()


@_exit.on_stop
def _stop_all_at_exit() -> None:
    # at interpreter exit: cancel every live run; spdl_torch._exit then joins the scheduler and pool threads
    for run in list(_LIVE_RUNS):
        run.stop(timeout=0)


@dataclass(frozen=True)
class PipelineSpec:
    """Everything :class:`PipelineBuilder` collected; immutable so a pipeline can be re-run."""

    source: Iterable | AsyncIterable
    stages: tuple[Any, ...]
    queue_size: int
    buffer_size: int
    num_threads: int
    max_failures: int | float | None
    report_stats_interval: float | None
    stats_callback: Callable[[dict[str, Any]], None] | None
    thread_initializer: Callable[[int], None] | None = None
    thread_name: str | None = None
    persistent_threads: bool = False
    max_in_flight: int | None = None


class Run:
    """One execution of a :class:`PipelineSpec`: own event loop, scheduler thread and thread pool."""

    def __init__(self, spec: PipelineSpec, pool: ThreadPool | None = None) -> None:
        self.spec = spec
        self.max_failures = spec.max_failures
        self.loop = asyncio.new_event_loop()
        self._owns_pool = pool is None
        self.pool = pool if pool is not None else make_pool(spec)
        self.tracker = FailureTracker(spec.max_failures)
        self.state = "running"
        self.consumed = 0
        self.error: PipelineFailure | None = None
        self.source_stats = StageStats("source", "source", 1)
        self.stage_stats = [StageStats(s.name, s.kind, s.concurrency) for s in spec.stages]
        all_stats = [self.source_stats, *self.stage_stats]
        self.queues: list[Any] = [StageQueue(f"{st.name}->", spec.queue_size) for st in all_stats[:-1]]
        self.sink = SinkQueue("sink", spec.buffer_size, self.loop)
        self.queues.append(self.sink)
        for st, q in zip(all_stats, self.queues):
            st.queue = q.stats
        # max_in_flight: the source takes a credit per item, get() gives one back per item returned
        self.credits = asyncio.Semaphore(spec.max_in_flight) if spec.max_in_flight is not None else None
        self._waiting = False
        self._stop_requested = False
        self._detached = False
        self.t_start = time.perf_counter()
        self.t_end: float | None = None
        self._main_task = self.loop.create_task(self._main())
        self.thread = threading.Thread(target=self._thread_main, name="spdl_torch.pipeline-scheduler", daemon=True)
        _LIVE_RUNS.add(self)
        _exit.track(self.thread)
        self.thread.start()

    # -- scheduler thread ---------------------------------------------------------------------------
    def _thread_main(self) -> None:
        loop = self.loop
        asyncio.set_event_loop(loop)
        try:
            with contextlib.suppress(asyncio.CancelledError):  # stopped before it started
                loop.run_until_complete(self._main_task)
            loop.run_until_complete(loop.shutdown_asyncgens())
        except BaseException as e:  # noqa: BLE001 - handed to the consumer, never printed here
            self.fail(PipelineFailure(f"pipeline scheduler failed: {type(e).__name__}: {e}", stage="scheduler"), e)
        finally:
            if self._owns_pool:
                self.pool.shutdown()
            loop.close()

    def fail(self, err: PipelineFailure, cause: BaseException | None = None) -> None:
        """Fails the run with ``err`` (first error wins); the consumer raises it. Scheduler thread."""
        if cause is not None and err.__cause__ is None:
            err.__cause__ = cause
        if self.error is None:
            self.error = err
            self.state = "failed"
        self.sink.close(self.error)
        self._cancel_main()

    def _cancel_main(self) -> None:
        # only while the main task waits for the stages: its clean-up must not be interrupted
        if self._waiting:
            self._waiting = False
            self._main_task.cancel()

    async def _main(self) -> None:
        spec = self.spec
        tasks = [asyncio.ensure_future(run_source(self, spec.source, self.source_stats, self.queues[0]))]
        for i, stage in enumerate(spec.stages):
            tasks.append(asyncio.ensure_future(run_stage(self, stage, self.stage_stats[i], self.queues[i], self.queues[i + 1])))
        names = ["source", *(s.name for s in spec.stages)]
        aux = []
        if spec.report_stats_interval:
            aux.append(asyncio.ensure_future(self._report_periodically(spec.report_stats_interval)))
        self._waiting = not self._stop_requested
        try:
            if not self._waiting:  # stop() came before this task started
                raise asyncio.CancelledError
            done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
            for name, t in zip(names, tasks):
                if t in done and not t.cancelled() and t.exception() is not None:
                    e = t.exception()
                    if isinstance(e, PipelineFailure):
                        self.fail(e)
                    else:
                        self.fail(PipelineFailure(f"Stage {name!r} crashed: {type(e).__name__}: {e}", stage=name), e)
                    break
            else:
                if self.state == "running":
                    self.state = "completed"
        except asyncio.CancelledError:
            pass  # stop() or fail()
        finally:
            self._waiting = False
            for t in tasks + aux:
                t.cancel()
            await asyncio.gather(*tasks, *aux, return_exceptions=True)
            self.t_end = time.perf_counter()
            if self.state == "running":
                self.state = "stopped" if self._stop_requested else "completed"
            self.sink.close(self.error)
            if spec.report_stats_interval:
                self._report()

    async def _report_periodically(self, interval: float) -> None:
        while True:
            await asyncio.sleep(interval)
            self._report()

    def _report(self) -> None:
        cb = self.spec.stats_callback
        try:
            stats = self.stats()
            if cb is not None:
                cb(stats)
            else:
                _LG.info("%s", format_stats(stats))
        except Exception:
            _LG.exception("stats callback failed")

    # -- any thread ---------------------------------------------------------------------------------
    def stop(self, timeout: float = STOP_TIMEOUT_S) -> None:
        """Stops the run: buffered items are discarded, tasks cancelled, the scheduler thread joined
        for at most ``timeout`` seconds (then abandoned, it is a daemon; ``0``: not joined, now or by a
        later call). Idempotent."""
        if timeout <= 0:
            self._detached = True
        if not self.sink.eof:  # else every stage already finished: nothing to cancel
            if self.t_end is None:
                self._stop_requested = True
            self.sink.close(discard=True)
            try:
                self.loop.call_soon_threadsafe(self._cancel_main)
            except RuntimeError:  # loop already closed: the run is over
                pass
        if threading.current_thread() is not self.thread and not self._detached:
            self.thread.join(timeout)
        _LIVE_RUNS.discard(self)

    def get(self, timeout: float | None = None) -> Any:
        """Next item for the consumer, or :data:`EOF`. Raises the run's :class:`PipelineFailure`, or
        :class:`TimeoutError` when no item came within ``timeout`` seconds."""
        item = self.sink.get(self.thread.is_alive, timeout)
        if item is not EOF:
            self.consumed += 1
            if self.credits is not None:
                try:
                    self.loop.call_soon_threadsafe(self.credits.release)
                except RuntimeError:  # the loop is closed: the run is over
                    pass
        return item

    def stats(self) -> dict[str, Any]:
        end = self.t_end if self.t_end is not None else time.perf_counter()
        elapsed = end - self.t_start
        return {
            "state": self.state,
            "elapsed_s": elapsed,
            "consumed": self.consumed,
            "failures": self.tracker.total,
            "stages": [st.as_dict(elapsed) for st in (self.source_stats, *self.stage_stats)],
        }



def make_pool(spec: PipelineSpec) -> ThreadPool:
    return ThreadPool(spec.num_threads, initializer=spec.thread_initializer, thread_name=spec.thread_name)


def default_num_threads(stages: tuple[Any, ...]) -> int:
    """One thread per concurrent sync call (sync / generator stages) plus one for the source; 1..64."""
    n = 1 + sum(s.concurrency for s in stages if isinstance(s, PipeStage) and s.kind in ("sync", "gen"))
    return max(1, min(64, n))
