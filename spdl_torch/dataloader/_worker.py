"""Worker threads that look like torch's worker processes to the code they run.

A worker process of ``torch.utils.data.DataLoader`` has its own dataset object, its own global RNGs seeded with
``base_seed + id``, and a ``torch.utils.data.get_worker_info()`` that answers. Our workers are threads of one
process, so this module recreates what can be recreated:

* worker info: :class:`WorkerInfo`, kept in a thread-local; :func:`install_torch_hooks` makes torch's own
  ``torch.utils.data.get_worker_info()`` and ``torch.initial_seed()`` read it (on our threads only);
* a dataset per worker: a shallow ``copy.copy`` (members such as a big list stay shared, nothing is pickled);
* the global RNGs (``torch``, ``random``, ``numpy.random``) are process-wide: in the default ``"shared"`` mode
  ``worker_init_fn`` runs with the consumer's RNG state saved and restored (a warning says so when it changed
  it); ``"per_worker"`` gives each worker its own global RNG state, swapped in around each of its fetches under
  one process-wide lock, so draws repeat exactly as with torch's worker processes, at the cost of running
  fetches one at a time.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import os
import random
import sys
import threading
import types
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import torch
from torch._utils import ExceptionWrapper
from torch.utils.data._utils.worker import _RNG, _generate_state
from torch.utils.data._utils.worker import WorkerInfo as TorchWorkerInfo

from .._context import LoaderContext, context_scope
from .._seeds import sample_seed

__all__ = ["WorkerInfo", "WorkerSet", "fetch_scope", "get_worker_info"]

_MASK64 = (1 << 64) - 1
_local = threading.local()
WORKER_RNG_MODES = ("shared", "per_worker")
# Held while a "per_worker" fetch has its worker's state in the global RNGs, and while worker_init_fn runs.
_GLOBAL_RNG_LOCK = threading.RLock()
# Seconds a pool thread waits for the others' worker_init_fn before it starts fetching anyway (a hung init_fn
# already hangs the consumer in wait_initialized).
_INIT_BARRIER_TIMEOUT = 60.0


@dataclasses.dataclass(frozen=True, slots=True)
class WorkerInfo(TorchWorkerInfo):
    """torch's ``WorkerInfo`` (what :func:`torch.utils.data.get_worker_info` returns) of a
    :class:`~spdl_torch.DataLoader` worker: a thread, or with ``worker_mode="process"`` a worker process.

    Attributes (besides torch's ``id``, ``num_workers``, ``seed = base_seed + id``, ``dataset`` -- this worker's
    own shallow copy of the loader's dataset, unless ``dataset_per_worker=False`` -- and
    ``worker_method="thread"``):
        rng: per-worker generators seeded with ``seed``, each made on first use: ``rng.random_generator``
            (``random.Random``), ``rng.torch_generator`` (``torch.Generator``), ``rng.numpy_generator``
            (``numpy.random.Generator``, or ``None`` while numpy is not imported).
        base_seed: drawn from the loader's ``generator`` when an epoch starts (once for
            ``persistent_workers=True``), as torch does.
        epoch: the loader's epoch counter (0 for its first ``iter()``).
    """

    base_seed: int = 0
    epoch: int = 0

    def sample_seed(self, index: int) -> int:
        """Seed for sample ``index`` of this epoch: depends only on ``(base_seed, epoch, index)``."""
        return sample_seed(self.base_seed, self.epoch, index)

    def sample_generator(self, index: int) -> torch.Generator:
        """A new ``torch.Generator`` seeded with :meth:`sample_seed`: random augmentation of sample ``index``
        drawn from it is the same for any number of threads and after a resume."""
        return torch.Generator().manual_seed(self.sample_seed(index))


def get_worker_info() -> WorkerInfo | None:
    """Information about the current :class:`~spdl_torch.DataLoader` worker thread.

    Returns:
        ``None`` outside a worker (the main thread, any other thread, or when ``num_workers=0``), like
        :func:`torch.utils.data.get_worker_info` in the main process; inside a worker thread (including in
        ``worker_init_fn`` and in ``iter(dataset)``) its :class:`WorkerInfo`; in a worker process of
        ``worker_mode="process"`` a :class:`WorkerInfo` with ``worker_method="multiprocessing"`` and the
        ``epoch`` the processes started in.
        ``torch.utils.data.get_worker_info()`` returns the same object on our threads.
    """
    info = getattr(_local, "worker_info", None)
    shared = getattr(_local, "shared_epoch", None)
    if shared is not None and info is not None and info.epoch != shared.value:  # a persistent worker process
        info = _local.worker_info = dataclasses.replace(info, epoch=shared.value)
    return info


def set_worker_info(info: WorkerInfo | None, shared_epoch: Any = None) -> None:
    """Sets what :func:`get_worker_info` returns on the calling thread (a worker process's main thread);
    ``shared_epoch`` (a shared ``multiprocessing.Value``): where the loader publishes each new epoch to its
    persistent worker processes (the info's ``epoch`` follows it)."""
    _local.worker_info, _local.shared_epoch = info, shared_epoch


@contextlib.contextmanager
def fetch_scope(info: WorkerInfo | None, context: LoaderContext) -> Iterator[None]:
    """Sets the calling thread's worker info and loader context for one fetch, then restores them."""
    prev = getattr(_local, "worker_info", None)
    _local.worker_info = info
    try:
        with context_scope(context):
            yield
    finally:
        _local.worker_info = prev


class LazyRNG(_RNG):
    """torch's per-worker generators (``_RNG``), each made on its first use: ``random_generator``
    (``random.Random(seed)``), ``torch_generator`` (``torch.Generator`` seeded with ``seed``), ``numpy_generator``
    (``numpy.random.default_rng(seed)``, ``None`` while numpy is not imported). A worker process that never draws
    from them pays nothing for them (``default_rng`` alone costs ~1 ms and ~0.5 MB of copied pages per worker)."""

    __slots__ = ("_seed",)
    _lock = threading.Lock()

    def __init__(self, seed: int) -> None:  # noqa: D107 -- the fields come later, one by one
        object.__setattr__(self, "_seed", seed)

    def __getattr__(self, name: str) -> Any:  # only for a field not made yet (its slot is empty)
        makers = {"random_generator": lambda s: random.Random(s),
                  "torch_generator": lambda s: torch.Generator().manual_seed(s & _MASK64),
                  "numpy_generator": lambda s: np.random.default_rng(s) if (np := sys.modules.get("numpy")) else None}
        if name not in makers:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        with LazyRNG._lock:  # one generator per field even if two threads ask at once
            try:
                return object.__getattribute__(self, name)
            except AttributeError:
                value = makers[name](self._seed)
                if value is not None or name != "numpy_generator":
                    object.__setattr__(self, name, value)
                return value

    def __reduce__(self) -> tuple:  # the generators made so far travel with their state
        made = {}
        for name in ("random_generator", "torch_generator", "numpy_generator"):
            try:
                made[name] = object.__getattribute__(self, name)
            except AttributeError:
                pass
        return LazyRNG, (self._seed,), made

    def __setstate__(self, made: dict[str, Any]) -> None:
        for name, value in made.items():
            object.__setattr__(self, name, value)


def make_thread_rng(seed: int) -> LazyRNG:
    """A worker's generators seeded with ``seed`` (made on first use)."""
    return LazyRNG(seed)


# -- torch's own worker API on our threads ----------------------------------------------------------------

# Bodies swapped into torch's functions (their names resolve in torch's module globals, where
# install_torch_hooks puts `_spdl_torch_local`): torch's own state first, so a real worker process is unaffected.
def _get_worker_info_body():  # pragma: no cover - runs as torch.utils.data._utils.worker.get_worker_info
    if _worker_info is not None:  # noqa: F821
        return _worker_info  # noqa: F821
    info = getattr(_spdl_torch_local, "worker_info", None)  # noqa: F821
    if info is not None and _spdl_torch_caller_module() == "torch.utils.data._utils.collate":  # noqa: F821
        return None  # default_collate would stack into shared memory, which only a worker process needs
    return info


def _caller_module() -> str:
    """The module of the function that called the hooked ``get_worker_info``."""
    return sys._getframe(2).f_globals.get("__name__", "")


def _initial_seed_body():  # pragma: no cover - runs as torch.random.initial_seed
    info = getattr(_spdl_torch_local, "worker_info", None)  # noqa: F821
    if info is not None and info.worker_method == "thread" and not getattr(_spdl_torch_local, "rng_swapped", False):  # noqa: F821
        return info.seed  # a worker thread (a worker process has its own global RNG: torch's answer holds)
    return default_generator.initial_seed()  # noqa: F821


_hooks_installed = False


def install_torch_hooks() -> None:
    """Makes ``torch.utils.data.get_worker_info()`` return the calling worker thread's info and
    ``torch.initial_seed()`` its ``seed`` (``base_seed + id``, as in a worker process), on our threads only;
    elsewhere both behave exactly as before. Replaces the functions' code objects, so every reference to them
    (``from torch.utils.data import get_worker_info`` made earlier included) sees it. Idempotent."""
    global _hooks_installed
    if _hooks_installed:
        return
    import torch.random as torch_random
    import torch.utils.data._utils.worker as torch_worker

    for fn, body in ((torch_worker.get_worker_info, _get_worker_info_body), (torch_random.initial_seed, _initial_seed_body)):
        if fn.__code__.co_freevars or fn.__code__.co_argcount:  # pragma: no cover - a torch we do not know
            warnings.warn(f"spdl_torch: cannot hook {fn.__module__}.{fn.__name__}; it answers as in the main process")
            continue
        fn.__globals__["_spdl_torch_local"] = _local
        fn.__globals__["_spdl_torch_caller_module"] = _caller_module
        fn.__code__ = body.__code__.replace(co_name=fn.__code__.co_name, co_qualname=fn.__code__.co_qualname)
    _hooks_installed = True


# -- global RNG state ------------------------------------------------------------------------------------

def capture_global_rngs() -> tuple:
    """The process' global RNG states: torch's CPU generator, ``random``, ``numpy.random`` (if imported)."""
    np = sys.modules.get("numpy")
    return torch.get_rng_state(), random.getstate(), np.random.get_state() if np is not None else None


def restore_global_rngs(state: tuple) -> None:
    torch_state, random_state, np_state = state
    torch.set_rng_state(torch_state)
    random.setstate(random_state)
    np = sys.modules.get("numpy")
    if np is not None and np_state is not None:
        np.random.set_state(np_state)


def _same_rngs(a: tuple, b: tuple) -> bool:
    if not torch.equal(a[0], b[0]) or a[1] != b[1]:
        return False
    if a[2] is None or b[2] is None:
        return a[2] is b[2]
    return a[2][0] == b[2][0] and all(
        bool((x == y).all()) if hasattr(x, "shape") else x == y for x, y in zip(a[2][1:], b[2][1:]))


def seed_globals_like_torch(base_seed: int, worker_id: int) -> None:
    """Seeds the global RNGs as torch seeds those of worker process ``worker_id``."""
    seed = base_seed + worker_id
    random.seed(seed)
    torch.manual_seed(seed)
    try:
        import numpy as np
    except ImportError:  # pragma: no cover
        return
    np.random.seed(_generate_state(base_seed, worker_id))


# -- the workers of one loader ---------------------------------------------------------------------------

def copy_dataset(dataset: Any) -> Any:
    """A shallow copy of ``dataset`` for one worker (``copy.copy``: its own attributes, shared members).

    Raises:
        TypeError: the dataset cannot be copied (pass ``dataset_per_worker=False`` to share it).
    """
    try:
        return copy.copy(dataset)
    except Exception as e:
        raise TypeError(
            f"spdl_torch.DataLoader: cannot give each worker its own copy of {type(dataset).__name__} "
            f"({type(e).__name__}: {e}); pass dataset_per_worker=False to share one object between the threads"
        ) from e


class WorkerThread:
    """One worker thread seen as torch's iterator's worker processes are: ``join(timeout)``, ``is_alive()``,
    ``exitcode`` (``None`` while it runs, ``0`` once it ended), ``pid`` (this process), ``name``."""

    def __init__(self, worker_id: int, thread: threading.Thread | None) -> None:
        self.worker_id, self._thread = worker_id, thread

    @property
    def name(self) -> str:
        return "" if self._thread is None else self._thread.name

    @property
    def pid(self) -> int:
        return os.getpid()

    def is_alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def join(self, timeout: float | None = None) -> None:
        if self._thread is not None:
            self._thread.join(timeout)

    @property
    def exitcode(self) -> int | None:
        return None if self.is_alive() else 0

    def __repr__(self) -> str:
        return f"WorkerThread(id={self.worker_id}, name={self.name!r}, alive={self.is_alive()})"


class WorkerSet:
    """Per-worker state of one pipeline run (one epoch, or every epoch with ``persistent_workers``): worker info,
    dataset copies, RNGs and the result of ``worker_init_fn``. Worker ``k`` is pool thread ``k``."""

    def __init__(self, num_workers: int, dataset: Any, base_seed: int, init_fn: Callable | None,
                 dataset_per_worker: bool, worker_rng: str) -> None:
        self.num_workers = num_workers
        self.base_seed = base_seed
        self.worker_rng = worker_rng
        if worker_rng == "per_worker":
            with contextlib.suppress(ImportError):  # seeded per worker as torch does: capture it from the start
                import numpy  # noqa: F401
        self.datasets = [copy_dataset(dataset) if dataset_per_worker else dataset for _ in range(num_workers)]
        # a worker_init_fn that is a method of the dataset runs on the worker's copy (as in a forked worker,
        # where the method's dataset and the worker's dataset are one object)
        self._init_fns = [
            types.MethodType(init_fn.__func__, ds) if isinstance(init_fn, types.MethodType) and init_fn.__self__ is dataset
            else init_fn for ds in self.datasets]
        self.init_failures: list[ExceptionWrapper | None] = [None] * num_workers
        self.rng_states: list[tuple | None] = [None] * num_workers  # "per_worker": each worker's global RNGs
        self._rngs: dict[int, _RNG] = {}
        self._lock = threading.Lock()
        self._initialized = threading.Semaphore(0)
        self._expected_inits = 0
        self._all_initialized = threading.Barrier(1)
        self.changed_global_rng = False
        self._threads: list[threading.Thread | None] = [None] * num_workers

    def __len__(self) -> int:
        return self.num_workers

    def __iter__(self) -> Iterator[WorkerThread]:
        """The workers as :class:`WorkerThread` handles (``join``, ``is_alive``, ``exitcode``), like the worker
        processes that torch's iterator lists in ``_workers``."""
        return iter([WorkerThread(k, t) for k, t in enumerate(self._threads)])

    def reseed(self, base_seed: int) -> None:
        """A resumed persistent loader: the saved ``base_seed`` replaces the drawn one."""
        with self._lock:
            self.base_seed = base_seed
            self._rngs.clear()

    def rng(self, worker_id: int) -> _RNG:
        with self._lock:
            rng = self._rngs.get(worker_id)
            if rng is None:
                rng = self._rngs[worker_id] = make_thread_rng(self.base_seed + worker_id)
            return rng

    def info(self, worker_id: int, epoch: int) -> WorkerInfo:
        return WorkerInfo(
            id=worker_id, num_workers=self.num_workers, seed=self.base_seed + worker_id,
            dataset=self.datasets[worker_id], rng=self.rng(worker_id), worker_method="thread",
            base_seed=self.base_seed, epoch=epoch,
        )

    def thread_initializer(self, index: int, epoch: int) -> None:
        """Runs once on pool thread ``index`` before anything else: its worker info, then ``worker_init_fn``."""
        _local.worker_info = self.info(index, epoch)
        self._threads[index] = threading.current_thread()
        all_initialized = self._all_initialized
        try:
            if self._init_fns[index] is None and self.worker_rng != "per_worker":
                return  # nothing that could touch the global RNGs
            with _GLOBAL_RNG_LOCK:  # the consumer waits in iter() meanwhile (wait_initialized)
                consumer = capture_global_rngs()
                if self.worker_rng == "per_worker":
                    seed_globals_like_torch(self.base_seed, index)
                    _local.rng_swapped = True
                try:
                    if self._init_fns[index] is not None:
                        self._init_fns[index](index)
                except BaseException as e:
                    self.init_failures[index] = ExceptionWrapper(
                        exc_info=(type(e), e, e.__traceback__),
                        where=f"in DataLoader worker thread {index} (worker_init_fn)")
                finally:
                    _local.rng_swapped = False
                    if self.worker_rng == "per_worker":
                        self.rng_states[index] = capture_global_rngs()
                    elif not _same_rngs(consumer, capture_global_rngs()):
                        self.changed_global_rng = True
                    restore_global_rngs(consumer)
        finally:
            self._initialized.release()
            # No worker fetches (and draws from the global RNGs) while another one's worker_init_fn runs: its
            # check would take those draws for the function's, and undoing them would repeat them.
            with contextlib.suppress(threading.BrokenBarrierError):
                all_initialized.wait(timeout=_INIT_BARRIER_TIMEOUT)

    def expect_initialization(self, num_threads: int) -> None:
        """A pool of ``num_threads`` threads is being started for these workers (each runs
        :meth:`thread_initializer` once, then waits for the others)."""
        self._expected_inits += num_threads
        self._all_initialized = threading.Barrier(num_threads)

    def wait_initialized(self) -> None:
        """Blocks until every thread started since the last call ran :meth:`thread_initializer` (so the consumer
        draws nothing from the global RNGs while worker_init_fn may touch them)."""
        while self._expected_inits:
            self._initialized.acquire()
            self._expected_inits -= 1
        if self.changed_global_rng:
            self.changed_global_rng = False
            warnings.warn(
                "worker_init_fn changed the global random state (torch, random or numpy.random). "
                "spdl_torch.DataLoader's workers are threads that share this process's global RNGs, so the "
                "change was undone to keep the training loop's random state. Use get_worker_info().rng or "
                "get_worker_info().sample_generator(index) in the dataset, or DataLoader(worker_rng='per_worker') "
                "to give each worker its own global RNG state, as torch's worker processes have.",
                UserWarning, stacklevel=4)

    @contextlib.contextmanager
    def global_rngs_of(self, worker_id: int) -> Iterator[None]:
        """``"per_worker"``: runs the block with worker ``worker_id``'s global RNG state swapped in (one block at
        a time in the process), then keeps the worker's new state and gives the consumer's back."""
        if self.worker_rng != "per_worker":
            yield
            return
        with _GLOBAL_RNG_LOCK:
            consumer = capture_global_rngs()
            restore_global_rngs(self.rng_states[worker_id])
            _local.rng_swapped = True
            try:
                yield
            finally:
                _local.rng_swapped = False
                self.rng_states[worker_id] = capture_global_rngs()
                restore_global_rngs(consumer)
