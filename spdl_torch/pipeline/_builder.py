"""``PipelineBuilder``: declares source -> stages -> sink and builds a :class:`Pipeline`."""

from __future__ import annotations

from collections.abc import AsyncIterable, Callable, Iterable
from typing import Any

from ._failures import validate_max_failures
from ._pipeline import Pipeline
from ._run import PipelineSpec, default_num_threads
from ._stages import AggregateStage, DisaggregateStage, PipeStage

__all__ = ["PipelineBuilder"]


def _check_int(value: Any, what: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{what} must be an int, got {value!r}")
    if value < minimum:
        raise ValueError(f"{what} must be >= {minimum}, got {value}")
    return value


class PipelineBuilder:
    """Builds a pipeline: ``add_source`` first, then any number of ``pipe`` / ``aggregate`` /
    ``disaggregate``, optionally ``add_sink``, then ``build``. Methods return ``self`` for chaining.

    Memory bound: every queue between two stages holds at most ``queue_size`` items, a ``pipe`` stage
    holds at most ``concurrency`` items (inputs being processed or outputs waiting to be put
    downstream), ``aggregate(n)`` at most ``n`` items, the sink ``buffer_size`` items and the source
    1 item (read, waiting to be put). Hence, for plain (one output per input) stages and a consumer
    that stops pulling, the number of items read from the source but not yet consumed is at most::

        1 + queue_size * (number of stages) + sum(concurrency of pipe stages) + buffer_size

    (``number of stages`` counts ``pipe``, ``aggregate`` and ``disaggregate``; each has one input
    queue, the source's output queue being the first stage's input). Generators and
    ``disaggregate`` emit several items per input; the bound then holds per queue / stage, in items of
    that queue / stage.

    Args:
        queue_size: capacity (items, >= 1) of each queue between two stages. Default 2.
    """

    def __init__(self, queue_size: int = 2) -> None:
        self._queue_size = _check_int(queue_size, "queue_size", 1)
        self._source: Iterable | AsyncIterable | None = None
        self._stages: list[Any] = []
        self._buffer_size: int | None = None

    def add_source(self, source: Iterable | AsyncIterable) -> PipelineBuilder:
        """Sets the source: an iterable (iterated on a pool thread; ``iter(source)`` is called anew at
        every run) or an async iterable (iterated on the event loop).

        Raises:
            RuntimeError: a source was already added.
            TypeError: ``source`` is neither iterable nor async iterable.
        """
        if self._source is not None:
            raise RuntimeError("add_source() was already called")
        if not (hasattr(source, "__iter__") or hasattr(source, "__aiter__")):
            raise TypeError(f"source must be an iterable or an async iterable, got {type(source).__name__}")
        self._source = source
        return self

    def pipe(
        self,
        fn: Callable[[Any], Any],
        *,
        concurrency: int = 1,
        output_order: str = "input",
        name: str | None = None,
        max_failures: int | float | None = None,
        thread_affinity: Callable[[Any], int] | None = None,
    ) -> PipelineBuilder:
        """Adds a stage applying ``fn`` to every item.

        ``fn`` may be a plain function (run on the thread pool; best when it releases the GIL, e.g.
        native decoding), an ``async def`` (run on the event loop; for network I/O; must not block),
        a generator function or an async generator function (each input may produce 0..n outputs).

        Args:
            fn: the stage function, called with one item.
            concurrency: max number of items processed at once by this stage (>= 1).
            output_order: ``"input"``: outputs in source order (a slow item delays the ones after it);
                ``"completion"``: outputs as they finish (a slow item holds only its own slot).
            name: stage name for stats, logs and errors; default ``fn``'s ``__name__``; must be unique.
            max_failures: this stage's failure budget: an int count (fail when failures > count) or a
                float rate in (0, 1), checked once 50 items were processed, and at the end. Default:
                the ``max_failures`` given to :meth:`build`, else 0 (the first failure raises).
            thread_affinity: for sync and generator functions, ``thread_affinity(item)`` is the index of
                the pool thread (in ``[0, num_threads)``) that must run ``fn(item)``; items of one thread
                run there one after another, in the order they reach the stage (e.g. one worker's
                iterator, or a handle opened on that thread). ``None``: any free thread.

        Raises:
            RuntimeError: no source yet, or after ``add_sink``.
            TypeError / ValueError: invalid arguments.
        """
        self._check_open()
        _check_int(concurrency, "concurrency", 1)
        if output_order not in ("input", "completion"):
            raise ValueError(f'output_order must be "input" or "completion", got {output_order!r}')
        validate_max_failures(max_failures, "pipe")
        stage_name = name if name is not None else getattr(fn, "__name__", None) or type(fn).__name__
        if thread_affinity is not None and not callable(thread_affinity):
            raise TypeError(f"thread_affinity must be callable, got {thread_affinity!r}")
        self._stages.append(PipeStage(fn, concurrency, output_order, self._unique(stage_name, name is not None),
                                      max_failures, thread_affinity))
        return self

    def aggregate(self, n: int, /, *, drop_last: bool = False) -> PipelineBuilder:
        """Groups consecutive items into lists of ``n`` (>= 1); the last, shorter list is emitted
        unless ``drop_last``."""
        self._check_open()
        _check_int(n, "aggregate n", 1)
        self._stages.append(AggregateStage(n, bool(drop_last), self._unique(f"aggregate({n})", False)))
        return self

    def disaggregate(self) -> PipelineBuilder:
        """Emits the elements of each (iterable) item one by one; inverse of :meth:`aggregate`."""
        self._check_open()
        self._stages.append(DisaggregateStage(self._unique("disaggregate", False)))
        return self

    def add_sink(self, buffer_size: int = 2) -> PipelineBuilder:
        """Sets the capacity (items, >= 1) of the output buffer the consumer reads from. Optional
        (default 2); must be last."""
        self._check_open()
        self._buffer_size = _check_int(buffer_size, "buffer_size", 1)
        return self

    def build(
        self,
        *,
        num_threads: int | None = None,
        max_failures: int | float | None = None,
        report_stats_interval: float | None = None,
        stats_callback: Callable[[dict[str, Any]], None] | None = None,
        thread_initializer: Callable[[int], None] | None = None,
        thread_name: str | None = None,
        persistent_threads: bool = False,
        max_in_flight: int | None = None,
    ) -> Pipeline:
        """Builds the pipeline (nothing runs until it is iterated or started).

        Args:
            num_threads: pool threads for sync functions, sync generators and the sync source.
                Default: 1 + the sum of the concurrencies of sync / generator stages (max 64).
            max_failures: global budget over all stages (int count, or float rate of source items),
                and the default budget of stages that set none. Default ``None``: no global budget,
                stages default to 0.
            report_stats_interval: if set, every this many seconds (and once at the end of a run) the
                stats are passed to ``stats_callback`` or, without a callback, logged at INFO level on
                the ``spdl_torch.pipeline`` logger as a table. The callback runs on the scheduler
                thread and must return quickly.
            stats_callback: see ``report_stats_interval``.
            thread_initializer: called once on each pool thread with its index in
                ``[0, num_threads)`` before the thread runs anything (e.g. to set thread-local
                state). If it raises, every call run on that thread fails with that exception
                (counted against the stage's failure budget). With an ``async`` source and only sync
                ``pipe`` stages, exactly the stages' calls run on the pool, so ``num_threads`` equal
                to the stage's concurrency gives one thread per concurrent call.
            thread_name: prefix of the pool threads' names (``f"{thread_name}-{index}"``).
            persistent_threads: keep the pool threads across runs (epochs) instead of starting new
                ones per run, so ``thread_initializer`` runs once per thread for the pipeline's life;
                they end with :meth:`Pipeline.close` or when the pipeline is collected.
            max_in_flight: if set (>= 1), at most this many items are taken from the source and not yet
                returned to the consumer: the source waits for a credit, which the consumer gives back
                with each item it gets (torch's ``prefetch_factor * num_workers`` bound of a DataLoader).

        Raises:
            RuntimeError: no source.
            TypeError / ValueError: invalid arguments.
        """
        if self._source is None:
            raise RuntimeError("add_source() must be called before build()")
        validate_max_failures(max_failures, "build")
        stages = tuple(self._stages)
        if num_threads is None:
            num_threads = default_num_threads(stages)
        _check_int(num_threads, "num_threads", 1)
        if max_in_flight is not None:
            _check_int(max_in_flight, "max_in_flight", 1)
        if report_stats_interval is not None and not report_stats_interval > 0:
            raise ValueError(f"report_stats_interval must be > 0 seconds, got {report_stats_interval}")
        return Pipeline(
            PipelineSpec(
                source=self._source,
                stages=stages,
                queue_size=self._queue_size,
                buffer_size=self._buffer_size if self._buffer_size is not None else 2,
                num_threads=num_threads,
                max_failures=max_failures,
                report_stats_interval=report_stats_interval,
                stats_callback=stats_callback,
                thread_initializer=thread_initializer,
                thread_name=thread_name,
                persistent_threads=bool(persistent_threads),
                max_in_flight=max_in_flight,
            )
        )

    def _check_open(self) -> None:
        if self._source is None:
            raise RuntimeError("add_source() must be called first")
        if self._buffer_size is not None:
            raise RuntimeError("add_sink() must be the last call before build()")

    def _unique(self, name: str, explicit: bool) -> str:
        taken = {"source"} | {s.name for s in self._stages}
        if name not in taken:
            return name
        if explicit:
            raise ValueError(f"stage name {name!r} is already used")
        i = 2
        while f"{name}#{i}" in taken:
            i += 1
        return f"{name}#{i}"
