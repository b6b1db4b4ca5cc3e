"""Where a :class:`~spdl_torch.DataLoader`'s workers run: threads of this process or torch's worker processes.

The rule of ``worker_mode="auto"``: a dataset that declares that its samples are produced by spdl_torch's native
ops (which run without the GIL) loads on threads; any other dataset loads in torch's own worker processes,
whose Python code does not share one GIL. The declaration is a method of the dataset instance,
``spdl_native_loading() -> bool`` (spdl_torch's datasets define it: ``True`` when the transform is fused with no
per-sample Python remainder); ``Subset`` and ``ConcatDataset`` / ``ChainDataset`` of native datasets are native.
Two options exist only on threads and make ``"auto"`` choose them: ``on_error="skip"`` and
``dataset_per_worker=False``.
"""

from __future__ import annotations

from typing import Any

from torch.utils.data import ChainDataset, ConcatDataset, Subset

__all__ = ["WORKER_MODES", "declares_native", "plan_is_native", "resolve_worker_mode"]

WORKER_MODES = ("auto", "thread", "process")


def plan_is_native(plan: Any) -> bool:
    """Whether a fused plan (:class:`spdl_torch.transforms.FusedPlan` or ``None``: nothing fused) leaves no
    per-sample Python work: everything fused, or only a deterministic remainder run once on the batch tensor."""
    return plan is not None and getattr(plan, "per_sample", None) is None


def declares_native(dataset: Any) -> bool:
    """Whether ``dataset`` declares native loading (its ``spdl_native_loading()`` returns true; for ``Subset``,
    ``ConcatDataset`` and ``ChainDataset``: every dataset inside does)."""
    if isinstance(dataset, Subset):
        return declares_native(dataset.dataset)
    if isinstance(dataset, (ConcatDataset, ChainDataset)):
        return len(dataset.datasets) > 0 and all(declares_native(d) for d in dataset.datasets)
    fn = getattr(dataset, "spdl_native_loading", None)
    return bool(fn()) if callable(fn) else False


def resolve_worker_mode(worker_mode: str, dataset: Any, num_workers: int, on_error: str,
                        dataset_per_worker: bool) -> str:
    """``"main"`` (``num_workers=0``: loads in the calling thread), ``"thread"`` or ``"process"``.

    Raises:
        ValueError: ``worker_mode`` is not one of :data:`WORKER_MODES`, or ``"process"`` with an option that only
            threads have.
    """
    if worker_mode not in WORKER_MODES:
        raise ValueError(f"worker_mode should be one of {WORKER_MODES}, got {worker_mode!r}")
    if not isinstance(num_workers, int) or num_workers <= 0:
        return "main"
    thread_only = [name for name, on in (("on_error='skip'", on_error == "skip"),
                                         ("dataset_per_worker=False", not dataset_per_worker)) if on]
    if worker_mode == "process":
        if thread_only:
            raise ValueError(f"worker_mode='process' does not support {' and '.join(thread_only)}: worker "
                             "processes cannot re-fetch a failed batch's samples one by one or share one dataset "
                             "object; use worker_mode='thread'")
        return "process"
    if worker_mode == "thread" or thread_only or declares_native(dataset):
        return "thread"
    return "process"


def describe_mode(mode: str, requested: str) -> str:
    """For ``repr(loader)``: where the workers run, and why."""
    where = {"main": "in the calling thread (num_workers=0)", "thread": "on worker threads",
             "process": "in torch's worker processes"}[mode]
    return f"worker_mode={requested!r}: loads {where}"
