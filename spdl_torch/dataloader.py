"""Thread-based drop-in for :class:`torch.utils.data.DataLoader`.

Workers are *threads* of the calling process instead of worker processes: no dataset pickling, no
shared-memory tensor transfer, no fork/spawn start-up. This pays off when the per-sample work runs in
native code that releases the GIL (for example the decoders in :mod:`spdl_torch.io`).

The module is split into three layers that know nothing about each other's internals, so that each can
be replaced independently (e.g. by a pipeline engine):

* **index sampling** -- torch's own ``Sampler`` / ``BatchSampler`` objects, chosen and validated by
  :class:`DataLoader` exactly like torch does, iterated only in the consumer thread;
* **fetching** -- torch's own ``_MapDatasetFetcher`` (``dataset.__getitems__`` when defined, else one
  ``dataset[i]`` per index, then ``collate_fn``), plus optional memory pinning;
* **running** -- :class:`_ThreadRunner`, a bounded, ordered pool of daemon threads that applies one
  function to submitted items and hands back results or wrapped exceptions.

:class:`_DataLoaderIter` glues the three together for one epoch.
"""

from __future__ import annotations

import atexit
import collections
import itertools
import queue
import threading
import time
import warnings
import weakref
from collections.abc import Callable, Iterable
from typing import Any

import torch
from torch._utils import ExceptionWrapper
from torch.utils.data import (
    BatchSampler,
    IterableDataset,
    RandomSampler,
    Sampler,
    SequentialSampler,
)
from torch.utils.data._utils.collate import default_collate, default_convert
from torch.utils.data._utils.fetch import _MapDatasetFetcher
from torch.utils.data._utils.pin_memory import pin_memory as _pin_memory
from torch.utils.data._utils.worker import WorkerInfo

__all__ = ["DataLoader", "get_worker_info"]


# ----------------------------------------------------------------------------------------------------
# Worker info (thread-local)
# ----------------------------------------------------------------------------------------------------

_thread_local = threading.local()


def get_worker_info() -> WorkerInfo | None:
    """Information about the current :class:`DataLoader` worker thread.

    Returns:
        ``None`` when called outside a worker thread (the main thread, or any thread when
        ``num_workers=0``). Inside a worker thread (including in ``worker_init_fn``) a
        :class:`torch.utils.data._utils.worker.WorkerInfo` with

        * ``id`` (int): the worker id, in ``[0, num_workers - 1]``;
        * ``num_workers`` (int): the number of worker threads of this iterator;
        * ``seed`` (int): ``base_seed + id``, where ``base_seed`` is drawn from the loader's
          ``generator`` at the start of each epoch, as torch does. The threads share the process'
          global RNGs, so unlike torch the seed is *not* applied to ``random``/``torch``/``numpy``;
          use it to seed a per-thread generator if needed;
        * ``dataset``: the dataset object. Threads share it -- it is the very object passed to the
          loader, not a copy;
        * ``worker_method``: ``"thread"``.
    """
    return getattr(_thread_local, "worker_info", None)


# ----------------------------------------------------------------------------------------------------
# Thread runner
# ----------------------------------------------------------------------------------------------------

_live_runners: weakref.WeakSet[_ThreadRunner] = weakref.WeakSet()
_EXIT_JOIN_TIMEOUT_S = 5.0  # as torch's MP_STATUS_CHECK_INTERVAL when it joins workers at shutdown


@atexit.register
def _shutdown_live_runners() -> None:
    """At interpreter exit, stop the workers of iterators still alive and let them leave.

    Idle workers return at once. A worker inside a task is waited for (at most
    ``_EXIT_JOIN_TIMEOUT_S`` in all) because a daemon thread still running native torch code when the
    interpreter finalizes can abort the process ("terminate called without an active exception").
    """
    runners = list(_live_runners)
    for runner in runners:
        runner.shutdown()
    deadline = time.monotonic() + _EXIT_JOIN_TIMEOUT_S
    for runner in runners:
        runner.join(max(0.0, deadline - time.monotonic()))


class _Failure:
    """A task's exception, as an :class:`ExceptionWrapper` (type + formatted traceback, no frames)."""

    __slots__ = ("wrapper",)

    def __init__(self, wrapper: ExceptionWrapper) -> None:
        self.wrapper = wrapper


class _ThreadRunner:
    """Apply ``fn`` to submitted items on ``num_threads`` daemon threads.

    The consumer calls :meth:`submit` (it alone decides how many items are in flight, so results never
    pile up unboundedly) and :meth:`get` to receive ``(key, value)`` pairs: in submission order when
    ``in_order`` is true, else in completion order. ``value`` is a :class:`_Failure` when ``fn`` raised.
    Workers never block on handing results back (results go to a dict guarded by a condition), so the
    consumer may stop at any time without deadlocking them; :meth:`shutdown` makes idle workers exit at
    once and busy ones as soon as their current item returns, discarding it.

    The worker threads only reference this object, never the iterator that owns it, so dropping the
    iterator triggers its ``__del__`` (and thereby :meth:`shutdown`).
    """

    def __init__(
        self,
        fn: Callable[[Any], Any],
        num_threads: int,
        *,
        in_order: bool = True,
        thread_init: Callable[[int], None] | None = None,
        describe_failure: Callable[[int, Any], str] = lambda worker_id, item: f"in worker thread {worker_id}",
        name: str = "spdl_torch-worker",
    ) -> None:
        self._fn = fn
        self._in_order = in_order
        self._thread_init = thread_init
        self._describe_failure = describe_failure
        self._tasks: queue.SimpleQueue = queue.SimpleQueue()
        self._cond = threading.Condition()
        self._done: dict[int, Any] = {}  # key -> result, guarded by _cond
        self._pending: collections.deque[int] = collections.deque()  # submitted keys, consumer only
        self._fatal: ExceptionWrapper | None = None  # thread_init failure, guarded by _cond
        self._stopped = False
        self._keys = itertools.count()
        self._threads = [
            threading.Thread(target=self._work, args=(i,), name=f"{name}-{i}", daemon=True)
            for i in range(num_threads)
        ]
        _live_runners.add(self)
        for t in self._threads:
            t.start()

    @property
    def num_pending(self) -> int:
        """Items submitted and not yet returned by :meth:`get`."""
        return len(self._pending)

    def submit(self, item: Any) -> None:
        key = next(self._keys)
        self._pending.append(key)
        self._tasks.put((key, item))

    def get(self, timeout: float | None = None) -> tuple[Any, Any]:
        """Wait for the next result. Raises :class:`queue.Empty` after ``timeout`` seconds."""
        if not self._pending:
            raise RuntimeError("get() called with no pending item")
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while True:
                if self._fatal is not None:
                    self._fatal.reraise()
                key = self._ready_key()
                if key is not None:
                    self._pending.remove(key)
                    return key, self._done.pop(key)
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    raise queue.Empty
                self._cond.wait(remaining)

    def _ready_key(self) -> int | None:
        if self._in_order:
            return self._pending[0] if self._pending[0] in self._done else None
        return next((k for k in self._pending if k in self._done), None)

    def shutdown(self) -> None:
        """Stop all workers; idempotent, never blocks, discards pending work."""
        with self._cond:
            if self._stopped:
                return
            self._stopped = True
            self._done.clear()
        self._pending.clear()
        for _ in self._threads:
            self._tasks.put(None)

    def join(self, timeout: float | None = None) -> None:
        """Wait for the worker threads to exit, at most ``timeout`` seconds in all."""
        deadline = None if timeout is None else time.monotonic() + timeout
        for t in self._threads:
            t.join(None if deadline is None else max(0.0, deadline - time.monotonic()))

    def _work(self, worker_id: int) -> None:
        if self._thread_init is not None:
            try:
                self._thread_init(worker_id)
            except BaseException:
                with self._cond:
                    self._fatal = ExceptionWrapper(where=self._describe_failure(worker_id, None))
                    self._cond.notify_all()
                return
        while True:
            task = self._tasks.get()
            if task is None or self._stopped:
                return
            key, item = task
            try:
                result = self._fn(item)
            except BaseException:
                result = _Failure(ExceptionWrapper(where=self._describe_failure(worker_id, item)))
            with self._cond:
                if self._stopped:
                    return
                self._done[key] = result
                self._cond.notify_all()
            del result, item, task


# ----------------------------------------------------------------------------------------------------
# DataLoader
# ----------------------------------------------------------------------------------------------------


class DataLoader:
    """Iterate over a map-style dataset in batches, loading on worker *threads*.

    Same constructor and semantics as :class:`torch.utils.data.DataLoader`; the difference is that
    ``num_workers`` counts threads of this process.

    Args:
        dataset (Dataset): map-style dataset (``__getitem__`` and ``__len__``; ``__getitems__`` is used
            for a whole batch when defined). Iterable-style datasets are not supported yet.
        batch_size (int or None): samples per batch (default ``1``). ``None`` disables automatic
            batching: each item of the sampler is one index, and ``collate_fn`` defaults to
            ``default_convert``.
        shuffle (bool): reshuffle at every epoch, using a ``RandomSampler`` drawn from ``generator``.
            Mutually exclusive with ``sampler``.
        sampler (Sampler or Iterable): the indices to load, in order. Must have ``__len__`` for
            ``len(loader)``.
        batch_sampler (Sampler or Iterable): yields lists of indices, one list per batch. Mutually
            exclusive with ``batch_size``, ``shuffle``, ``sampler`` and ``drop_last``.
        num_workers (int): worker threads. ``0`` loads in the calling thread (default).
        collate_fn (Callable): merges a list of samples into a batch (default ``default_collate``).
        pin_memory (bool): copy the batch's tensors into pinned memory (on the worker thread). Warns and
            does nothing when no accelerator is available, like torch.
        drop_last (bool): drop the last batch if it is smaller than ``batch_size``.
        timeout (float): if positive, seconds to wait for a batch from the workers before raising
            ``RuntimeError("DataLoader timed out after {timeout} seconds")``. Ignored when
            ``num_workers=0`` (as in torch).
        worker_init_fn (Callable[[int], None]): called once on each worker thread with its id, before it
            loads anything. Its exception is re-raised by the iterator.
        multiprocessing_context: not supported (threads); must be ``None``.
        generator (torch.Generator): RNG for ``RandomSampler`` and the per-epoch ``base_seed``.
        prefetch_factor (int): batches in flight per worker (default ``2`` when ``num_workers > 0``);
            at most ``prefetch_factor * num_workers`` batches are loaded ahead of the consumer.
        persistent_workers (bool): not supported yet; must be ``False``.
        pin_memory_device (str): deprecated in torch; warns and is ignored when ``pin_memory=True``.
        in_order (bool): if ``False``, batches are returned as soon as they are ready instead of in
            sampler order (only with ``num_workers > 0``).

    Raises:
        ValueError: invalid argument combination (same messages as torch).
        NotImplementedError: an option this loader does not support yet (iterable-style dataset,
            ``persistent_workers=True``, ``multiprocessing_context``).

    Iterating raises the dataset's/``collate_fn``'s exception: directly when ``num_workers=0``; from a
    worker thread it is re-raised with the same type (``RuntimeError`` if it cannot be rebuilt) and a
    message ``"Caught <Type> in DataLoader worker thread <id> while loading sample indices [...]"``
    followed by the original traceback.
    """

    def __init__(
        self,
        dataset,
        batch_size: int | None = 1,
        shuffle: bool | None = None,
        sampler: Sampler | Iterable | None = None,
        batch_sampler: Sampler | Iterable | None = None,
        num_workers: int = 0,
        collate_fn: Callable[[list], Any] | None = None,
        pin_memory: bool = False,
        drop_last: bool = False,
        timeout: float = 0,
        worker_init_fn: Callable[[int], None] | None = None,
        multiprocessing_context=None,
        generator: torch.Generator | None = None,
        *,
        prefetch_factor: int | None = None,
        persistent_workers: bool = False,
        pin_memory_device: str = "",
        in_order: bool = True,
    ) -> None:
        # Validation mirrors torch/utils/data/dataloader.py, in the same order and with the same messages.
        if num_workers < 0:
            raise ValueError(
                "num_workers option should be non-negative; use num_workers=0 to disable multiprocessing."
            )
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError(
                "prefetch_factor option could only be specified in multiprocessing."
                "let num_workers > 0 to enable multiprocessing, otherwise set prefetch_factor to None."
            )
        elif num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        elif prefetch_factor is not None and prefetch_factor < 0:
            raise ValueError("prefetch_factor option should be non-negative")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")
        if persistent_workers:
            raise NotImplementedError("spdl_torch.DataLoader does not support persistent_workers=True yet.")
        if multiprocessing_context is not None:
            if num_workers == 0:
                raise ValueError(
                    "multiprocessing_context can only be used with multi-process loading "
                    f"(num_workers > 0), but got num_workers={num_workers}"
                )
            raise NotImplementedError(
                "spdl_torch.DataLoader loads on threads; multiprocessing_context is not supported."
            )
        if isinstance(dataset, IterableDataset):
            raise NotImplementedError("spdl_torch.DataLoader does not support IterableDataset yet.")

        shuffle = bool(shuffle)
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError(
                    "batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and drop_last"
                )
            batch_size = None
            drop_last = False
        elif batch_size is None and drop_last:
            raise ValueError(
                "batch_size=None option disables auto-batching and is mutually exclusive with drop_last"
            )
        if sampler is None:
            sampler = RandomSampler(dataset, generator=generator) if shuffle else SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        if collate_fn is None:
            collate_fn = default_collate if batch_sampler is not None else default_convert

        self.dataset = dataset
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.num_workers = num_workers
        self.collate_fn = collate_fn
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.generator = generator
        self.prefetch_factor = prefetch_factor
        self.persistent_workers = persistent_workers
        self.in_order = in_order

    @property
    def _auto_collation(self) -> bool:
        return self.batch_sampler is not None

    @property
    def _index_sampler(self) -> Sampler | Iterable:
        """What is iterated per epoch: ``batch_sampler`` when batching, else ``sampler``."""
        return self.batch_sampler if self._auto_collation else self.sampler

    def __len__(self) -> int:
        return len(self._index_sampler)

    def __iter__(self) -> _DataLoaderIter:
        return _DataLoaderIter(self)


def _describe_indices(indices: Any) -> str:
    if isinstance(indices, (list, tuple)):
        return f"sample indices {list(indices)}"
    return f"sample index {indices}"


class _DataLoaderIter:
    """One epoch of a :class:`DataLoader`: sampler iterator -> fetcher -> (thread runner) -> consumer."""

    def __init__(self, loader: DataLoader) -> None:
        if loader.pin_memory and loader.pin_memory_device:
            warnings.warn(
                "pin_memory_device is deprecated, the current accelerator will be used as the device,"
                f"ignore pin_memory_device='{loader.pin_memory_device}'.",
                stacklevel=3,
            )
        accelerator_available = torch.accelerator.is_available()
        if loader.pin_memory and not accelerator_available:
            warnings.warn(
                "'pin_memory' argument is set as true but no accelerator is found, "
                "then device pinned memory won't be used.",
                stacklevel=3,
            )
        fetcher = _MapDatasetFetcher(loader.dataset, loader._auto_collation, loader.collate_fn, loader.drop_last)
        pin = loader.pin_memory and accelerator_available

        def fetch(indices: Any) -> Any:
            data = fetcher.fetch(indices)
            return _pin_memory(data) if pin else data

        self._fetch = fetch
        self._timeout = loader.timeout
        # Same draw order as torch: the (lazy) sampler iterator, then base_seed -- so that a seeded
        # `generator` yields the same shuffle as torch.utils.data.DataLoader.
        self._sampler_iter = iter(loader._index_sampler)
        self._base_seed = torch.empty((), dtype=torch.int64).random_(generator=loader.generator).item()
        self._exhausted = False
        self._runner: _ThreadRunner | None = None
        self._max_in_flight = 0
        if loader.num_workers > 0:
            dataset, num_workers, base_seed, init_fn = (
                loader.dataset, loader.num_workers, self._base_seed, loader.worker_init_fn
            )

            def thread_init(worker_id: int) -> None:
                _thread_local.worker_info = WorkerInfo(
                    id=worker_id, num_workers=num_workers, seed=base_seed + worker_id,
                    dataset=dataset, worker_method="thread",
                )
                if init_fn is not None:
                    init_fn(worker_id)

            def describe_failure(worker_id: int, indices: Any) -> str:
                where = f"in DataLoader worker thread {worker_id}"
                if indices is None:
                    return where + " (worker_init_fn)"
                return f"{where} while loading {_describe_indices(indices)}"

            self._max_in_flight = max(1, loader.prefetch_factor * num_workers)
            self._runner = _ThreadRunner(
                self._fetch,  # a plain function: worker threads must not reference this iterator
                num_workers,
                in_order=loader.in_order,
                thread_init=thread_init,
                describe_failure=describe_failure,
                name="spdl_torch-DataLoader-worker",
            )
            while self._runner.num_pending < self._max_in_flight and self._submit_next():
                pass

    def _submit_next(self) -> bool:
        """Submit the next batch's indices to the runner; ``False`` when the sampler is exhausted."""
        if self._exhausted:
            return False
        try:
            indices = next(self._sampler_iter)
        except StopIteration:
            self._exhausted = True
            return False
        self._runner.submit(indices)
        return True

    def __iter__(self) -> _DataLoaderIter:
        return self

    def __next__(self) -> Any:
        if self._runner is None:
            indices = next(self._sampler_iter)  # StopIteration ends the epoch
            try:
                return self._fetch(indices)
            except Exception as e:
                e.add_note(f"(raised by DataLoader while loading {_describe_indices(indices)})")
                raise
        if self._runner.num_pending == 0:
            self._shutdown()
            raise StopIteration
        try:
            _, result = self._runner.get(self._timeout if self._timeout > 0 else None)
        except queue.Empty:
            self._shutdown()
            raise RuntimeError(f"DataLoader timed out after {self._timeout} seconds") from None
        except BaseException:  # a worker_init_fn failed, or the wait was interrupted: end the epoch
            self._shutdown()
            raise
        self._submit_next()  # keep max_in_flight batches loading while the consumer works
        if isinstance(result, _Failure):
            result.wrapper.reraise()
        return result

    def _shutdown(self) -> None:
        runner, self._runner = getattr(self, "_runner", None), None
        if runner is not None:
            runner.shutdown()
            self._sampler_iter = iter(())  # further next() calls end the epoch

    def __del__(self) -> None:
        self._shutdown()
