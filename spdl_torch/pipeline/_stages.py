"""Stage definitions (what the builder records) and the coroutines that run them on the scheduler loop.

Every stage reads from an input queue and writes to an output queue; end of stream is the
:data:`~._queues.EOF` sentinel. A ``pipe`` stage with concurrency ``c`` holds at most ``c`` items: a
slot (semaphore) is taken *before* an item is read from the input queue and released only once all
the outputs of that item were put into the output queue, so a slow consumer blocks the stage, which
stops reading, which blocks the stage above, and so on up to the source (backpressure).
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import AsyncIterable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from ._failures import Budget, PipelineFailure
from ._queues import EOF
from ._stats import StageStats

__all__ = ["AggregateStage", "DisaggregateStage", "PipeStage", "fn_kind", "run_source", "run_stage"]


def fn_kind(fn: Callable[..., Any]) -> str:
    """Classifies a stage function: ``"async"`` (``async def``), ``"asyncgen"`` (``async def`` with
    ``yield``), ``"gen"`` (``def`` with ``yield``) or ``"sync"`` (anything else callable).

    Raises:
        TypeError: ``fn`` is not callable.
    """
    if not callable(fn):
        raise TypeError(f"stage function must be callable, got {fn!r}")
    for f in (fn, getattr(fn, "__call__", None)):
        if f is None:
            continue
        if inspect.isasyncgenfunction(f):
            return "asyncgen"
        if inspect.iscoroutinefunction(f):
            return "async"
        if inspect.isgeneratorfunction(f):
            return "gen"
    return "sync"


@dataclass
class PipeStage:
    fn: Callable[..., Any]
    concurrency: int
    output_order: str
    name: str
    max_failures: int | float | None
    thread_affinity: Callable[[Any], int] | None = None
    kind: str = field(init=False)

    def __post_init__(self) -> None:
        self.kind = fn_kind(self.fn)


@dataclass
class AggregateStage:
    n: int
    drop_last: bool
    name: str
    kind: str = "aggregate"
    concurrency: int = 1


@dataclass
class DisaggregateStage:
    name: str
    kind: str = "disaggregate"
    concurrency: int = 1


class _Stop:
    pass


_STOP = _Stop()


def _next_or_stop(it: Any) -> Any:
    try:
        return next(it)
    except StopIteration:
        return _STOP


class StageRunner:
    """What a running stage needs from its run: the loop, the thread pool and the failure tracker."""

    def __init__(self, ctx: Any, stats: StageStats, budget: Budget, affinity: Callable[[Any], int] | None = None) -> None:
        self.ctx = ctx
        self.stats = stats
        self.budget = budget
        self.affinity = affinity

    def offload(self, fn: Callable[..., Any], *args: Any, thread: int | None = None) -> asyncio.Future:
        return self.ctx.pool.submit(self.ctx.loop, fn, *args, thread=thread)


async def run_source(ctx: Any, source: Iterable | AsyncIterable, stats: StageStats, out_q: Any) -> None:
    """Iterates ``source`` and puts its items into ``out_q``. A sync iterable is iterated on the pool
    threads (``next()`` may block, e.g. list a bucket), an async one on the loop.

    Raises:
        PipelineFailure: the source raised (chained); there is no failure budget for the source.
    """
    item: Any = None
    credits = ctx.credits  # max_in_flight: one credit per item taken, returned when the consumer gets one
    try:
        if isinstance(source, AsyncIterable) or hasattr(source, "__aiter__"):
            ait = source.__aiter__()
            while True:
                if credits is not None:
                    await credits.acquire()
                t0 = time.perf_counter()
                try:
                    item = await ait.__anext__()
                except StopAsyncIteration:
                    break
                stats.add_latency(time.perf_counter() - t0)
                stats.count += 1
                stats.outputs += 1
                await out_q.put(item)
        else:
            it = await ctx.pool.submit(ctx.loop, iter, source)
            while True:
                if credits is not None:
                    await credits.acquire()
                t0 = time.perf_counter()
                item = await ctx.pool.submit(ctx.loop, _next_or_stop, it)
                if item is _STOP:
                    break
                stats.add_latency(time.perf_counter() - t0)
                stats.count += 1
                stats.outputs += 1
                await out_q.put(item)
        item = None
    except (asyncio.CancelledError, PipelineFailure):
        raise
    except Exception as e:
        raise PipelineFailure(f"Stage 'source' failed after {stats.count} items: {type(e).__name__}: {e}",
                              stage="source") from e
    await out_q.put(EOF)


async def run_stage(ctx: Any, stage: Any, stats: StageStats, in_q: Any, out_q: Any) -> None:
    """Runs one stage until its input ends, then puts :data:`EOF`."""
    if isinstance(stage, AggregateStage):
        await _run_aggregate(stage, stats, in_q, out_q)
    elif isinstance(stage, DisaggregateStage):
        await _run_disaggregate(stats, in_q, out_q)
    else:
        runner = StageRunner(ctx, stats, Budget(_effective_budget(stage, ctx)), stage.thread_affinity)
        await _run_pipe(runner, stage, in_q, out_q)
    await out_q.put(EOF)


def _effective_budget(stage: PipeStage, ctx: Any) -> int | float:
    if stage.max_failures is not None:
        return stage.max_failures
    if ctx.max_failures is not None:
        return ctx.max_failures
    return 0


async def _run_aggregate(stage: AggregateStage, stats: StageStats, in_q: Any, out_q: Any) -> None:
    buf: list[Any] = []
    while (item := await in_q.get()) is not EOF:
        stats.count += 1
        buf.append(item)
        if len(buf) == stage.n:
            batch, buf = buf, []
            stats.outputs += 1
            await out_q.put(batch)
    if buf and not stage.drop_last:
        stats.outputs += 1
        await out_q.put(buf)


async def _run_disaggregate(stats: StageStats, in_q: Any, out_q: Any) -> None:
    while (item := await in_q.get()) is not EOF:
        stats.count += 1
        for x in item:
            stats.outputs += 1
            await out_q.put(x)


async def _process(r: StageRunner, fn: Callable[..., Any], kind: str, item: Any, emit: Callable[[Any], Any]) -> None:
    """Applies ``fn`` to ``item`` and emits its output(s); a failure is counted against the budget and
    the item dropped, or the run is failed (``ctx.fail``). Never raises except ``CancelledError``."""
    stats = r.stats
    busy = 0.0
    try:
        thread = r.affinity(item) if r.affinity is not None and kind in ("sync", "gen") else None
        if kind == "sync":
            t0 = time.perf_counter()
            out = await r.offload(fn, item, thread=thread)
            busy = time.perf_counter() - t0
            stats.outputs += 1
            await emit(out)
        elif kind == "async":
            t0 = time.perf_counter()
            out = await fn(item)
            busy = time.perf_counter() - t0
            stats.outputs += 1
            await emit(out)
        elif kind == "gen":
            t0 = time.perf_counter()
            gen = await r.offload(fn, item, thread=thread)
            while True:
                out = await r.offload(_next_or_stop, gen, thread=thread)
                busy += time.perf_counter() - t0
                if out is _STOP:
                    break
                stats.outputs += 1
                await emit(out)
                t0 = time.perf_counter()
        else:  # asyncgen
            agen = fn(item)
            try:
                t0 = time.perf_counter()
                async for out in agen:
                    busy += time.perf_counter() - t0
                    stats.outputs += 1
                    await emit(out)
                    t0 = time.perf_counter()
                busy += time.perf_counter() - t0
            finally:
                await agen.aclose()
    except asyncio.CancelledError:
        raise
    except Exception as e:
        stats.add_latency(busy)
        err = r.ctx.tracker.record(stats, r.budget, item, e, r.ctx.source_stats.count)
        if err is not None:
            r.ctx.fail(err)
        return
    stats.count += 1
    stats.add_latency(busy)


async def _run_pipe(r: StageRunner, stage: PipeStage, in_q: Any, out_q: Any) -> None:
    fn, kind, c = stage.fn, stage.kind, stage.concurrency
    if c == 1:  # sequential: no per-item task, both orders are the same
        while (item := await in_q.get()) is not EOF:
            await _process(r, fn, kind, item, out_q.put)
    elif stage.output_order == "completion":
        await _run_unordered(r, fn, kind, c, in_q, out_q)
    else:
        await _run_ordered(r, fn, kind, c, in_q, out_q)
    err = r.ctx.tracker.final_check(r.stats, r.budget)
    if err is not None:
        r.ctx.fail(err)


async def _cancel_all(tasks: set[asyncio.Task]) -> None:
    for t in tasks:
        t.cancel()
    if tasks:
        await asyncio.gather(*tasks, return_exceptions=True)


async def _run_unordered(r: StageRunner, fn: Callable, kind: str, c: int, in_q: Any, out_q: Any) -> None:
    sem = asyncio.Semaphore(c)
    tasks: set[asyncio.Task] = set()

    async def one(item: Any) -> None:
        try:
            await _process(r, fn, kind, item, out_q.put)
        finally:
            sem.release()

    try:
        while True:
            await sem.acquire()
            item = await in_q.get()
            if item is EOF:
                break
            t = asyncio.ensure_future(one(item))
            tasks.add(t)
            t.add_done_callback(tasks.discard)
        while tasks:
            await asyncio.gather(*list(tasks))
    finally:
        await _cancel_all(tasks)


async def _run_ordered(r: StageRunner, fn: Callable, kind: str, c: int, in_q: Any, out_q: Any) -> None:
    # Each in-flight item gets a channel (queue of size 1) that its task writes its outputs to; the
    # emitter drains the channels in input order and releases the item's slot after its last output.
    sem = asyncio.Semaphore(c)
    tasks: set[asyncio.Task] = set()
    channels: asyncio.Queue = asyncio.Queue()  # at most c entries: one per slot

    async def one(item: Any, ch: asyncio.Queue) -> None:
        await _process(r, fn, kind, item, ch.put)
        await ch.put(EOF)

    async def emitter() -> None:
        while (ch := await channels.get()) is not None:
            while (out := await ch.get()) is not EOF:
                await out_q.put(out)
            sem.release()

    em = asyncio.ensure_future(emitter())
    tasks.add(em)
    try:
        while True:
            await sem.acquire()
            item = await in_q.get()
            if item is EOF:
                break
            ch: asyncio.Queue = asyncio.Queue(1)
            channels.put_nowait(ch)
            t = asyncio.ensure_future(one(item, ch))
            tasks.add(t)
            t.add_done_callback(tasks.discard)
        channels.put_nowait(None)
        await em
    finally:
        await _cancel_all(tasks)


def describe_stage(stage: Any) -> str:
    if isinstance(stage, PipeStage):
        return f"pipe({stage.name}, kind={stage.kind}, concurrency={stage.concurrency}, order={stage.output_order})"
    if isinstance(stage, AggregateStage):
        return f"aggregate({stage.n}, drop_last={stage.drop_last})"
    return "disaggregate()"

