"""How a loader runs a fused dataset's plan (the loader context's ``run_plan``): the batch allocated pinned, the
per-sample remainder in worker processes (``worker_mode="hybrid"``), and with ``device="cuda"`` the part of the
transform that runs on the GPU after the copy: uint8 batches cross PCIe (a quarter of the bytes of float32) and
``ToDtype(scale=True)`` + ``Normalize`` (fused ones, and the batched ones after the fused prefix) run on the device.

:func:`split_plan` splits a :class:`~spdl_torch.transforms.FusedPlan` into the host plan (uint8, no
normalisation) and a :class:`DeviceFinish`; :func:`run_plan` marks each batch it decodes with its finish
(:func:`mark_finish`) and the device feed's transfer (:class:`spdl_torch.cuda.DeviceTransfer`, ``after_copy=``
:func:`pending_finish`) runs it after the copy."""

from __future__ import annotations

import dataclasses
import weakref
from collections.abc import Callable, Sequence
from typing import Any

import torch

from ..cuda import normalize

__all__ = ["DeviceFinish", "mark_finish", "pending_finish", "run_plan", "split_plan"]

@dataclasses.dataclass(frozen=True)
class DeviceFinish:
    """What runs on the device after the copy of a uint8 batch: the fused conversion (``dtype``, ``mean``,
    ``std``; ``dtype=None``: none) and then ``batched`` (deterministic torchvision transforms of the batch
    that came after the fused prefix, e.g. a ``Normalize``), or ``None``."""

    dtype: torch.dtype | None = None
    mean: tuple[float, ...] | None = None
    std: tuple[float, ...] | None = None
    batched: Callable | None = None
    impl: str = "torch"

    def __call__(self, batch: torch.Tensor) -> torch.Tensor:
        if self.dtype is not None:
            batch = normalize(batch, self.dtype, self.mean, self.std, impl=self.impl)
        if self.batched is not None:
            batch = self.batched(batch)
        return batch


def _movable(batched: Callable | None) -> bool:
    """Whether the plan's batched remainder is only dtype conversions and normalisations (v2), which run on
    the device as they run on the CPU."""
    from torchvision.transforms import v2

    if batched is None:
        return True
    parts = list(getattr(batched, "transforms", [batched]))
    return all(type(t) in (v2.Normalize, v2.ToDtype, v2.ToPureTensor) for t in parts)


def split_plan(plan: Any, impl: str = "torch") -> tuple[Any, DeviceFinish | None]:
    """``(host plan, finish)``: ``plan`` with the fused conversion and normalisation taken out (the op then
    returns uint8) and its batched remainder moved to ``finish``, when that is all that follows the fused
    geometry on the batch; else ``(plan, None)`` (a per-sample remainder, or PIL input: all stays on the host).
    """
    if plan.per_sample is not None or plan.rest_input != "tensor" or not _movable(plan.batched):
        return plan, None
    if plan.augment is not None and plan.augment.eraser is not None:
        return plan, None  # the fused erasing runs on the normalised slot: the normalisation stays in the op
    kw = dict(plan.op_kwargs)
    dtype = kw.pop("dtype", None)
    mean, std = kw.pop("mean", None), kw.pop("std", None)
    if dtype is None and plan.batched is None:
        return plan, None  # uint8 already, nothing to move
    host = dataclasses.replace(plan, op_kwargs=kw, batched=None, rest=None)
    return host, DeviceFinish(dtype=dtype, mean=mean, std=std, batched=plan.batched, impl=impl)


# Batches with a finish still to run, keyed by id() (tensors compare elementwise), dropped with the batch.
_PENDING: dict[int, tuple[weakref.ref, DeviceFinish]] = {}


def mark_finish(batch: torch.Tensor, finish: DeviceFinish) -> None:
    """Marks ``batch`` (a host Tensor[N, ...]) as needing ``finish`` once copied to the device."""
    key = id(batch)
    _PENDING[key] = (weakref.ref(batch, lambda _r, k=key: _PENDING.pop(k, None)), finish)


def pending_finish(t: torch.Tensor) -> DeviceFinish | None:
    """The finish marked on ``t`` (``None``: none, or another tensor that reuses a dead one's id)."""
    entry = _PENDING.get(id(t))
    if entry is None or entry[0]() is not t:
        return None
    return entry[1]


# split_plan's result per plan, keyed by id() (plans are unhashable dataclasses), dropped with the plan.
_SPLITS: dict[int, tuple[weakref.ref, tuple[Any, DeviceFinish | None]]] = {}


def run_plan(plan: Any, datas: Sequence[torch.Tensor], seeds: torch.Tensor | None, *, base_seed: int, epoch: int,
             indices: Sequence[int], max_pixels: int | None, pin_memory: bool = False,
             device: torch.device | None = None, remainder: Any = None) -> Any:
    """Runs a fused plan for a loader (its context's ``run_plan``, with this loader's ``pin_memory``, ``device``
    and ``remainder`` bound): with a remainder pool and a per-sample remainder, the remainder runs in the pool's
    processes, seeded per sample from ``(base_seed, epoch, index)``; with ``pin_memory`` the op allocates the
    batch pinned (when nothing runs after the op on the host); with a CUDA ``device`` the plan's conversion and
    normalisation are split off (:func:`split_plan`) and the uint8 batch is marked with them for the transfer.
    The same values as ``plan(datas, seeds)`` otherwise."""
    if remainder is not None and plan.per_sample is not None:
        return remainder.run(plan, list(datas), seeds, base_seed=base_seed, epoch=epoch, indices=indices,
                             max_pixels=max_pixels)
    finish = None
    if device is not None:
        key = id(plan)
        entry = _SPLITS.get(key)
        if entry is None or entry[0]() is not plan:
            entry = _SPLITS[key] = (weakref.ref(plan, lambda _r, k=key: _SPLITS.pop(k, None)), split_plan(plan))
        plan, finish = entry[1]
    # pinned only when the op's batch is what the loader returns (a remainder makes new tensors, pinned later)
    pin = pin_memory and plan.batched is None and plan.per_sample is None
    images = plan(datas, seeds, pin_memory=pin, max_pixels=max_pixels)
    if finish is not None and isinstance(images, torch.Tensor):
        mark_finish(images, finish)
    return images
