"""``spdl_torch.DataLoader``: a subclass of :class:`torch.utils.data.DataLoader` whose workers are threads for
native datasets and torch's worker processes for Python-bound ones (``worker_mode``)."""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
import os
import threading
import warnings
import weakref
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

import torch
import torch.utils.data
from torch.utils.data import Sampler
from torch.utils.data.dataloader import _DatasetKind

from .._native import new_converter
from ..datasets import collate as _fused_collate
from ._epoch import dataset_epoch
from ._iterator import DataLoaderIter
from ._mode import describe_mode, resolve_worker_mode
from ._process import ProcessIter, start_process_epoch
from ._state import LoaderState, check_epoch_rngs, describe_loader, stateful_map_dataset
from ._torch import TORCH_DATALOADER
from ._worker import WORKER_RNG_MODES, install_torch_hooks

__all__ = ["DataLoader"]

T_co = TypeVar("T_co", covariant=True)
_warned_mp_context = False
# what a copy or an unpickled loader makes anew, empty: this process's iterators, the reference to the latest one,
# the lock of skipped_samples
_PROCESS_LOCAL = ("_iterator", "_last_iter", "_dropped", "_skipped_lock")


def _check_device(device: Any) -> torch.device | None:
    if device is None:
        return None
    dev = torch.device(device)
    if dev.type == "cpu":
        return None
    if dev.type == "cuda":
        from .._build_info import check_cuda

        try:
            check_cuda(f"device={str(device)!r}", dev)
        except RuntimeError as e:
            raise ValueError(str(e)) from None
    return dev


def _record_own_arguments(loader: Any, ours: dict[str, Any]) -> None:
    """PyTorch Lightning re-creates a loader from the keyword arguments that its wrapper of ``__init__`` recorded
    (``__pl_saved_kwargs``). When our class was defined after Lightning wrapped the ``__init__`` methods (spdl_torch
    imported inside a hook), only torch's ``__init__`` recorded them, without our own: add those that differ from
    their defaults, so that the re-created loader keeps them (``worker_mode="process"`` included)."""
    saved = loader.__dict__.get("__pl_saved_kwargs")
    if not isinstance(saved, dict):
        return
    defaults = {k: p.default for k, p in inspect.signature(DataLoader.__init__).parameters.items()}
    for name, value in ours.items():
        if value is not defaults.get(name) and value != defaults.get(name):
            saved.setdefault(name, value)


def _keep_position_of(loader: Any) -> Callable[[Any, LoaderState], None]:
    """The hook an iterator calls as it is dropped mid-epoch: its position becomes ``loader``'s running state
    (unless a newer iterator started meanwhile). Holds the loader weakly."""
    ref = weakref.ref(loader)

    def keep(it: Any, state: LoaderState) -> None:
        owner = ref()
        if owner is not None and owner._last_iter is not None and owner._last_iter() in (None, it):
            owner._dropped = state

    return keep


class DataLoader(TORCH_DATALOADER[T_co]):
    """Iterate over a dataset in batches: a subclass of :class:`torch.utils.data.DataLoader` with its constructor,
    checks and behaviour, whose ``num_workers`` workers are *threads* of this process for datasets whose samples
    spdl_torch's native ops produce, and torch's own worker processes for any other dataset (``worker_mode``).

    In process mode torch's machinery loads (every torch semantic holds, pickling of the dataset included); what
    follows about threads applies to thread mode. Each worker thread behaves like one of torch's worker processes to the code it runs:
    ``torch.utils.data.get_worker_info()`` returns its info (``id``, ``num_workers``, ``seed = base_seed + id``,
    ``dataset``), ``torch.initial_seed()`` returns its ``seed``, ``info.dataset`` is the worker's own shallow copy
    of the dataset (attributes set on it, e.g. by ``worker_init_fn``, stay with that worker; members such as a big
    list are shared, not copied; the loader's own ``dataset`` is not changed), and worker ``k`` is always the same
    thread. The global RNGs (``torch``, ``random``, ``numpy.random``) are process-wide: see ``worker_rng``.

    Args:
        dataset (Dataset or IterableDataset): map-style (``__getitem__``/``__len__``; ``__getitems__`` fetches a
            whole batch when defined, also through ``Subset`` and ``ConcatDataset``) or iterable-style.
        batch_size (int or None): samples per batch (default ``1``); ``None`` disables automatic batching
            (``collate_fn`` then defaults to ``default_convert``).
        shuffle (bool): reshuffle every epoch with a ``RandomSampler`` drawing from ``generator``.
        sampler (Sampler or Iterable): the indices to load, in order (map-style only).
        batch_sampler (Sampler or Iterable): lists of indices, one per batch. Mutually exclusive with
            ``batch_size``, ``shuffle``, ``sampler`` and ``drop_last``.
        num_workers (int): workers (threads or processes, see ``worker_mode``); ``0`` loads in the calling thread.
        collate_fn (Callable): merges a list of samples into a batch. The default is torch's ``default_collate``,
            except that a batch decoded by one fused call of spdl_torch's datasets
            (:func:`spdl_torch.datasets.collate`) is returned as that batch tensor, without a copy.
        pin_memory (bool): pin the batch's tensors (torch's ``pin_memory``) on the worker thread. Without an
            accelerator it warns like torch and does nothing.
        drop_last (bool): drop the last incomplete batch (for an ``IterableDataset``: of each worker).
        timeout (float): if positive, seconds to wait for a batch before raising
            ``RuntimeError("DataLoader timed out after {timeout} seconds")``; the epoch then ends. With
            ``num_workers=0``, ``iter()`` raises ``AssertionError`` (as torch).
        worker_init_fn (Callable[[int], None]): called once on each worker thread with its id before it loads
            anything (once for the loader's life with ``persistent_workers``); ``iter()`` returns once every
            worker ran it. If it raises, ``next()`` re-raises that error (naming the thread), then the epoch ends.
        multiprocessing_context: validated like torch; used by worker processes, ignored by threads (with a
            one-time warning).
        generator (torch.Generator): RNG of the default ``RandomSampler`` and of the per-epoch ``base_seed``
            (``None``: torch's global RNG, as in torch).
        prefetch_factor (int): batches requested ahead per worker (default ``2`` with workers): at most
            ``prefetch_factor * num_workers`` batches are loaded ahead of the consumer.
        persistent_workers (bool): keep the threads (and their dataset copies, ``worker_init_fn`` state, RNGs
            and ``base_seed``) across epochs.
        pin_memory_device (str): deprecated in torch; warns and is ignored.
        in_order (bool): ``False`` returns batches as they complete: a slow batch, or a slow worker of an
            ``IterableDataset``, holds only its own slots.
        device (str or torch.device, keyword-only, beyond torch): if a CUDA device, batches are pinned (a fused
            batch is allocated pinned by ``decode_images`` itself: no second copy) and copied to it on a dedicated
            CUDA stream (:class:`spdl_torch.cuda.DeviceTransfer`: one event per batch, so the consumer's current
            stream waits for its own batch only; ``record_stream`` for the caching allocator). ``"cpu"`` /
            ``None``: no copy.
        transfer_depth (int, keyword-only, beyond torch): with a CUDA ``device``, batches in flight on the
            device (copied ahead of the consumer, >= 1; default 2).
        device_transforms (bool, keyword-only, beyond torch): with a CUDA ``device`` and a fused dataset
            (``ImageFolder``, ``FileListDataset``), decode uint8 batches on the host and run the fused
            ``ToDtype``/``Normalize`` (and the batched ones after them) on the device after the copy: a quarter
            of the bytes of float32 over PCIe. Default ``True``.
        on_error (str, keyword-only, beyond torch): ``"raise"`` (default, as torch) re-raises a sample's exception
            in the consumer. ``"skip"`` (map-style datasets with automatic batching only): when a batch fails, its
            samples are fetched one by one, the failing ones are dropped with a ``UserWarning`` naming the index
            and the reason, and the batch is collated from the rest (an all-bad batch is skipped). Every good
            sample is still returned exactly once. Dropped samples are listed, across epochs, in
            :attr:`skipped_samples` as ``(index, "ExceptionType: message")``.
        worker_rng (str, keyword-only, beyond torch): ``"shared"`` (default): the workers share the process's
            global RNGs; ``worker_init_fn`` runs with the consumer's global RNG state saved and restored (a
            ``UserWarning`` says so when it changed it), so seeding there cannot re-seed the training loop. Draw
            per-sample randomness from ``get_worker_info().sample_generator(index)`` (the same for any number of
            threads) or ``get_worker_info().rng``. ``"per_worker"``: every worker has its own global RNG state,
            seeded as torch seeds its worker processes (``base_seed + id``; numpy as torch does) and swapped in
            around each of its fetches, and batch ``i`` goes to worker ``i % num_workers``: transforms that draw
            from ``torch.rand``, ``random`` or ``numpy.random`` give exactly what torch's DataLoader gives with the
            same ``generator`` and ``num_workers``. The cost: fetches run one at a time (a process-wide lock), and
            draws that other threads make from the global RNGs while a fetch runs (e.g. the training loop's, on
            the CPU) come from that worker's stream.
        dataset_per_worker (bool, keyword-only, beyond torch): ``True`` (default): each worker has its own
            shallow copy of ``dataset``. ``False``: every worker uses ``dataset`` itself (for datasets that must
            be shared, or cannot be copied; threads only).
        worker_mode (str, keyword-only, beyond torch): where each part of the loading runs. ``"auto"``
            (default), one rule: datasets whose samples spdl_torch's native ops produce run on threads, a
            per-sample Python remainder of their transform included; any other dataset runs in torch's worker
            processes (Python code on threads shares one GIL). A dataset declares native loading with
            ``spdl_native_loading()`` (spdl_torch's datasets: a fully fused transform) and a remainder with
            ``spdl_python_remainder()`` (spdl_torch's image datasets whose transform fuses only partly, e.g. a
            ``v2.Lambda`` or ``v2.ElasticTransform`` after the fused prefix), also through ``Subset`` /
            ``ConcatDataset``; ``on_error="skip"`` and ``dataset_per_worker=False`` make the rule pick threads.
            ``"thread"``: always threads. ``"hybrid"``: threads, and the fused datasets' per-sample remainder in
            ``num_workers`` processes over shared memory, each sample's remainder with the global RNGs seeded
            from the sample's own seed (the same tensors for any number of workers; ``multiprocessing_context``
            is used; a remainder is inherited by forked processes, pickled with spawn); for a remainder whose
            Python work outweighs the native decode on many cores. ``"process"``: always torch's worker
            processes (a ``torch.utils.data.DataLoader`` epoch: ``worker_rng`` does not apply, each process has
            its own global RNGs; ``device`` copies in the consumer; :meth:`state_dict` mid-epoch needs a
            map-style dataset with ``in_order=True``; ``on_error="skip"`` and ``dataset_per_worker=False`` raise
            ``ValueError``). ``num_workers=0`` always loads in the calling thread. ``repr(loader)`` and
            :attr:`resolved_worker_mode` (``"main"``, ``"thread"``, ``"hybrid"`` or ``"process"``) say which
            runs where.
        convert_dataset (bool, keyword-only, beyond torch): ``True`` (default): the datasets users already have
            load natively, also inside ``Subset`` / ``ConcatDataset``: torchvision's ``DatasetFolder`` /
            ``ImageFolder`` / ``ImageNet`` with torchvision's PIL loader (not a subclass overriding
            ``__getitem__``, ``__len__`` or the loader) and a dataset whose class defines ``spdl_source(index)``,
            when their transform fuses (:mod:`spdl_torch.transforms`): their own ``samples`` (or sources),
            transform and ``target_transform`` run through the fused batch op, on threads
            (``worker_mode="auto"``), with the loader's per-sample seeds; the dataset object is not changed and
            is what ``loader.dataset`` and each worker's ``get_worker_info().dataset`` are (see
            docs/dataloader.md, "The datasets users already have"). ``repr(loader)`` says which loads natively
            and what fused, or why not. ``False``: every dataset runs as written.

    Raises:
        ValueError: invalid arguments (torch's own checks and messages), ``device`` names CUDA on a machine
            without CUDA (the message says which: torch without CUDA, no device, an index out of range),
            ``transfer_depth < 1``, ``on_error="skip"`` with an iterable dataset or without automatic batching.
        TypeError: invalid ``multiprocessing_context`` (as torch).

    Iteration re-raises the dataset's / ``collate_fn``'s exception: directly with ``num_workers=0``; from a thread
    with the same type (``RuntimeError`` if it cannot be rebuilt) and the message ``"Caught <Type> in DataLoader
    worker thread <id> while loading sample indices [...]"`` plus the original traceback; the iterator can go on
    with the next batch, as in torch.

    **Epochs** (beyond torch): every ``iter()`` starts the next epoch (0, 1, ...) and calls the dataset's
    ``set_epoch(epoch)``, if it has one, and each worker's copy's, so seeded shuffles and augmentations change
    per epoch without a manual call. A ``dataset.set_epoch(e)`` of the user's since the last epoch start (as
    torch's loop calls it) is respected: that ``iter()`` is epoch ``e``, and the count goes on from there.

    **Resuming** (beyond torch; the contract of torchdata's ``StatefulDataLoader``): :meth:`state_dict`
    describes the position of the latest iterator; :meth:`load_state_dict` makes the next ``iter()`` continue
    from there: the remaining batches, in the same order, with the same ``base_seed`` and epoch. Map-style: the
    RNG states at the start of the epoch are saved, and the sampler is fast-forwarded past the batches already
    returned (no data is loaded for them); a map-style dataset with ``state_dict()`` / ``load_state_dict()`` has
    its state saved with the loader's. An ``IterableDataset`` with them has ``state_dict()`` called on the worker
    thread after each batch (with that worker's info set: key the state by ``get_worker_info().id``), and
    ``load_state_dict()`` before the worker's ``iter()``; one without is fast-forwarded by loading and
    discarding the batches already returned.

    **Copies** (``copy.deepcopy``, ``copy.copy``, ``pickle``): the copy has this loader's arguments, worker mode,
    epoch counter, pending loaded state, ``skipped_samples`` (a copy) and :meth:`state_dict`, and none of its
    iterators, workers (persistent ones included: the copy starts its own, on their ``base_seed``) or locks. Its
    first ``iter()`` gives the rest of a running epoch, else the next epoch. Iterators are not copied
    (``NotImplementedError``, as torch's).
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
        device: str | torch.device | None = None,
        transfer_depth: int = 2,
        device_transforms: bool = True,
        on_error: str = "raise",
        worker_rng: str = "shared",
        dataset_per_worker: bool = True,
        worker_mode: str = "auto",
        convert_dataset: bool = True,
    ) -> None:
        if on_error not in ("raise", "skip"):
            raise ValueError(f"on_error should be 'raise' or 'skip', got {on_error!r}")
        if worker_rng not in WORKER_RNG_MODES:
            raise ValueError(f"worker_rng should be one of {WORKER_RNG_MODES}, got {worker_rng!r}")
        self.device = _check_device(device)
        if isinstance(transfer_depth, bool) or not isinstance(transfer_depth, int) or transfer_depth < 1:
            raise ValueError(f"transfer_depth should be an int >= 1, got {transfer_depth!r}")
        self.transfer_depth = transfer_depth
        self.device_transforms = bool(device_transforms)
        self.on_error = on_error
        self.worker_rng = worker_rng
        self.dataset_per_worker = bool(dataset_per_worker)
        self.worker_mode = worker_mode
        self.convert_dataset = bool(convert_dataset)
        self._converter = new_converter() if self.convert_dataset else None
        self.resolved_worker_mode = resolve_worker_mode(worker_mode, dataset, num_workers, on_error,
                                                        self.dataset_per_worker, self._converter)
        self.skipped_samples: list[tuple[Any, str]] = []
        self._skipped_lock = threading.Lock()
        # by keyword: frameworks that record the arguments of torch's __init__ to re-create the loader with
        # another sampler (Lightning) must not see the sampler as a positional argument
        super().__init__(
            dataset, batch_size=batch_size, shuffle=shuffle, sampler=sampler, batch_sampler=batch_sampler,
            num_workers=num_workers, collate_fn=collate_fn, pin_memory=pin_memory, drop_last=drop_last,
            timeout=timeout, worker_init_fn=worker_init_fn, multiprocessing_context=multiprocessing_context,
            generator=generator, prefetch_factor=prefetch_factor, persistent_workers=persistent_workers,
            pin_memory_device=pin_memory_device, in_order=in_order,
        )
        _record_own_arguments(self, dict(
            device=device, transfer_depth=transfer_depth, device_transforms=device_transforms, on_error=on_error,
            worker_rng=worker_rng, dataset_per_worker=dataset_per_worker, worker_mode=worker_mode,
            convert_dataset=convert_dataset))
        if collate_fn is None and self._auto_collation:
            self.collate_fn = _fused_collate
        if on_error == "skip" and (self._is_iterable or not self._auto_collation):
            raise ValueError(
                "on_error='skip' needs a map-style dataset with automatic batching (batch_size or batch_sampler): "
                "it re-fetches a failed batch's samples one by one"
                + (" (got an IterableDataset)" if self._is_iterable else " (got batch_size=None)"))
        install_torch_hooks()
        self._last_iter: weakref.ref | None = None  # for state_dict()
        self._dropped: LoaderState | None = None  # the latest iterator's position when it was dropped mid-epoch
        self._epoch = -1  # epoch of the latest iterator
        self._dataset_epoch_seen = dataset_epoch(dataset)  # what the dataset held when the loader last set it
        self._resume: LoaderState | None = None  # set by load_state_dict, used by the next iter()

    @property
    def _is_iterable(self) -> bool:
        return self._dataset_kind == _DatasetKind.Iterable

    # -- torch compatibility -----------------------------------------------------------------------
    @property
    def multiprocessing_context(self):
        return TORCH_DATALOADER.multiprocessing_context.fget(self)

    @multiprocessing_context.setter
    def multiprocessing_context(self, multiprocessing_context) -> None:
        global _warned_mp_context
        TORCH_DATALOADER.multiprocessing_context.fset(self, multiprocessing_context)
        uses_processes = self.__dict__.get("resolved_worker_mode") in ("process", "hybrid")
        if multiprocessing_context is not None and not _warned_mp_context and not uses_processes:
            _warned_mp_context = True
            warnings.warn(
                "spdl_torch.DataLoader loads with threads of this process here, not worker processes: "
                "multiprocessing_context is ignored (worker_mode='process' and 'hybrid' use it).",
                UserWarning,
                stacklevel=3,
            )

    @property
    def _on_threads(self) -> bool:
        return self.__dict__.get("resolved_worker_mode") != "process"

    def __repr__(self) -> str:
        head = (f"{type(self).__module__.split('.')[0]}.{type(self).__qualname__}(dataset={type(self.dataset).__name__}, "
                f"batch_size={self.batch_size}, num_workers={self.num_workers}, "
                f"{describe_mode(self.resolved_worker_mode, self.worker_mode, self.num_workers)}")
        converter = self.__dict__.get("_converter")
        lines = converter.describe(self.dataset, self.resolved_worker_mode) if converter is not None else []
        return head + "".join(f",\n  {line}" for line in lines) + ")"

    def check_worker_number_rationality(self) -> None:
        """torch's warning when ``num_workers`` exceeds the CPUs this process may use (threads running native
        code oversubscribe the cores just as processes do)."""
        if not self._on_threads:
            return TORCH_DATALOADER.check_worker_number_rationality(self)
        if not self.num_workers:
            return
        suggest = torch._utils.cpu_count()
        if suggest is None or self.num_workers > suggest:
            cpuset = "" if hasattr(os, "sched_getaffinity") else " (`cpuset` is not taken into account)"
            suggested = (
                f"Our suggested max number of worker in current system is {suggest}{cpuset}, which is smaller "
                "than what this DataLoader is going to create."
                if suggest is not None
                else "DataLoader is not able to compute a suggested max number of worker in current system."
            )
            warnings.warn(
                f"This DataLoader will create {self.num_workers} worker threads in total. {suggested} "
                "Please be aware that excessive worker creation might get DataLoader running slow or even freeze, "
                "lower the worker number to avoid potential slowness/freeze if necessary.",
                stacklevel=2,
            )

    def _get_iterator(self) -> DataLoaderIter | ProcessIter:
        if not self._on_threads:
            self.check_worker_number_rationality()
            return start_process_epoch(self, None)
        return DataLoaderIter(self, None)

    def __iter__(self) -> DataLoaderIter | ProcessIter:
        resume, self._resume = self._resume, None
        self._dropped = None
        if not self._on_threads:
            if self._iterator is None:
                self.check_worker_number_rationality()
            it = start_process_epoch(self, resume)
        elif self.persistent_workers and self.num_workers > 0:
            if self._iterator is None:
                self._iterator = DataLoaderIter(self, resume)
            else:
                self._iterator._reset(self, resume)
            it = self._iterator
        else:
            it = DataLoaderIter(self, resume)
        self._last_iter = weakref.ref(it)
        if it is not self._iterator:  # dropped mid-epoch (a break out of a for loop), it leaves its position here
            it._on_drop = _keep_position_of(self)
        return it

    def __del__(self) -> None:
        it = self.__dict__.get("_iterator")
        if it is not None:
            it.shutdown(wait=False)

    # -- copy and pickle ---------------------------------------------------------------------------
    def __getstate__(self) -> dict[str, Any]:
        """What ``copy.deepcopy``, ``copy.copy`` and ``pickle`` keep: every attribute (the arguments, the worker
        mode and its resolution, the epoch counter, a copy of :attr:`skipped_samples`, a subclass's or a
        framework's own attributes) but what belongs to this process: the iterators (persistent workers' threads
        or processes), the weak reference to the latest one and the lock. The copy holds no iterator and starts
        its own workers; its :meth:`state_dict` is this loader's, and its first ``iter()`` goes on from there (as
        a new loader would after ``load_state_dict(loader.state_dict())``): the rest of a running epoch, else
        the next epoch."""
        state = {k: v for k, v in self.__dict__.items() if k not in _PROCESS_LOCAL}
        with self._skipped_lock:
            state["skipped_samples"] = list(self.skipped_samples)
        state["_resume"] = self._pending_state()
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)  # not through __setattr__: torch's refuses batch_size & co. once initialized
        self.__dict__.update(_iterator=None, _last_iter=None, _dropped=None, _skipped_lock=threading.Lock())
        install_torch_hooks()  # an unpickled loader may be the first of its process

    # -- resumption --------------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """The position of the latest iterator, to resume with :meth:`load_state_dict` (a dict of plain Python
        values and tensors; ``torch.save``-able), also once that iterator was dropped mid-epoch (a ``break`` out
        of a ``for`` loop), as torchdata's ``StatefulDataLoader`` keeps it. Before any iteration and after an
        epoch ended, it describes the start of the next epoch."""
        if self._resume is not None:  # loaded and not iterated yet
            return self._resume.to_dict()
        state = self._running_state() or self._next_epoch_state()
        if stateful_map_dataset(self.dataset):
            state.dataset_state = self.dataset.state_dict()
        return state.to_dict()

    def _running_state(self) -> LoaderState | None:
        """The running epoch's position (the latest iterator's, or the one it left when it was dropped), or
        ``None`` when no epoch is running. RuntimeError: a position torch's workers do not report."""
        it = self._last_iter() if self._last_iter is not None else None
        if it is not None and it.active():
            return it.state()
        return dataclasses.replace(self._dropped) if self._dropped is not None else None

    def _next_epoch_state(self) -> LoaderState:
        """The start of the next epoch, when none is running: the epoch counter, the generator's state and, with
        persistent workers, the ``base_seed`` they keep."""
        state = describe_loader(self)
        state.epoch = self._epoch
        state.generator_state = self.generator.get_state() if self.generator is not None else None
        state.base_seed = self._iterator.persistent_base_seed() if self._iterator is not None else None
        return state

    def _pending_state(self) -> LoaderState | None:
        """Where a copy's first ``iter()`` starts, as this loader's next one would: a state loaded and not
        iterated yet; the running epoch's position (:meth:`state_dict`'s); with persistent workers between
        epochs, the next epoch on their ``base_seed`` (this loader's next epoch reuses it rather than drawing
        one); else ``None``: the next epoch, drawn from the generator as this loader would draw it. A position
        that cannot be saved (process mode: an ``IterableDataset`` or ``in_order=False`` mid-epoch) is left: the
        copy starts the next epoch, as torch's copy does."""
        if self._resume is not None:
            return self._resume
        state = None
        with contextlib.suppress(RuntimeError):  # ProcessIter.state(): a position torch's workers do not report
            state = self._running_state()
        if state is None:
            if self._iterator is None or self._iterator.persistent_base_seed() is None:
                return None
            state = self._next_epoch_state()
        if stateful_map_dataset(self.dataset):
            state.dataset_state = self.dataset.state_dict()
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Makes the next ``iter()`` continue from ``state_dict`` (from :meth:`state_dict` of a loader built with
        the same arguments).

        Raises:
            ValueError: not a state of ``spdl_torch.DataLoader``, or saved by a loader with another batch size,
                dataset length or sampler type, or in the middle of an epoch by a loader with a ``generator``
                where this one has none or the other way round (resuming would skip or repeat samples).
        """
        state = LoaderState.from_dict(state_dict)
        state.check_compatible(describe_loader(self))
        check_epoch_rngs(state, self)
        if state.dataset_state is not None and stateful_map_dataset(self.dataset):
            self.dataset.load_state_dict(state.dataset_state)
        self._resume = state
        self._dropped = None
