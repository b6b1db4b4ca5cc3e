"""Worker-bound fetching: each ``IterableDataset`` worker advances its own iterator on its own thread, and the
request source that gives every worker its share of requests the way torch does, so that one slow worker holds
only its own requests (no head-of-line blocking with ``in_order=False``). Map-style loaders with
``worker_rng="per_worker"`` use the same source (batch ``i`` to worker ``i % num_workers``)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from typing import Any

from ._fetch import EpochFetch
from ._messages import Exhausted, Failure, Request, Result, Stopped
from ._state import Stateful

__all__ = ["IterableFetch", "WorkerBoundSource"]

_WAIT = object()


class IterWorker:
    """Worker ``k``'s iterator over its dataset copy; only thread ``k`` touches it."""

    __slots__ = ("it", "ended", "state")

    def __init__(self) -> None:
        self.it: Iterator | None = None
        self.ended = False
        self.state: Any = None  # dataset state to load before iter(), or None


class IterableFetch(EpochFetch):
    """Loads the next batch (or sample, without batching) of a worker's iterator."""

    def __init__(self, loader: Any, workers: Any, *args: Any) -> None:
        super().__init__(loader, workers, *args)
        self.iter_workers = [IterWorker() for _ in range(workers.num_workers if workers is not None else 1)]
        self.stateful = isinstance(loader.dataset, Stateful)

    def load(self, request: Request, worker: int | None) -> Any:
        k = 0 if worker is None else worker
        w = self.iter_workers[k]
        if w.ended:
            return Exhausted(request.seq, k)
        dataset = self.dataset(worker)
        try:
            if w.it is None:
                if w.state is not None:
                    dataset.load_state_dict(w.state)
                w.it = iter(dataset)
            if self.auto_collation:
                data = []
                for _ in range(self.batch_size):
                    self.check_stopped()
                    try:
                        data.append(next(w.it))
                    except StopIteration:
                        w.ended = True
                        break
                if not data or (self.drop_last and len(data) < self.batch_size):
                    w.ended = True
                    return Exhausted(request.seq, k)
            else:
                try:
                    data = next(w.it)
                except StopIteration:
                    w.ended = True
                    return Exhausted(request.seq, k)
            batch = self.finish(self.collate_fn(data))
        except Stopped:
            raise
        except BaseException as e:
            if worker is None:  # num_workers=0: the original exception, as torch
                raise
            return Result(request.seq, Failure(e, f"in DataLoader worker thread {k} while loading from the IterableDataset"), k)
        return Result(request.seq, batch, k, dataset.state_dict() if self.stateful else None)

    def restore(self, exhausted: list[int], iter_states: dict[int, Any]) -> None:
        """A resumed epoch of a stateful dataset: the workers whose iterators were exhausted stay so, the others
        load their saved dataset state before ``iter()``."""
        for k in exhausted:
            self.iter_workers[k].ended = True
        for k, state in iter_states.items():
            self.iter_workers[k].state = state


class WorkerBoundSource:
    """The pipeline's async source for requests bound to workers. As torch's ``_try_put_index``: worker ``k``
    has at most ``per_worker`` requests outstanding (issued and not yet received by the consumer); with
    ``strict``, requests go to the workers in turn (a worker without room makes the source wait), otherwise to
    the next worker in turn that has room. ``plan`` yields the requests of a fixed assignment (map-style); without
    it the source makes requests for the workers whose iterators are not exhausted (iterable)."""

    def __init__(self, num_workers: int, per_worker: int, strict: bool, *, fetch: IterableFetch | None = None,
                 plan: Iterator[Request] | None = None, start: int = 0) -> None:
        self.num_workers = num_workers
        self.per_worker = per_worker
        self.strict = strict
        self.fetch = fetch
        self.plan = plan
        self.outstanding = [0] * num_workers
        self._next_worker = start
        self._seq = 0
        self._pending: Request | None = None
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._changed: asyncio.Event | None = None

    def received(self, worker: int) -> None:
        """The consumer got a result of ``worker`` (any thread)."""
        with self._lock:
            self.outstanding[worker] -= 1
            loop, event = self._loop, self._changed
        if loop is not None:
            try:
                loop.call_soon_threadsafe(event.set)
            except RuntimeError:  # the run is over
                pass

    def _choose(self) -> Any:
        if self.plan is not None:
            if self._pending is None:
                self._pending = next(self.plan, None)
                if self._pending is None:
                    return None
            return self._pending if self.outstanding[self._pending.worker] < self.per_worker else _WAIT
        n = self.num_workers
        active = [w for w in range(n) if not self.fetch.iter_workers[w].ended]
        if not active:
            return None
        for j in range(n):
            w = (self._next_worker + j) % n
            if w not in active:
                continue
            if self.outstanding[w] < self.per_worker:
                return Request(self._seq, None, w)
            if self.strict:
                return _WAIT
        return _WAIT

    def __aiter__(self) -> WorkerBoundSource:
        with self._lock:
            self._loop, self._changed = asyncio.get_running_loop(), asyncio.Event()
        return self

    async def __anext__(self) -> Request:
        while True:
            self._changed.clear()
            with self._lock:
                request = self._choose()
                if request is not None and request is not _WAIT:
                    self.outstanding[request.worker] += 1
                    self._pending = None
                    self._seq += 1
                    self._next_worker = request.worker + 1
            if request is None:
                raise StopAsyncIteration
            if request is not _WAIT:
                return request
            await self._changed.wait()
