"""``worker_mode="hybrid"``: the per-sample Python remainder of a partly fused dataset in worker processes.

The worker threads decode each batch natively (the fused ``decode_images`` call, no GIL); what the plan leaves
to run per sample in Python (a ``v2.Lambda``, ``v2.ElasticTransform``, a user callable: code that holds the GIL)
runs in a pool of ``num_workers`` processes, one batch per task, over shared memory: the decoded batch is moved
to a shared-memory tensor (torch's multiprocessing reductions send its file descriptor, not its bytes) and the
results come back the same way, stacked into one tensor when they have one shape and dtype (the loader's
``collate`` then returns it without a copy).

Each sample's remainder draws from the global RNGs of the process running it, seeded first from the sample's
own seed (:func:`remainder_seed`: ``(base_seed, epoch, index)`` only), so its random draws do not depend on the
number of workers, the batch, or which process ran it; a resumed epoch gives the same tensors.

The pool starts with the epoch's iterator (forked like torch's worker processes, ``multiprocessing_context``
when given) and is shut down with it: at the end of a non-persistent epoch, when the iterator or the loader is
collected, and at interpreter exit (the iterators' exit hook, then ``concurrent.futures``' own join).
"""

from __future__ import annotations

import dataclasses
import multiprocessing
import random
import weakref
from concurrent.futures import ProcessPoolExecutor
from typing import Any

import torch

from .._seeds import sample_seed, splitmix64
from .._native import leaves

__all__ = ["RemainderPool", "remainder_seed", "run_remainder"]

_MASK64 = (1 << 64) - 1
_SALT = 0x52454D41494E4445  # keeps the remainder's stream apart from the fused op's draws of the same sample
_REGISTRY: dict[int, tuple[Any, str]] = {}  # in a pool process: the remainders known when it was forked


def remainder_seed(base_seed: int, epoch: int, index: int) -> int:
    """The seed (in [0, 2**63)) of sample ``index``'s remainder: depends only on ``(base_seed, epoch, index)``."""
    return splitmix64(sample_seed(base_seed, epoch, index) ^ _SALT) >> 1


def _seed_globals(seed: int) -> None:
    torch.manual_seed(seed & _MASK64)
    random.seed(seed)
    try:
        import numpy as np

        np.random.seed(seed & 0xFFFFFFFF)
    except ImportError:  # pragma: no cover - numpy is optional
        pass


def run_remainder(fn: Any, rest_input: str, batch: torch.Tensor, seeds: list[int], shared: bool = False) -> Any:
    """``[fn(sample) for sample in batch]`` with the global RNGs seeded from each sample's seed first (rows as
    PIL images for ``rest_input="pil"``); one stacked Tensor[N, ...] when every result is a tensor of one shape
    and dtype (``shared``: allocated in shared memory, so that sending it to another process copies nothing),
    else the list."""
    from .._pil import to_pil

    out: list[Any] = []
    stacked = None
    for k, (img, seed) in enumerate(zip(batch, seeds)):
        _seed_globals(seed)
        y = fn(to_pil(img) if rest_input == "pil" else img)
        if k == 0 and isinstance(y, torch.Tensor) and y.device.type == "cpu" and not y.requires_grad:
            stacked = torch.empty((len(seeds), *y.shape), dtype=y.dtype)
            if shared:
                stacked.share_memory_()
        if stacked is not None and isinstance(y, torch.Tensor) and y.shape == stacked.shape[1:] \
                and y.dtype == stacked.dtype and y.device.type == "cpu":
            stacked[k] = y
            out.append(None)
            continue
        if stacked is not None:  # results of different shapes, types: the list, from the rows stacked so far
            out = [stacked[i].clone() for i in range(k)]
            stacked = None
        out.append(y)
    return out if stacked is None else stacked


def _init_process(registry: dict[int, tuple[Any, str]]) -> None:
    torch.set_num_threads(1)  # as torch's worker processes: one intra-op thread each
    _REGISTRY.update(registry)


def _task(key: int, fn: Any, rest_input: str, batch: torch.Tensor, seeds: list[int]) -> Any:
    if fn is None:
        fn, rest_input = _REGISTRY[key]
    return run_remainder(fn, rest_input, batch, seeds, shared=True)


def _ready() -> None:
    return None


def _remainders(dataset: Any, converter: Any = None) -> dict[int, tuple[Any, str]]:
    """The per-sample remainders of the fused datasets in ``dataset`` and of the native views ``converter``
    makes of its datasets (keyed by ``id`` of their plan)."""
    out = {}
    for d in leaves(dataset) or []:
        view = converter.view(d) if converter is not None else None
        plan = getattr(view if view is not None else d, "plan", None)
        if plan is not None and getattr(plan, "per_sample", None) is not None:
            out[id(plan)] = (plan.per_sample, plan.rest_input)
    return out


class RemainderPool:
    """``num_workers`` processes that run fused datasets' per-sample remainders for the worker threads.

    The remainders of ``dataset`` are inherited by the processes when they are forked (nothing is pickled, so
    a ``lambda`` works, as in torch's forked workers); any other remainder, and every one with a ``spawn`` or
    ``forkserver`` context, is pickled with each batch.
    """

    def __init__(self, num_workers: int, dataset: Any, mp_context: Any = None, converter: Any = None) -> None:
        ctx = mp_context if mp_context is not None else multiprocessing.get_context()
        self.num_workers = num_workers
        self._forked = ctx.get_start_method() == "fork"
        registry = _remainders(dataset, converter) if self._forked else {}
        self._known = set(registry)
        self._pickled: set[int] = set()
        self._start_method = ctx.get_start_method()
        self._executor = ProcessPoolExecutor(max_workers=num_workers, mp_context=ctx, initializer=_init_process,
                                             initargs=(registry,))
        self._finalizer = weakref.finalize(self, self._executor.shutdown, wait=False, cancel_futures=True)
        self._executor.submit(_ready)  # starts the processes now, from this thread (fork: all of them at once)

    def pids(self) -> list[int]:
        """The pool processes' ids."""
        return [p.pid for p in list((self._executor._processes or {}).values())]

    def run(self, plan: Any, datas: list, seeds: torch.Tensor | None, *, base_seed: int, epoch: int,
            indices: list[int], max_pixels: int | None) -> Any:
        """``plan(datas, seeds)``: its native part here, its per-sample remainder in a pool process (one stacked
        tensor, or the list of results), sample ``indices[k]``'s seeded from :func:`remainder_seed` of
        ``(base_seed, epoch, indices[k])``.

        Raises:
            TypeError: the remainder must be pickled (not inherited by forked processes) and cannot be.
            whatever the plan's op or the remainder raises (the remainder's exception with its type, the pool
            process's traceback as its cause); ``concurrent.futures.process.BrokenProcessPool`` when a pool
            process died.
        """
        head = _head(plan)
        batch = head(datas, seeds, max_pixels=max_pixels)
        batch.share_memory_()  # one copy into shared memory; the task carries its file descriptor
        key = id(plan)
        fn = None if key in self._known else plan.per_sample
        if fn is not None and key not in self._pickled:
            self._check_picklable(fn)
            self._pickled.add(key)
        remainder_seeds = [remainder_seed(base_seed, epoch, i) for i in indices]
        future = self._executor.submit(_task, key, fn, plan.rest_input, batch, remainder_seeds)
        return future.result()

    def _check_picklable(self, fn: Any) -> None:
        from multiprocessing.reduction import ForkingPickler

        try:
            ForkingPickler.dumps(fn)
        except Exception as e:  # noqa: BLE001 -- pickle raises several types
            why = ("the processes were started by " + repr(self._start_method) if not self._forked
                   else "it was not part of the dataset when the processes were forked")
            raise TypeError(f"worker_mode='hybrid': the per-sample remainder {fn!r:.200} must be pickled to reach "
                            f"the worker processes ({why}), and it cannot be: {type(e).__name__}: {e}. Use a "
                            "'fork' multiprocessing_context, a picklable remainder (no lambda), or "
                            "worker_mode='thread'") from e

    def close(self, wait: bool = True) -> None:
        """Ends the processes (queued batches are dropped; ``wait``: until they have exited)."""
        self._finalizer.detach()
        self._executor.shutdown(wait=wait, cancel_futures=True)


# The native part of a plan (its per-sample remainder taken out), per plan, keyed by id(), dropped with the plan.
_HEADS: dict[int, tuple[weakref.ref, Any]] = {}


def _head(plan: Any) -> Any:
    entry = _HEADS.get(id(plan))
    if entry is None or entry[0]() is not plan:
        key = id(plan)
        entry = _HEADS[key] = (weakref.ref(plan, lambda _r, k=key: _HEADS.pop(k, None)),
                               dataclasses.replace(plan, rest=None, per_sample=None))
    return entry[1]
