"""The iterator of a :class:`~spdl_torch.DataLoader`: starts and ends epochs, runs the engine, returns batches
(``__next__``, timeout, device copy) and keeps the position that ``state_dict()`` saves.

One epoch with workers::

    sampler (map-style) or per-worker turns (iterable)
      -> source (event loop; credits: prefetch_factor * num_workers)
      -> pipe(fetch.run, one thread per worker; output in request order or by completion)
      -> consumer (__next__); with device="cuda": DeviceFeed (_device.py), transfer_depth batches copied ahead
"""

from __future__ import annotations

import warnings
import weakref
from collections.abc import Iterator
from typing import Any

import torch

from .. import _exit
from ..pipeline import PipelineBuilder, PipelineFailure
from ._device import DeviceFeed
from ._epoch import start_epoch
from ._iterable import IterableFetch, WorkerBoundSource
from ._map import END, MapFetch, draw_first, map_requests
from ._messages import EMPTY, Exhausted, Failure, Fatal, Request, Result, describe_indices
from ._remainder import RemainderPool
from ._state import LoaderState, describe_loader
from ._source import Credited, SourceRef, run_request, worker_of
from ._worker import WorkerSet

__all__ = ["DataLoaderIter", "leave_position", "raise_not_copyable"]

THREAD_NAME = "spdl_torch-DataLoader-worker"
_live_iterators: weakref.WeakSet = weakref.WeakSet()


@_exit.on_stop
def _shutdown_at_exit() -> None:
    # at interpreter exit: end every live epoch (a fetch in progress ends at its next sample); spdl_torch._exit
    # then joins the worker threads (an abandoned iterator's too: they are tracked by their pool)
    for it in list(_live_iterators):
        try:
            it.shutdown(wait=False)
        except Exception:  # noqa: BLE001 -- the others still stop
            pass


def leave_position(it: Any) -> None:
    """At an iterator's finalization: its position, when batches of its epoch were still to come, to the hook its
    loader gave it (``_on_drop``), so that ``state_dict()`` still describes it. Never raises (a finalizer)."""
    hook = it.__dict__.get("_on_drop")
    if hook is None:
        return
    try:
        if it.active():
            hook(it, it.state())
    except Exception:  # noqa: BLE001 -- a position that cannot be saved (process mode) leaves nothing
        pass


def raise_not_copyable(it: Any) -> None:
    """An iterator is not pickled or copied (torch's raise ``NotImplementedError`` too): it runs on this process's
    worker threads or processes."""
    raise NotImplementedError(
        f"{type(it).__name__} (an iterator of spdl_torch.DataLoader) cannot be pickled or copied: its epoch runs on "
        "worker threads or processes of this process; copy or pickle the DataLoader instead (the copy has its "
        "state_dict() and goes on from there with workers of its own)")


class DataLoaderIter:
    """One epoch of a :class:`~spdl_torch.DataLoader` (reset per epoch with ``persistent_workers``)."""

    def __init__(self, loader: Any, resume: LoaderState | None) -> None:
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
        if loader.num_workers == 0 and loader.timeout != 0:  # torch's _SingleProcessDataLoaderIter
            raise AssertionError("DataLoader with num_workers=0 requires timeout == 0")
        self._device = loader.device
        self._pin = (loader.pin_memory and accelerator) or (self._device is not None and self._device.type == "cuda")
        self._num_workers = loader.num_workers
        self._timeout = loader.timeout
        self._persistent = loader.persistent_workers
        self._is_iterable = loader._is_iterable
        self._bound = self._is_iterable or loader.worker_rng == "per_worker"  # requests bound to workers
        self._identity = describe_loader(loader)
        self._index_sampler = loader._index_sampler
        self._pipeline = None
        self._workers: WorkerSet | None = None
        self._remainder: RemainderPool | None = None  # worker_mode="hybrid": the remainder's processes
        self._hybrid = loader.resolved_worker_mode == "hybrid"
        self._mp_context = loader.multiprocessing_context
        self._it: Iterator | None = None
        self._fetch: MapFetch | IterableFetch | None = None
        self._source_ref: SourceRef = SourceRef()
        self._feed = DeviceFeed(self._device, loader.transfer_depth) if self._device is not None and \
            self._device.type == "cuda" else None
        self._finished = True
        _live_iterators.add(self)
        self._reset(loader, resume, first=True)

    # -- epoch start -------------------------------------------------------------------------------
    def _reset(self, loader: Any, resume: LoaderState | None = None, first: bool = False) -> None:
        self._end_epoch()
        if self._feed is not None:
            self._feed.reset()  # batches of an epoch left early
        # torch draws base_seed once for persistent workers
        start = start_epoch(loader, resume, first or not self._persistent, self._persistent)
        self._epoch = epoch = start.epoch
        resume = start.resume
        self._rng_at_start = start.rng
        try:
            # Same draw order as torch: the (lazy) sampler iterator, then base_seed (not redrawn for
            # persistent workers), then -- in the consumer thread, as torch's workers path does when it
            # prefetches -- the first index batch.
            sampler_iter = iter(loader._index_sampler) if not self._is_iterable else None
            self._drew_base_seed = start.draw_base_seed
            self._base_seed = start.base_seed(loader, getattr(self, "_base_seed", None))
            self.num_yielded = 0
            self._yielded_seqs: set[int] = set()  # out-of-order positions beyond the prefix
            self._prefix = 0  # positions [0, prefix) were all yielded
            self.discard = 0  # batches to drop (fast-forward of a non-stateful IterableDataset)
            self.iter_states: dict[int, Any] = {}
            self.exhausted_seen: set[int] = set()
            self.last_worker = -1
            if resume is not None:
                self.num_yielded = resume.num_yielded
                self._prefix = resume.prefix
                self._yielded_seqs = set(resume.yielded_seqs)
            first_batch = draw_first(sampler_iter, self._prefix) if not self._is_iterable else END
        finally:
            start.restore_user_rng()

        self._finished = False
        self._len_called = loader._IterableDataset_len_called
        workers = None
        if self._num_workers > 0:
            if self._workers is None or not self._persistent:
                self._workers = WorkerSet(loader.num_workers, loader.dataset, self._base_seed, loader.worker_init_fn,
                                          loader.dataset_per_worker, loader.worker_rng)
            elif self._workers.base_seed != self._base_seed:  # resumed with persistent workers
                self._workers.reseed(self._base_seed)
            workers = self._workers
            if self._hybrid and self._remainder is None:
                self._remainder = RemainderPool(loader.num_workers, loader.dataset, self._mp_context,
                                                getattr(loader, "_converter", None))
        fetch_cls = IterableFetch if self._is_iterable else MapFetch
        fetch = self._fetch = fetch_cls(loader, workers, epoch, self._base_seed, self._pin, self._remainder)
        if self._is_iterable and resume is not None:
            self._resume_iterable(fetch, resume)
        n = max(1, self._num_workers)
        requests = None if self._is_iterable else map_requests(
            first_batch, sampler_iter, self._prefix, self._yielded_seqs, n, self._bound)
        start.set_dataset_epoch(loader)  # workers: their copies, at their first fetch of the epoch (_fetch.py)
        if self._num_workers == 0:
            self._requests = requests
            return

        per_worker = max(1, 2 if loader.prefetch_factor is None else loader.prefetch_factor)
        if self._bound:
            source = WorkerBoundSource(n, per_worker, strict=loader.in_order or not self._is_iterable,
                                       fetch=fetch if self._is_iterable else None, plan=requests,
                                       start=(self.last_worker + 1) % n)
        else:
            source = Credited(requests)
        self._source_ref.source, self._source_ref.fetch = source, fetch
        if self._pipeline is None or not self._persistent:
            self._pipeline = self._build_pipeline(loader, workers, epoch, per_worker)
        self._it = self._pipeline.iterate(timeout=self._timeout if self._timeout > 0 else None)
        workers.wait_initialized()

    def _resume_iterable(self, fetch: IterableFetch, saved: LoaderState) -> None:
        """A saved iterable position: a stateful dataset restores each worker's state; one without is replayed
        from the start and the batches already returned are dropped."""
        if fetch.stateful:
            self.exhausted_seen = set(saved.exhausted)
            self.last_worker = saved.last_worker
            self.iter_states = dict(saved.iter_states)
            fetch.restore(saved.exhausted, saved.iter_states)
        else:
            self.discard, self.num_yielded = self.num_yielded, 0

    def _build_pipeline(self, loader: Any, workers: WorkerSet, first_epoch: int, per_worker: int) -> Any:
        n = loader.num_workers
        source_ref = self._source_ref
        bound = self._bound
        workers.expect_initialization(n)
        return (
            PipelineBuilder(queue_size=1)
            .add_source(source_ref)
            .pipe(run_request, concurrency=n * per_worker if bound else n, name="fetch",
                  output_order="input" if loader.in_order else "completion",
                  thread_affinity=worker_of if bound else None)
            .add_sink(n * per_worker)
            .build(
                num_threads=n,
                thread_initializer=lambda i: workers.thread_initializer(i, first_epoch),
                thread_name=THREAD_NAME,
                persistent_threads=self._persistent,
                max_in_flight=None if bound else n * per_worker,
            )
        )

    # -- consumer ----------------------------------------------------------------------------------
    def __iter__(self) -> DataLoaderIter:
        return self

    def __len__(self) -> int:
        return len(self._index_sampler)

    def active(self) -> bool:
        """Whether batches of this epoch are still to come (from the engine, or in flight to the device)."""
        return not self._finished or (self._feed is not None and self._feed.has_more())

    def __next__(self) -> Any:
        feed = self._feed
        if feed is not None and (not self._finished or feed.has_more()):
            return feed.next(self._next_batch_result, self._mark_yielded)
        if self._finished:
            raise StopIteration
        result = self._next_batch_result()
        self._mark_yielded(result)
        data = result.data
        if isinstance(data, Failure):
            data.reraise()
        if self._device is not None:
            data = self._to_device(data)
        return data

    def _next_batch_result(self) -> Result:
        """The next result that carries a batch (or a worker's failure), not yet marked as yielded."""
        if self._finished:
            raise StopIteration
        while True:
            result = self._next_result()
            if isinstance(result, Exhausted):
                self.exhausted_seen.add(result.worker)
                continue
            if self.discard:
                self.discard -= 1
                continue
            if result.data is EMPTY:  # every sample of the batch was skipped (on_error="skip")
                self._mark_yielded(result)
                continue
            return result

    def _next_result(self) -> Any:
        if self._num_workers == 0:
            return self._next_in_thread()
        try:
            result = next(self._it)
        except StopIteration:
            self._end_epoch()
            raise
        except TimeoutError:
            self.shutdown()
            raise RuntimeError(f"DataLoader timed out after {self._timeout} seconds") from None
        except PipelineFailure as e:  # the sampler raised
            self.shutdown()
            if e.__cause__ is not None:
                raise e.__cause__ from None
            raise
        except BaseException:
            self.shutdown()
            raise
        if isinstance(result, Fatal):
            self.shutdown()
            result.wrapper.reraise()
        if self._bound:
            self._source_ref.source.received(result.worker)
        return result

    def _next_in_thread(self) -> Any:
        fetch = self._fetch
        if self._is_iterable:
            if fetch.iter_workers[0].ended:
                self._end_epoch()
                raise StopIteration
            result = fetch.run(Request(self.num_yielded, None, 0))
            if isinstance(result, Exhausted):
                self._end_epoch()
                raise StopIteration
            return result
        try:
            request = next(self._requests)
        except StopIteration:
            self._end_epoch()
            raise
        try:
            return fetch.run(request)
        except Exception as e:
            self._mark_yielded(Result(request.seq, None))
            e.add_note(f"(raised by DataLoader while loading {describe_indices(request.indices)})")
            raise

    def _mark_yielded(self, result: Result) -> None:
        self.num_yielded += 1
        if self._is_iterable:
            self.last_worker = result.worker
            if result.state is not None:
                self.iter_states[result.worker] = result.state
        else:
            self._yielded_seqs.add(result.seq)
            while self._prefix in self._yielded_seqs:
                self._yielded_seqs.discard(self._prefix)
                self._prefix += 1
        if self._is_iterable and self._len_called is not None and self.num_yielded > self._len_called:
            dataset = self._fetch.main_dataset if self._fetch is not None else ""
            msg = (
                f"Length of IterableDataset {dataset} was reported to be "
                f"{self._len_called}(when accessing len(dataloader)), but {self.num_yielded} samples have been "
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
        """A device other than CUDA (CUDA batches go through the DeviceFeed)."""
        from torch.utils._pytree import tree_map

        dev = self._device
        return tree_map(lambda t: t.to(dev) if isinstance(t, torch.Tensor) else t, data)

    # -- state -------------------------------------------------------------------------------------
    def state(self) -> LoaderState:
        """The running epoch's position."""
        return LoaderState(
            epoch=self._epoch, finished=False, batch_size=self._identity.batch_size,
            dataset_len=self._identity.dataset_len, sampler_type=self._identity.sampler_type,
            rng=self._rng_at_start, drew_base_seed=self._drew_base_seed, base_seed=self._base_seed,
            num_yielded=self.num_yielded, prefix=self._prefix, yielded_seqs=sorted(self._yielded_seqs),
            iter_states=dict(self.iter_states), exhausted=sorted(self.exhausted_seen), last_worker=self.last_worker,
        )

    def persistent_base_seed(self) -> int | None:
        return self._base_seed if self._persistent else None

    def __getstate__(self) -> None:
        raise_not_copyable(self)

    # -- shutdown ----------------------------------------------------------------------------------
    def _end_epoch(self, wait: bool = True) -> None:
        """Ends the current epoch (threads stay with persistent workers). Never waits with ``wait=False``."""
        self._finished = True
        fetch, self._fetch = getattr(self, "_fetch", None), None
        if fetch is not None:
            fetch.stop()
        it, self._it = getattr(self, "_it", None), None
        pipeline = getattr(self, "_pipeline", None)
        if it is not None:
            if pipeline is not None:
                pipeline.stop(wait=wait)
            it.close()
        if not getattr(self, "_persistent", False):
            self._close_pipeline(wait)

    def _close_pipeline(self, wait: bool = True) -> None:
        pipeline, self._pipeline = getattr(self, "_pipeline", None), None
        if pipeline is not None:
            pipeline.close(wait=wait)
        pool, self._remainder = getattr(self, "_remainder", None), None
        if pool is not None:  # after the threads: none of them waits for a batch of the pool any more
            pool.close(wait=wait)

    def shutdown(self, wait: bool = True) -> None:
        self._end_epoch(wait)
        self._close_pipeline(wait)

    def __del__(self) -> None:
        leave_position(self)
        self.shutdown(wait=False)  # may run on any thread: never blocks
