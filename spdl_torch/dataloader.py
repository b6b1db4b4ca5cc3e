"""Thread-based drop-in for :class:`torch.utils.data.DataLoader`, built on :mod:`spdl_torch.pipeline`.

Workers are *threads* of the calling process instead of worker processes: no dataset pickling, no
shared-memory tensor transfer, no fork/spawn start-up, one copy of the dataset in memory. This pays off
when the per-sample work runs in native code that releases the GIL (e.g. :mod:`spdl_torch.io`).

How an epoch runs (``num_workers > 0``)::

    sampler / batch_sampler (iterated on the pipeline's event loop, credit-limited)
      -> pipe(fetch + collate [+ pin], concurrency=num_workers, output_order="input"|"completion")
      -> sink -> consumer (__next__)

The pool has exactly ``num_workers`` threads (``spdl_torch-DataLoader-worker-<id>``); each runs
``worker_init_fn`` once and carries its :class:`~spdl_torch._loader_worker.ThreadWorkerInfo`. The
source yields one request per credit; the consumer grants a credit per batch it receives, so at most
``prefetch_factor * num_workers`` batches are requested ahead of the consumer, as in torch.
"""

from __future__ import annotations

import asyncio
import atexit
import dataclasses
import itertools
import threading
import time
import warnings
import weakref
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import torch
from torch._utils import ExceptionWrapper
from torch.utils.data import BatchSampler, IterableDataset, RandomSampler, Sampler, SequentialSampler
from torch.utils.data._utils.collate import default_convert
from torch.utils.data._utils.fetch import _MapDatasetFetcher
from torch.utils.data._utils.pin_memory import pin_memory as _pin_memory

from ._loader_worker import (
    ThreadWorkerInfo,
    _thread_local,
    get_worker_info,
    make_thread_rng,
    set_thread_index,
    set_worker_info,
    thread_index,
)
from .datasets._fused import collate as _fused_collate
from .pipeline import PipelineBuilder, PipelineFailure

__all__ = ["DataLoader", "ThreadWorkerInfo", "get_worker_info"]

_THREAD_NAME = "spdl_torch-DataLoader-worker"
_EXIT_JOIN_TIMEOUT_S = 5.0
_STATE_FORMAT = "spdl_torch.DataLoader/1"
_live_pipelines: weakref.WeakSet = weakref.WeakSet()
_warned_mp_context = False


@atexit.register
def _shutdown_at_exit() -> None:
    """Stop every loader's threads at interpreter exit and wait (at most ``_EXIT_JOIN_TIMEOUT_S`` in
    all) for workers still inside a batch: a daemon thread still running native torch code while the
    interpreter finalizes can abort the process ("terminate called without an active exception")."""
    pipelines = list(_live_pipelines)
    # every worker thread, also those of loaders already stopped that are still finishing a batch
    threads = [t for t in threading.enumerate() if t.name.startswith(_THREAD_NAME) and t.daemon]
    for p in pipelines:
        try:
            p.close()
        except Exception:  # pragma: no cover
            pass
    deadline = time.monotonic() + _EXIT_JOIN_TIMEOUT_S
    for t in threads:
        t.join(max(0.0, deadline - time.monotonic()))


# ----------------------------------------------------------------------------------------------------
# Messages between the worker threads and the consumer
# ----------------------------------------------------------------------------------------------------


class _Failure:
    """A batch's exception as an :class:`ExceptionWrapper` (type + formatted traceback, no frames)."""

    __slots__ = ("wrapper",)

    def __init__(self, wrapper: ExceptionWrapper) -> None:
        self.wrapper = wrapper


class _Fatal(_Failure):
    """``worker_init_fn`` failed on the thread: the epoch ends after raising it."""


_EMPTY = object()  # a batch all of whose samples were skipped under on_error="skip"


@dataclasses.dataclass
class _Exhausted:
    """An ``IterableDataset`` worker's iterator is exhausted."""

    worker: int


@dataclasses.dataclass
class _Result:
    seq: int  # position of the request in the epoch
    data: Any  # the batch or a _Failure
    worker: int = -1  # iterable datasets: the worker whose iterator produced it
    state: Any = None  # iterable datasets: dataset.state_dict() right after producing it


def _describe_indices(indices: Any) -> str:
    if isinstance(indices, (list, tuple)):
        return f"sample indices {list(indices)}"
    return f"sample index {indices}"


# ----------------------------------------------------------------------------------------------------
# Worker side
# ----------------------------------------------------------------------------------------------------


class _Workers:
    """Per-thread state of one pipeline (one epoch, or all epochs with ``persistent_workers``)."""

    def __init__(self, num_workers: int, dataset: Any, base_seed: int, init_fn: Callable | None) -> None:
        self.num_workers = num_workers
        self.dataset = dataset
        self.base_seed = base_seed
        self.init_fn = init_fn
        self._rngs: dict[int, Any] = {}
        self._lock = threading.Lock()

    def reseed(self, base_seed: int) -> None:
        with self._lock:
            self.base_seed = base_seed
            self._rngs.clear()

    def rng(self, worker_id: int) -> Any:
        with self._lock:
            rng = self._rngs.get(worker_id)
            if rng is None:
                rng = self._rngs[worker_id] = make_thread_rng(self.base_seed + worker_id)
            return rng

    def info(self, worker_id: int, epoch: int) -> ThreadWorkerInfo:
        return ThreadWorkerInfo(
            id=worker_id, num_workers=self.num_workers, seed=self.base_seed + worker_id, dataset=self.dataset,
            rng=self.rng(worker_id), worker_method="thread", base_seed=self.base_seed, epoch=epoch,
        )

    def thread_initializer(self, index: int, epoch: int) -> None:
        """Runs once on each pool thread (the engine's ``thread_initializer``)."""
        set_thread_index(index)
        set_worker_info(self.info(index, epoch))
        _thread_local.init_failure = None
        if self.init_fn is not None:
            try:
                self.init_fn(index)
            except BaseException:
                _thread_local.init_failure = ExceptionWrapper(
                    where=f"in DataLoader worker thread {index} (worker_init_fn)"
                )


class _IterWorker:
    """One ``IterableDataset`` iterator (worker ``k``); its requests run in ticket order on any thread."""

    def __init__(self, state: Any) -> None:
        self.it: Iterator | None = None
        self.ended = False
        self.state = state  # dataset state to load before iter(), or None
        self.turn = 0  # next ticket allowed to run
        self.cond = threading.Condition()


class _Epoch:
    """What the worker threads need for one epoch. Holds no reference to the consumer's iterator."""

    def __init__(self, loader: DataLoader, workers: _Workers | None, epoch: int, pin: bool) -> None:
        self.epoch = epoch
        self.workers = workers
        self.dataset = loader.dataset
        self.auto_collation = loader._auto_collation
        self.batch_size = loader.batch_size
        self.collate_fn = loader.collate_fn
        self.drop_last = loader.drop_last
        self.pin = pin
        self.stopped = False
        self.infos: dict[int, ThreadWorkerInfo] = {}
        self.stateful = callable(getattr(self.dataset, "state_dict", None)) and callable(
            getattr(self.dataset, "load_state_dict", None))
        if isinstance(self.dataset, IterableDataset):
            n = workers.num_workers if workers is not None else 1
            self.iter_workers = [_IterWorker(None) for _ in range(n)]
        else:
            self.fetcher = _MapDatasetFetcher(self.dataset, self.auto_collation, self.collate_fn, self.drop_last)
        self.skip_errors = loader.on_error == "skip" and self.auto_collation and not isinstance(
            self.dataset, IterableDataset)
        self.skipped, self.skipped_lock = loader.skipped_samples, loader._skipped_lock

    def info(self, worker_id: int) -> ThreadWorkerInfo:
        info = self.infos.get(worker_id)
        if info is None:
            info = self.infos[worker_id] = self.workers.info(worker_id, self.epoch)
        return info

    def stop(self) -> None:
        self.stopped = True
        if isinstance(self.dataset, IterableDataset):
            for w in self.iter_workers:
                with w.cond:
                    w.cond.notify_all()

    def _finish(self, data: Any) -> Any:
        return _pin_memory(data) if self.pin else data

    # -- map-style ------------------------------------------------------------------------------
    def fetch(self, indices: Any) -> Any:
        """The collated (and pinned) batch of ``indices``; under ``on_error="skip"`` without the samples that
        raise (:data:`_EMPTY` when none is left)."""
        if not self.skip_errors:
            return self._finish(self.fetcher.fetch(indices))
        try:
            return self._finish(self.fetcher.fetch(indices))
        except Exception:  # find the failing samples one by one
            pass
        good = []
        for index in indices:
            try:
                good.append(self.dataset[index])
            except Exception as e:
                reason = f"{type(e).__name__}: {e}"
                with self.skipped_lock:
                    self.skipped.append((index, reason))
                warnings.warn(f"DataLoader skipped sample index {index}: {reason}", stacklevel=2)
        return self._finish(self.collate_fn(good)) if good else _EMPTY

    def fetch_map(self, seq: int, indices: Any) -> Any:
        try:
            return _Result(seq, self.fetch(indices))
        except BaseException:
            where = "in DataLoader worker thread {}".format(get_worker_info().id) if self.workers else "in DataLoader"
            return _Result(seq, _Failure(ExceptionWrapper(where=f"{where} while loading {_describe_indices(indices)}")))

    # -- iterable-style -------------------------------------------------------------------------
    def next_iterable(self, seq: int, k: int) -> Any:
        """The next batch (or sample) of worker ``k``'s iterator; called with worker ``k``'s info set."""
        w = self.iter_workers[k]
        if w.ended:
            return _Exhausted(k)
        try:
            if w.it is None:
                if w.state is not None:
                    self.dataset.load_state_dict(w.state)
                w.it = iter(self.dataset)
            if self.auto_collation:
                data = []
                for _ in range(self.batch_size):
                    try:
                        data.append(next(w.it))
                    except StopIteration:
                        w.ended = True
                        break
                if not data or (self.drop_last and len(data) < self.batch_size):
                    w.ended = True
                    return _Exhausted(k)
            else:
                try:
                    data = next(w.it)
                except StopIteration:
                    w.ended = True
                    return _Exhausted(k)
            batch = self._finish(self.collate_fn(data))
        except BaseException:
            if self.workers is None:  # num_workers=0: the original exception, like torch
                raise
            where = f"in DataLoader worker thread {k}" if self.workers else "in DataLoader"
            return _Result(seq, _Failure(ExceptionWrapper(where=f"{where} while loading from the IterableDataset")), k)
        state = self.dataset.state_dict() if self.stateful else None
        return _Result(seq, batch, k, state)

    def fetch_iterable(self, seq: int, k: int, ticket: int) -> Any:
        """Runs worker ``k``'s ``ticket``-th request once its earlier requests are done (any thread)."""
        w = self.iter_workers[k]
        with w.cond:
            while w.turn != ticket:
                if self.stopped:
                    return _Exhausted(k)
                w.cond.wait(0.1)
        prev = set_worker_info(self.info(k))
        try:
            return self.next_iterable(seq, k)
        finally:
            set_worker_info(prev)
            with w.cond:
                w.turn += 1
                w.cond.notify_all()


def _run_request(request: tuple) -> Any:
    """The fetch stage function (runs on a pool thread)."""
    ctx: _Epoch = request[0]
    failure = getattr(_thread_local, "init_failure", None)
    if failure is not None:
        return _Fatal(failure)
    index = thread_index()
    if index is not None:  # the thread's info for this epoch (persistent threads live for many)
        set_worker_info(ctx.info(index))
    if len(request) == 3:
        return ctx.fetch_map(request[1], request[2])
    return ctx.fetch_iterable(request[1], request[2], request[3])


class _Feed:
    """The pipeline's (async) source for one epoch: yields one request per credit."""

    def __init__(self, requests: Iterator, credits: int) -> None:
        self._requests = requests
        self._lock = threading.Lock()
        self._granted = credits
        self._taken = 0
        self._waiting = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._event: asyncio.Event | None = None

    def grant(self) -> None:
        with self._lock:
            self._granted += 1
            loop, event = (self._loop, self._event) if self._waiting else (None, None)
            self._waiting = False
        if loop is not None:  # wake the source only when it waits for a credit
            try:
                loop.call_soon_threadsafe(event.set)
            except RuntimeError:  # the run is over
                pass

    async def requests(self) -> Any:
        with self._lock:
            self._loop, self._event = asyncio.get_running_loop(), asyncio.Event()
        while True:
            while True:
                self._event.clear()
                with self._lock:
                    if self._taken < self._granted:
                        break
                    self._waiting = True
                await self._event.wait()
            try:
                request = next(self._requests)
            except StopIteration:
                return
            self._taken += 1
            yield request


class _Source:
    """The pipeline's source object: iterates the feed of the epoch current when a run starts."""

    def __init__(self) -> None:
        self.feed: _Feed | None = None

    def __aiter__(self) -> Any:
        return self.feed.requests()


# ----------------------------------------------------------------------------------------------------
# DataLoader
# ----------------------------------------------------------------------------------------------------


def _check_device(device: Any) -> torch.device | None:
    if device is None:
        return None
    dev = torch.device(device)
    if dev.type == "cpu":
        return None
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device={str(device)!r}: no CUDA device is available (torch.cuda.is_available() is False)")
    return dev


class DataLoader:
    """Iterate over a dataset in batches, loading on worker *threads* (a drop-in for
    :class:`torch.utils.data.DataLoader`; ``num_workers`` counts threads of this process).

    Args:
        dataset (Dataset or IterableDataset): map-style (``__getitem__``/``__len__``; ``__getitems__``
            fetches a whole batch when defined) or iterable-style. The threads share this one object.
        batch_size (int or None): samples per batch (default ``1``); ``None`` disables automatic
            batching (``collate_fn`` then defaults to ``default_convert``).
        shuffle (bool): reshuffle every epoch with a ``RandomSampler`` drawing from ``generator``.
        sampler (Sampler or Iterable): the indices to load, in order (map-style only).
        batch_sampler (Sampler or Iterable): lists of indices, one per batch. Mutually exclusive with
            ``batch_size``, ``shuffle``, ``sampler`` and ``drop_last``.
        num_workers (int): worker threads; ``0`` loads in the calling thread.
        collate_fn (Callable): merges a list of samples into a batch. The default is torch's
            ``default_collate``, except that a batch decoded by one fused call of spdl_torch's datasets
            (:func:`spdl_torch.datasets.collate`) is returned as that batch tensor, without a copy.
        pin_memory (bool): pin the batch's tensors (torch's ``pin_memory``, i.e. the caching host
            allocator) on the worker thread. Without an accelerator it warns like torch and does
            nothing.
        drop_last (bool): drop the last incomplete batch (for an ``IterableDataset``: of each worker).
        timeout (float): if positive, seconds to wait for a batch before raising
            ``RuntimeError("DataLoader timed out after {timeout} seconds")``; the epoch then ends.
            Ignored when ``num_workers=0`` (torch raises ``AssertionError`` there).
        worker_init_fn (Callable[[int], None]): called once on each worker thread with its id before
            it loads anything (once per thread for the loader's life with ``persistent_workers``). If it
            raises, ``next()`` re-raises that error (naming the thread), then the epoch ends; the next
            epoch calls it again (torch: the worker process dies and the loader fails).
        multiprocessing_context: validated like torch, then ignored with a one-time warning: the
            workers are threads.
        generator (torch.Generator): RNG of the default ``RandomSampler`` and of the per-epoch
            ``base_seed`` (``None``: torch's global RNG, as in torch).
        prefetch_factor (int): batches requested ahead per worker (default ``2`` with workers); at most
            ``prefetch_factor * num_workers`` batches are loaded ahead of the consumer.
        persistent_workers (bool): keep the threads (and their ``worker_init_fn`` state, per-thread
            RNGs and ``base_seed``) across epochs. A new ``iter()`` resets the previous iterator.
        pin_memory_device (str): deprecated in torch; warns and is ignored.
        in_order (bool): ``False`` returns batches as they complete (a slow batch holds only its slot).
        device (str or torch.device, keyword-only, beyond torch): if a CUDA device, batches are pinned
            and copied to it on a side CUDA stream (the consumer's stream waits for the copy), so the
            copy overlaps compute. ``"cpu"`` / ``None``: no transfer.
        on_error (str, keyword-only, beyond torch): ``"raise"`` (default, as torch) re-raises a sample's
            exception in the consumer. ``"skip"`` (map-style datasets with batching): when a batch fails,
            its samples are fetched one by one, the failing ones are dropped with a ``UserWarning`` naming
            the index and the reason, and the batch is collated from the rest (an all-bad batch is skipped).
            Every good sample is still returned exactly once. Dropped samples are listed, across epochs, in
            :attr:`skipped_samples` as ``(index, "ExceptionType: message")``. Exceptions of
            ``collate_fn`` itself are raised under both policies.

    Raises:
        ValueError: invalid arguments (same checks and messages as torch), or ``device`` names CUDA
            on a machine without CUDA.
        TypeError: invalid ``multiprocessing_context`` (as torch).

    Iteration re-raises the dataset's / ``collate_fn``'s exception: directly with ``num_workers=0``;
    from a thread with the same type (``RuntimeError`` if it cannot be rebuilt) and the message
    ``"Caught <Type> in DataLoader worker thread <id> while loading sample indices [...]"`` plus the
    original traceback; the iterator can go on with the next batch, as in torch.

    **IterableDataset.** Each worker ``k`` has its own iterator: ``iter(dataset)`` is called with
    ``get_worker_info().id == k`` (and the same info for every ``next()``). Batches come round-robin
    from the workers, as torch's. A dataset that shards by ``get_worker_info()`` yields each item
    once; one that does not yields every item ``num_workers`` times, exactly as with torch.

    **Randomness.** Threads share the global RNGs, which are not re-seeded per worker (that cannot be
    done per thread): use ``get_worker_info().rng`` (per-thread generators) or, for results that do
    not depend on the thread count and survive a resume, ``get_worker_info().sample_generator(index)``
    (seeded from ``(base_seed, epoch, index)``). A dataset with ``set_epoch(epoch)`` gets it called at
    the start of every epoch.

    **Resuming** (beyond torch; the contract of torchdata's ``StatefulDataLoader``): :meth:`state_dict`
    describes the position of the latest iterator; :meth:`load_state_dict` makes the next ``iter()``
    continue from there: the remaining batches, in the same order, with the same ``base_seed`` and
    epoch (hence the same ``sample_generator`` draws). Map-style: the RNG states at the start of the
    epoch are saved (the loader's ``generator``, the global RNG when it is ``None``, and the
    ``generator`` of the samplers), and the sampler is fast-forwarded past the batches already
    returned (no data is loaded for them); a map-style dataset with ``state_dict()`` /
    ``load_state_dict()`` (``spdl_torch.datasets.ImageFolder`` / ``FileListDataset``: the base seed of
    their random crops and flips, drawn from torch's global RNG when not given) has its state saved and
    restored with the loader's. An ``IterableDataset`` with ``state_dict()`` /
    ``load_state_dict()`` has ``state_dict()`` called on the worker thread after each batch (with
    that worker's info set: with several workers, key the state by ``get_worker_info().id``), and
    ``load_state_dict()`` before the worker's ``iter()``; one without is fast-forwarded by loading and
    discarding the batches already returned.
    """

    _initialized = False

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
        device: str | torch.device | None = None,
        on_error: str = "raise",
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

        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.in_order = in_order
        self.device = _check_device(device)
        if on_error not in ("raise", "skip"):
            raise ValueError(f"on_error should be 'raise' or 'skip', got {on_error!r}")
        self.on_error = on_error
        self.skipped_samples: list[tuple[Any, str]] = []
        self._skipped_lock = threading.Lock()

        if isinstance(dataset, IterableDataset):
            self._is_iterable = True
            if shuffle not in {False, None}:
                raise ValueError(
                    f"DataLoader with IterableDataset: expected unspecified shuffle option, but got shuffle={shuffle}"
                )
            if sampler is not None:
                raise ValueError(
                    f"DataLoader with IterableDataset: expected unspecified sampler option, but got sampler={sampler}"
                )
            elif batch_sampler is not None:
                raise ValueError(
                    "DataLoader with IterableDataset: expected unspecified "
                    f"batch_sampler option, but got batch_sampler={batch_sampler}"
                )
        else:
            shuffle = bool(shuffle)
            self._is_iterable = False

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
            if self._is_iterable:
                from torch.utils.data.dataloader import _InfiniteConstantSampler

                sampler = _InfiniteConstantSampler()
            else:
                sampler = RandomSampler(dataset, generator=generator) if shuffle else SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)

        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.generator = generator
        if collate_fn is None:
            collate_fn = _fused_collate if batch_sampler is not None else default_convert
        self.collate_fn = collate_fn
        self.persistent_workers = persistent_workers

        self._IterableDataset_len_called: int | None = None
        self._iterator: _DataLoaderIter | None = None  # persistent_workers only
        self._last_iter: weakref.ref | None = None  # for state_dict()
        self._epoch = -1  # epoch of the latest iterator
        self._resume: dict | None = None  # set by load_state_dict, used by the next iter()
        self._initialized = True

    # -- torch compatibility -----------------------------------------------------------------------
    @property
    def multiprocessing_context(self):
        return self.__multiprocessing_context

    @multiprocessing_context.setter
    def multiprocessing_context(self, multiprocessing_context) -> None:
        global _warned_mp_context
        if multiprocessing_context is not None:
            if self.num_workers == 0:
                raise ValueError(
                    "multiprocessing_context can only be used with multi-process loading "
                    f"(num_workers > 0), but got num_workers={self.num_workers}"
                )
            import multiprocessing as python_multiprocessing

            if isinstance(multiprocessing_context, str):
                valid_start_methods = torch.multiprocessing.get_all_start_methods()
                if multiprocessing_context not in valid_start_methods:
                    raise ValueError(
                        "multiprocessing_context option "
                        f"should specify a valid start method in {valid_start_methods!r}, but got "
                        f"multiprocessing_context={multiprocessing_context!r}"
                    )
                multiprocessing_context = torch.multiprocessing.get_context(multiprocessing_context)
            if not isinstance(multiprocessing_context, python_multiprocessing.context.BaseContext):
                raise TypeError(
                    "multiprocessing_context option should be a valid context "
                    "object or a string specifying the start method, but got "
                    f"multiprocessing_context={multiprocessing_context}"
                )
            if not _warned_mp_context:
                _warned_mp_context = True
                warnings.warn(
                    "spdl_torch.DataLoader loads with threads of this process, not worker processes: "
                    "multiprocessing_context is ignored.",
                    UserWarning,
                    stacklevel=3,
                )
        self.__multiprocessing_context = multiprocessing_context

    def __setattr__(self, attr: str, val: Any) -> None:
        if self._initialized and attr in (
            "batch_size", "batch_sampler", "sampler", "drop_last", "dataset", "persistent_workers",
        ):
            raise ValueError(f"{attr} attribute should not be set after {self.__class__.__name__} is initialized")
        super().__setattr__(attr, val)

    @property
    def _auto_collation(self) -> bool:
        return self.batch_sampler is not None

    @property
    def _index_sampler(self) -> Sampler | Iterable:
        """What is iterated per epoch: ``batch_sampler`` when batching, else ``sampler``."""
        return self.batch_sampler if self._auto_collation else self.sampler

    def __len__(self) -> int:
        if self._is_iterable:
            length = self._IterableDataset_len_called = len(self.dataset)
            if self.batch_size is not None:
                length = length // self.batch_size if self.drop_last else -(-length // self.batch_size)
            return length
        return len(self._index_sampler)

    def __iter__(self) -> _DataLoaderIter:
        resume, self._resume = self._resume, None
        if self.persistent_workers and self.num_workers > 0:
            if self._iterator is None:
                self._iterator = _DataLoaderIter(self, resume)
            else:
                self._iterator._reset(self, resume)
            it = self._iterator
        else:
            it = _DataLoaderIter(self, resume)
        self._last_iter = weakref.ref(it)
        return it

    def __del__(self) -> None:
        it = self.__dict__.get("_iterator")
        if it is not None:
            it._shutdown()

    # -- resumption --------------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """The position of the latest iterator, to resume with :meth:`load_state_dict` (a dict of
        plain Python values and tensors; ``torch.save``-able).

        Before any iteration, after an epoch ended, or when the latest iterator was dropped, it
        describes the start of the next epoch."""
        if self._resume is not None:  # loaded and not iterated yet
            return dict(self._resume)
        it = self._last_iter() if self._last_iter is not None else None
        if it is not None and not it._finished:
            state = it._state_dict()
        else:
            state = {
                "_format": _STATE_FORMAT,
                "epoch": self._epoch,
                "finished": True,
                "generator_state": self.generator.get_state() if self.generator is not None else None,
                "base_seed": self._iterator._workers_base_seed() if self._iterator is not None else None,
            }
        if _stateful_map_dataset(self.dataset):
            state["dataset_state"] = self.dataset.state_dict()
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Makes the next ``iter()`` continue from ``state_dict`` (from :meth:`state_dict` of a loader
        built with the same arguments).

        Raises:
            ValueError: not a state of ``spdl_torch.DataLoader``.
        """
        if not isinstance(state_dict, dict) or state_dict.get("_format") != _STATE_FORMAT:
            raise ValueError(f"state_dict: not a {_STATE_FORMAT} state: {state_dict!r:.200}")
        if state_dict.get("dataset_state") is not None and _stateful_map_dataset(self.dataset):
            self.dataset.load_state_dict(state_dict["dataset_state"])
        self._resume = dict(state_dict)


def _stateful_map_dataset(dataset: Any) -> bool:
    """A map-style dataset with ``state_dict()`` / ``load_state_dict()`` (the fused datasets: their
    per-sample seed), saved and restored with the loader's state. (An ``IterableDataset``'s state is
    taken per worker, on the worker's thread.)"""
    return (not isinstance(dataset, IterableDataset) and callable(getattr(dataset, "state_dict", None))
            and callable(getattr(dataset, "load_state_dict", None)))


def _sampler_generators(loader: DataLoader) -> list[torch.Generator]:
    """Generators of the samplers other than the loader's ``generator`` (their state is saved)."""
    found: list[torch.Generator] = []
    for obj in (loader.sampler, loader.batch_sampler, getattr(loader.batch_sampler, "sampler", None)):
        g = getattr(obj, "generator", None)
        if isinstance(g, torch.Generator) and g is not loader.generator and all(g is not f for f in found):
            found.append(g)
    return found


class _DataLoaderIter:
    """The iterator of a :class:`DataLoader` (one epoch; reset per epoch with ``persistent_workers``)."""

    def __init__(self, loader: DataLoader, resume: dict | None) -> None:
        if loader.pin_memory and loader.pin_memory_device:
            warnings.warn(
                "pin_memory_device is deprecated, the current accelerator will be used as the device,"
                f"ignore pin_memory_device='{loader.pin_memory_device}'.",
                stacklevel=3,
            )
        accelerator = torch.accelerator.is_available()
        if loader.pin_memory and not accelerator:
            warnings.warn(
                "'pin_memory' argument is set as true but no accelerator is found, "
                "then device pinned memory won't be used.",
                stacklevel=3,
            )
        self._device = loader.device
        self._pin = (loader.pin_memory and accelerator) or (self._device is not None and self._device.type == "cuda")
        self._num_workers = loader.num_workers
        self._timeout = loader.timeout
        self._persistent = loader.persistent_workers
        self._is_iterable = loader._is_iterable
        self._pipeline = None
        self._source = _Source()
        self._workers: _Workers | None = None
        self._it: Iterator | None = None
        self._ctx: _Epoch | None = None
        self._stream = None
        self._finished = True
        self._reset(loader, resume, first=True)

    # -- epoch start -------------------------------------------------------------------------------
    def _reset(self, loader: DataLoader, resume: dict | None = None, first: bool = False) -> None:
        self._end_epoch()
        draw_base_seed = first or not self._persistent  # torch draws it once for persistent workers
        forced_base_seed = None
        if resume is not None and resume.get("finished", True):
            # the saved epoch was over: start the next one from the saved generator state
            if resume.get("generator_state") is not None and loader.generator is not None:
                loader.generator.set_state(resume["generator_state"])
            loader._epoch = resume["epoch"]
            if resume.get("base_seed") is not None and self._persistent:
                forced_base_seed, draw_base_seed = resume["base_seed"], False
            resume = None
        elif resume is not None:
            forced_base_seed, draw_base_seed = resume["base_seed"], resume["drew_base_seed"]
        epoch = loader._epoch = loader._epoch + 1 if resume is None else resume["epoch"]
        self._epoch = epoch
        set_epoch = getattr(loader.dataset, "set_epoch", None)
        if callable(set_epoch):
            set_epoch(epoch)

        gens = _sampler_generators(loader)
        user_global_state = None
        if resume is None:
            rng = {
                "generator": loader.generator.get_state() if loader.generator is not None else None,
                "global": torch.get_rng_state() if loader.generator is None else None,
                "samplers": [g.get_state() for g in gens],
            }
        else:
            rng = resume["rng"]
            if rng["generator"] is not None:
                loader.generator.set_state(rng["generator"])
            if rng["global"] is not None:
                user_global_state = torch.get_rng_state()
                torch.set_rng_state(rng["global"])
            for g, s in zip(gens, rng["samplers"]):
                g.set_state(s)
        self._rng_at_start = rng
        try:
            # Same draw order as torch: the (lazy) sampler iterator, then base_seed (not redrawn for
            # persistent workers), then -- here in the consumer thread, as torch's workers path does
            # when it prefetches -- the first index batch.
            sampler_iter = iter(loader._index_sampler) if not self._is_iterable else None
            self._drew_base_seed = draw_base_seed
            if draw_base_seed:
                self._base_seed = torch.empty((), dtype=torch.int64).random_(generator=loader.generator).item()
            if forced_base_seed is not None:
                self._base_seed = forced_base_seed
            self._num_yielded = 0
            self._yielded_seqs: set[int] = set()  # out-of-order positions beyond the prefix
            self._prefix = 0  # positions [0, prefix) were all yielded
            self._discard = 0  # batches to drop (fast-forward of a non-stateful IterableDataset)
            self._iter_states: dict[int, Any] = {}
            self._exhausted_seen: set[int] = set()
            self._last_worker = -1
            if resume is not None:
                self._num_yielded = resume["num_yielded"]
                self._prefix = resume["prefix"]
                self._yielded_seqs = set(resume["yielded_seqs"])
            first = self._draw_first(sampler_iter, self._prefix) if not self._is_iterable else _END
        finally:
            if user_global_state is not None:
                torch.set_rng_state(user_global_state)

        self._finished = False
        pin = self._pin
        self._len_called = loader._IterableDataset_len_called
        if self._num_workers == 0:
            ctx = _Epoch(loader, None, epoch, pin)
            self._ctx = ctx
            if self._is_iterable:
                state = self._iterable_resume(loader, resume, ctx)
                if state is not None:
                    ctx.iter_workers[0].state = state.get(0)
            else:
                self._requests = self._map_requests(ctx, first, sampler_iter, self._prefix, self._yielded_seqs)
            return

        if self._workers is None or not self._persistent:
            self._workers = _Workers(loader.num_workers, loader.dataset, self._base_seed, loader.worker_init_fn)
        elif self._workers.base_seed != self._base_seed:  # resumed with persistent workers
            self._workers.reseed(self._base_seed)
        ctx = self._ctx = _Epoch(loader, self._workers, epoch, pin)
        if self._is_iterable:
            states = self._iterable_resume(loader, resume, ctx) or {}
            for k, s in states.items():
                ctx.iter_workers[k].state = s
            requests = self._iterable_requests(ctx, start=(self._last_worker + 1) % self._num_workers)
        else:
            requests = self._map_requests(ctx, first, sampler_iter, self._prefix, self._yielded_seqs)
        credits = max(1, (2 if loader.prefetch_factor is None else loader.prefetch_factor) * loader.num_workers)
        self._feed = _Feed(requests, credits)
        self._source.feed = self._feed
        if self._pipeline is None or not self._persistent:
            workers, first_epoch = self._workers, epoch
            self._pipeline = (
                PipelineBuilder(queue_size=1)
                .add_source(self._source)
                .pipe(_run_request, concurrency=loader.num_workers,
                      output_order="input" if loader.in_order else "completion", name="fetch")
                .add_sink(credits)
                .build(
                    num_threads=loader.num_workers,
                    thread_initializer=lambda i: workers.thread_initializer(i, first_epoch),
                    thread_name=_THREAD_NAME,
                    persistent_threads=self._persistent,
                )
            )
            _live_pipelines.add(self._pipeline)
        self._it = self._pipeline.iterate(timeout=self._timeout if self._timeout > 0 else None)

    def _workers_base_seed(self) -> int | None:
        return self._base_seed if self._persistent else None

    def _iterable_resume(self, loader: DataLoader, resume: dict | None, ctx: _Epoch) -> dict[int, Any] | None:
        if resume is None:
            return None
        self._exhausted_seen = set(resume.get("exhausted", ()))
        self._last_worker = resume.get("last_worker", -1)
        for k in self._exhausted_seen:
            ctx.iter_workers[k].ended = True
        if ctx.stateful:
            self._iter_states = {int(k): v for k, v in resume.get("iter_states", {}).items()}
            return dict(self._iter_states)
        self._discard = self._num_yielded  # not stateful: replay and drop
        self._num_yielded = 0
        self._exhausted_seen = set()
        self._last_worker = -1
        for w in ctx.iter_workers:
            w.ended = False
        return None

    @staticmethod
    def _draw_first(sampler_iter: Iterator, prefix: int) -> Any:
        """Fast-forwards past ``prefix`` index batches (no data is loaded for them) and draws the next
        one now, in the consumer thread (as torch's multi-worker iterator does when it prefetches)."""
        for _ in range(prefix):
            if next(sampler_iter, _END) is _END:
                return _END
        return next(sampler_iter, _END)

    @staticmethod
    def _map_requests(ctx: _Epoch, first: Any, sampler_iter: Iterator, seq: int, skip: set[int]) -> Iterator:
        if first is _END:
            return
        for indices in itertools.chain((first,), sampler_iter):
            if seq not in skip:  # positions already returned out of order (in_order=False)
                yield (ctx, seq, indices)
            seq += 1

    @staticmethod
    def _iterable_requests(ctx: _Epoch, start: int) -> Iterator:
        n = len(ctx.iter_workers)
        tickets = [0] * n
        k = start
        seq = 0
        while True:
            for j in range(n):
                w = (k + j) % n
                if not ctx.iter_workers[w].ended:
                    break
            else:
                return
            yield (ctx, seq, w, tickets[w])
            tickets[w] += 1
            seq += 1
            k = w + 1

    # -- consumer ----------------------------------------------------------------------------------
    def __iter__(self) -> _DataLoaderIter:
        return self

    def __next__(self) -> Any:
        if self._finished:
            raise StopIteration
        while True:
            result = self._next_result()
            if isinstance(result, _Exhausted):
                self._exhausted_seen.add(result.worker)
                continue
            if self._discard:
                self._discard -= 1
                continue
            if result.data is _EMPTY:  # every sample of the batch was skipped (on_error="skip")
                self._mark_yielded(result)
                continue
            break
        self._mark_yielded(result)
        data = result.data
        if isinstance(data, _Failure):
            data.wrapper.reraise()
        if self._device is not None:
            data = self._to_device(data)
        return data

    def _next_result(self) -> Any:
        if self._num_workers == 0:
            return self._next_in_thread()
        try:
            result = next(self._it)
        except StopIteration:
            self._end_epoch()
            raise
        except TimeoutError:
            self._shutdown()
            raise RuntimeError(f"DataLoader timed out after {self._timeout} seconds") from None
        except PipelineFailure as e:  # the sampler raised
            self._shutdown()
            if e.__cause__ is not None:
                raise e.__cause__ from None
            raise
        except BaseException:
            self._shutdown()
            raise
        self._feed.grant()
        if isinstance(result, _Fatal):
            self._shutdown()
            result.wrapper.reraise()
        return result

    def _next_in_thread(self) -> Any:
        ctx = self._ctx
        if self._is_iterable:
            w = ctx.iter_workers[0]
            if w.ended:
                self._end_epoch()
                raise StopIteration
            result = ctx.next_iterable(self._num_yielded, 0)
            if isinstance(result, _Exhausted):
                self._end_epoch()
                raise StopIteration
            return result
        try:
            _, seq, indices = next(self._requests)
        except StopIteration:
            self._end_epoch()
            raise
        try:
            data = ctx.fetch(indices)
        except Exception as e:
            self._mark_yielded(_Result(seq, None))
            e.add_note(f"(raised by DataLoader while loading {_describe_indices(indices)})")
            raise
        return _Result(seq, data)

    def _mark_yielded(self, result: _Result) -> None:
        self._num_yielded += 1
        if self._is_iterable:
            self._last_worker = result.worker
            if result.state is not None:
                self._iter_states[result.worker] = result.state
        else:
            self._yielded_seqs.add(result.seq)
            while self._prefix in self._yielded_seqs:
                self._yielded_seqs.discard(self._prefix)
                self._prefix += 1
        if self._is_iterable and self._len_called is not None and self._num_yielded > self._len_called:
            msg = (
                f"Length of IterableDataset {self._ctx.dataset if self._ctx else ''} was reported to be "
                f"{self._len_called}(when accessing len(dataloader)), but {self._num_yielded} samples have been "
                "fetched. "
            )
            if self._num_workers > 0:
                msg += (
                    "For multiprocessing data-loading, this could be caused by not properly configuring the "
                    "IterableDataset replica at each worker. Please see "
                    "https://pytorch.org/docs/stable/data.html#torch.utils.data.IterableDataset for examples."
                )
            warnings.warn(msg, stacklevel=3)

    def _to_device(self, data: Any) -> Any:
        dev = self._device
        if dev.type != "cuda":
            return _map_tensors(data, lambda t: t.to(dev))
        if self._stream is None:
            self._stream = torch.cuda.Stream(device=dev)
        current = torch.cuda.current_stream(dev)
        self._stream.wait_stream(current)  # the side stream must not overtake earlier frees
        with torch.cuda.stream(self._stream):
            out = _map_tensors(data, lambda t: t.to(dev, non_blocking=True))
        current.wait_stream(self._stream)
        _map_tensors(out, lambda t: t.record_stream(current) or t)
        return out

    # -- state -------------------------------------------------------------------------------------
    def _state_dict(self) -> dict[str, Any]:
        state = {
            "_format": _STATE_FORMAT,
            "epoch": self._epoch,
            "finished": False,
            "rng": self._rng_at_start,
            "drew_base_seed": self._drew_base_seed,
            "base_seed": self._base_seed,
            "num_yielded": self._num_yielded,
            "prefix": self._prefix,
            "yielded_seqs": sorted(self._yielded_seqs),
        }
        if self._is_iterable:
            state.update(iter_states=dict(self._iter_states), exhausted=sorted(self._exhausted_seen),
                         last_worker=self._last_worker)
        return state

    # -- shutdown ----------------------------------------------------------------------------------
    def _end_epoch(self) -> None:
        """Ends the current epoch (threads stay with persistent workers)."""
        self._finished = True
        ctx, self._ctx = getattr(self, "_ctx", None), None
        if ctx is not None:
            ctx.stop()
        it, self._it = getattr(self, "_it", None), None
        if it is not None:
            it.close()  # stops the run
        if not getattr(self, "_persistent", False):
            self._close_pipeline()

    def _close_pipeline(self) -> None:
        pipeline, self._pipeline = getattr(self, "_pipeline", None), None
        if pipeline is not None:
            pipeline.close()
            _live_pipelines.discard(pipeline)

    def _shutdown(self) -> None:
        self._end_epoch()
        self._close_pipeline()

    def __del__(self) -> None:
        self._shutdown()


_END = object()


def _map_tensors(data: Any, fn: Callable[[torch.Tensor], Any]) -> Any:
    from torch.utils._pytree import tree_map

    return tree_map(lambda x: fn(x) if isinstance(x, torch.Tensor) else x, data)
