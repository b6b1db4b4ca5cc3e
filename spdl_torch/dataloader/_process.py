"""``worker_mode="process"``: a :class:`~spdl_torch.DataLoader` epoch on torch's own worker processes.

torch's ``_MultiProcessingDataLoaderIter`` does the loading (so every torch semantic holds: pickling, one global
RNG per worker, which worker gets which index, ``worker_init_fn``, timeouts, shutdown). This subclass adds what
spdl_torch's loader keeps in that mode: the epoch counter and ``set_epoch``, a resumable position
(``state_dict``: map-style datasets, ``in_order=True``), and the ``device`` copy.
"""

from __future__ import annotations

import multiprocessing
from typing import Any

import torch
from torch.utils.data.dataloader import _BaseDataLoaderIter, _MultiProcessingDataLoaderIter

from ._device import pin_batch
from ._epoch import start_epoch
from ._iterator import leave_position, raise_not_copyable
from ._state import LoaderState, describe_loader, restore_epoch_rngs
from ._worker import WorkerInfo, make_thread_rng, set_worker_info

__all__ = ["ProcessIter", "ProcessWorkerInit", "start_process_epoch"]


class ProcessWorkerInit:
    """The ``worker_init_fn`` torch's worker processes run: makes :func:`spdl_torch.get_worker_info`
    answer there too (a :class:`WorkerInfo` from torch's info: ``base_seed = seed - id``, ``rng`` seeded
    with ``seed``, ``epoch`` the loader's, read from ``shared_epoch`` for persistent workers), then calls the
    user's ``worker_init_fn``. Picklable when that is (spawn / forkserver contexts)."""

    def __init__(self, fn: Any, shared_epoch: Any) -> None:
        self.fn, self.shared_epoch = fn, shared_epoch

    def __call__(self, worker_id: int) -> None:
        info = torch.utils.data.get_worker_info()
        set_worker_info(WorkerInfo(
            id=info.id, num_workers=info.num_workers, seed=info.seed, dataset=info.dataset,
            rng=make_thread_rng(info.seed), worker_method=info.worker_method, base_seed=info.seed - info.id,
            epoch=self.shared_epoch.value), self.shared_epoch)
        if self.fn is not None:
            self.fn(worker_id)


class _SeededBase(_BaseDataLoaderIter):
    """torch's base iterator, then the resumed ``base_seed`` (before torch starts the workers with it)."""

    def __init__(self, loader: Any) -> None:
        super().__init__(loader)
        if self._forced_base_seed is not None:
            self._base_seed = self._forced_base_seed
            if not self._drew_base_seed:  # the saved epoch did not draw it (persistent workers): undo the draw
                restore_epoch_rngs(loader, self._rng_at_start)
        if self._device is not None and self._device.type == "cuda" and torch.cuda.is_available():
            self._pin_memory, self._pin_memory_device = True, "cuda"  # torch's pin-memory thread pins the batches


class ProcessIter(_MultiProcessingDataLoaderIter, _SeededBase):
    """One epoch (every epoch with ``persistent_workers``) of a loader in process mode."""

    def __init__(self, loader: Any, epoch: int, rng: dict[str, Any], forced_base_seed: int | None,
                 drew_base_seed: bool, skip: int) -> None:
        self._device = loader.device
        self._is_iterable = loader._is_iterable
        self._in_order = loader.in_order
        self._identity = describe_loader(loader)
        self._shared_epoch = (loader.multiprocessing_context or multiprocessing).Value("q", epoch, lock=False)
        self._set_epoch_state(epoch, rng, forced_base_seed, drew_base_seed, skip)
        super().__init__(loader)

    @property
    def _worker_init_fn(self) -> ProcessWorkerInit:
        return self.__dict__["_process_init_fn"]

    @_worker_init_fn.setter
    def _worker_init_fn(self, fn: Any) -> None:  # set by torch's __init__ from loader.worker_init_fn
        self.__dict__["_process_init_fn"] = ProcessWorkerInit(fn, self._shared_epoch)

    def _set_epoch_state(self, epoch: int, rng: dict[str, Any], forced_base_seed: int | None,
                         drew_base_seed: bool, skip: int) -> None:
        self._epoch, self._rng_at_start = epoch, rng
        self._forced_base_seed, self._drew_base_seed = forced_base_seed, drew_base_seed
        self._skip = self._resumed = skip  # batches already returned before the saved position
        self._finished = False

    def next_epoch(self, loader: Any, epoch: int, rng: dict[str, Any]) -> None:
        """The next epoch on the same (persistent) workers: torch's ``_reset``."""
        self._set_epoch_state(epoch, rng, None, False, 0)
        self._shared_epoch.value = epoch  # before the new epoch's indices reach the workers
        self._reset(loader)

    def _reset(self, loader: Any, first_iter: bool = False) -> None:
        super()._reset(loader, first_iter)
        self._num_yielded, self._resumed = self._resumed, 0

    def _next_index(self) -> Any:
        while self._skip:  # fast-forward of a resumed epoch: indices only, nothing is loaded for them
            self._skip -= 1
            next(self._sampler_iter)
        return next(self._sampler_iter)

    def __next__(self) -> Any:
        try:
            data = super().__next__()
        except StopIteration:
            self._finished = True
            raise
        except BaseException:
            self._finished = self._finished or self._shutdown
            raise
        dev = self._device
        if dev is None:
            return data
        from torch.utils._pytree import tree_map

        if dev.type == "cuda":
            data = pin_batch(data)
        return tree_map(lambda t: t.to(dev, non_blocking=True) if isinstance(t, torch.Tensor) else t, data)

    # -- the loader's state API ----------------------------------------------------------------------
    def active(self) -> bool:
        return not self._finished

    def __del__(self) -> None:
        leave_position(self)
        super().__del__()

    def state(self) -> LoaderState:
        """The running epoch's position.

        Raises:
            RuntimeError: an ``IterableDataset``, or ``in_order=False`` (torch's workers do not say which
                positions were returned).
        """
        if self._is_iterable or not self._in_order:
            what = "an IterableDataset" if self._is_iterable else "in_order=False"
            raise RuntimeError(
                f"spdl_torch.DataLoader: state_dict() in the middle of an epoch of {what} needs the workers' "
                "positions, which torch's worker processes do not report; pass worker_mode='thread' to save it")
        return LoaderState(
            epoch=self._epoch, finished=False, batch_size=self._identity.batch_size,
            dataset_len=self._identity.dataset_len, sampler_type=self._identity.sampler_type,
            rng=self._rng_at_start, drew_base_seed=self._drew_base_seed, base_seed=self._base_seed,
            num_yielded=self._num_yielded, prefix=self._num_yielded)

    def persistent_base_seed(self) -> int | None:
        return self._base_seed if self._persistent_workers else None

    def shutdown(self, wait: bool = True) -> None:
        self._shutdown_workers()

    def __getstate__(self) -> None:
        raise_not_copyable(self)


def start_process_epoch(loader: Any, resume: LoaderState | None) -> ProcessIter:
    """``iter(loader)`` in process mode: counts the epoch, calls the dataset's ``set_epoch`` (before the workers
    start, so they see it; persistent workers keep their copy, as in torch), then starts or resets torch's
    iterator, resumed at ``resume``'s position if given."""
    old = loader._iterator if loader.persistent_workers else None
    start = start_epoch(loader, resume, old is None, loader.persistent_workers)
    start.set_dataset_epoch(loader)  # before the workers start: they copy the dataset with it
    try:
        if old is not None and start.resume is None and start.forced_base_seed is None:
            old.next_epoch(loader, start.epoch, start.rng)
            return old
        if old is not None:
            old.shutdown()
        it = ProcessIter(loader, start.epoch, start.rng, start.forced_base_seed, start.draw_base_seed,
                         0 if start.resume is None else start.resume.num_yielded)
        if loader.persistent_workers:
            loader._iterator = it
        return it
    finally:
        start.restore_user_rng()
