"""Worker-thread identity and seeding for :class:`spdl_torch.DataLoader`.

Threads share the process' global RNGs (``random``, ``numpy.random``, ``torch``'s default generator), and
those cannot be made per-thread. So, instead of seeding the globals as torch's worker processes do, each
worker thread gets its own ``random.Random``, ``numpy.random.Generator`` and ``torch.Generator`` seeded with
``base_seed + worker_id`` (in ``WorkerInfo.rng``), and per-sample seeds that depend only on
``(base_seed, epoch, sample index)``: draws from :meth:`ThreadWorkerInfo.sample_generator` are identical
for any number of threads, any completion order, and after :meth:`DataLoader.load_state_dict`.
"""

from __future__ import annotations

import dataclasses
import random
import threading

import torch
from torch.utils.data._utils.worker import _RNG, WorkerInfo

try:
    import numpy as _np
except ImportError:  # pragma: no cover - numpy is optional
    _np = None

__all__ = ["ThreadWorkerInfo", "get_worker_info", "sample_seed"]

_MASK64 = (1 << 64) - 1
_thread_local = threading.local()


def _splitmix64(x: int) -> int:
    x = (x + 0x9E3779B97F4A7C15) & _MASK64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _MASK64
    return x ^ (x >> 31)


def sample_seed(base_seed: int, epoch: int, index: int) -> int:
    """A 63-bit seed that depends only on ``(base_seed, epoch, index)`` (SplitMix64 chain)."""
    h = _splitmix64(base_seed & _MASK64)
    h = _splitmix64(h ^ (epoch & _MASK64))
    h = _splitmix64(h ^ (index & _MASK64))
    return h >> 1


@dataclasses.dataclass(frozen=True, slots=True)
class ThreadWorkerInfo(WorkerInfo):
    """:class:`torch.utils.data._utils.worker.WorkerInfo` of a :class:`~spdl_torch.DataLoader` thread.

    Attributes (besides torch's ``id``, ``num_workers``, ``seed = base_seed + id``, ``dataset`` -- the
    very object given to the loader, shared by all threads, not a copy -- and ``worker_method="thread"``):
        rng: per-thread generators seeded with ``seed``: ``rng.random_generator`` (``random.Random``),
            ``rng.torch_generator`` (``torch.Generator``), ``rng.numpy_generator``
            (``numpy.random.Generator`` or ``None`` without numpy). Which thread loads which batch
            depends on timing, so draws from them are not reproducible run to run; use
            :meth:`sample_generator` for reproducible per-sample augmentation.
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
        """A new ``torch.Generator`` seeded with :meth:`sample_seed` -- use it for random augmentation
        of sample ``index`` to get the same result for any number of threads and after a resume."""
        return torch.Generator().manual_seed(self.sample_seed(index))


def make_thread_rng(seed: int) -> _RNG:
    return _RNG(
        random_generator=random.Random(seed),
        torch_generator=torch.Generator().manual_seed(seed & _MASK64),
        numpy_generator=_np.random.default_rng(seed) if _np is not None else None,
    )


def get_worker_info() -> ThreadWorkerInfo | None:
    """Information about the current :class:`~spdl_torch.DataLoader` worker thread.

    Returns:
        ``None`` outside a worker thread (the main thread, or any thread when ``num_workers=0``),
        like :func:`torch.utils.data.get_worker_info` in the main process. Inside a worker thread
        (including in ``worker_init_fn`` and in ``iter(dataset)`` of an ``IterableDataset``) a
        :class:`ThreadWorkerInfo`.

    Differences from torch's worker processes: ``torch.utils.data.get_worker_info()`` returns
    ``None`` in our threads (it reads a process-global variable); the threads share the global RNGs,
    which are *not* re-seeded per worker -- use ``info.rng`` or ``info.sample_generator(index)``; and
    ``info.dataset`` is the shared dataset, so per-worker changes to it (e.g. sharding an
    ``IterableDataset`` by mutating ``dataset.start``) affect all threads: compute the shard inside
    ``__iter__`` from ``info.id`` instead.
    """
    return getattr(_thread_local, "worker_info", None)


def set_worker_info(info: ThreadWorkerInfo | None) -> ThreadWorkerInfo | None:
    """Sets the calling thread's worker info; returns the previous one."""
    prev = getattr(_thread_local, "worker_info", None)
    _thread_local.worker_info = info
    return prev


def thread_index() -> int | None:
    """Index of the calling pool thread of a DataLoader (set by its thread initializer)."""
    return getattr(_thread_local, "index", None)


def set_thread_index(index: int) -> None:
    _thread_local.index = index
