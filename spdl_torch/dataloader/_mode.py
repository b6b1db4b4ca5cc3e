"""Where a :class:`~spdl_torch.DataLoader`'s workers run: threads of this process, threads plus a process pool for
the Python remainder, or torch's worker processes.

The rule of ``worker_mode="auto"``: datasets whose samples spdl_torch's native ops produce run on threads, a
per-sample Python remainder of their transform included; any other dataset runs in torch's own worker processes,
whose Python code does not share one GIL. The declarations are methods of the dataset instance:
``spdl_native_loading() -> bool`` (its samples come from spdl_torch's native ops, which run without the GIL) and
``spdl_python_remainder() -> bool`` (they do, except a per-sample Python remainder that can run elsewhere);
spdl_torch's fused datasets define both. ``Subset`` and ``ConcatDataset`` / ``ChainDataset`` answer for the
datasets inside, and a dataset that declares neither but that the loader converts (torchvision's folder datasets,
a class with ``spdl_source``: ``spdl_torch/datasets/_convert.py``) answers through its native view. Why the
remainder stays on threads: the GIL-bound remainder on one thread overlaps with the native decode on the others.
``python -m benchmarks.bench_worker_modes --root ROOT --workloads partial partial_py`` (a partly fused
ImageFolder, RandomPerspective or a ~2 ms Python callable per sample, 2 cores) measured threads at 1.03-1.22x
torch's DataLoader items/s, and the remainder in processes (``"hybrid"``, the explicit choice) at 0.76-0.93x (``benchmarks/results/2026-12-02-worker-modes-f.json``). Two options
exist only on threads and make ``"auto"`` choose them: ``on_error="skip"`` and ``dataset_per_worker=False``
(``"hybrid"`` runs on threads: it keeps both).
"""

from __future__ import annotations

from typing import Any

from .._native import declares_native, declares_remainder

__all__ = ["WORKER_MODES", "describe_mode", "resolve_worker_mode"]

WORKER_MODES = ("auto", "thread", "hybrid", "process")


def resolve_worker_mode(worker_mode: str, dataset: Any, num_workers: int, on_error: str,
                        dataset_per_worker: bool, converter: Any = None) -> str:
    """``"main"`` (``num_workers=0``: loads in the calling thread), ``"thread"``, ``"hybrid"`` (threads, and the
    datasets' per-sample Python remainder in worker processes) or ``"process"``. ``converter``: the loader's
    converter of user datasets (``None``: ``convert_dataset=False``).

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
    if worker_mode in ("thread", "hybrid"):
        return worker_mode
    if thread_only or declares_native(dataset, converter) or declares_remainder(dataset, converter):
        return "thread"
    return "process"


def describe_mode(mode: str, requested: str, num_workers: int = 0) -> str:
    """For ``repr(loader)``: where each part of the loading runs."""
    where = {"main": "loads in the calling thread (num_workers=0)", "thread": "loads on worker threads",
             "hybrid": f"decodes natively on {num_workers} worker threads, runs the per-sample Python remainder "
                       f"in {num_workers} worker processes",
             "process": "loads in torch's worker processes"}[mode]
    return f"worker_mode={requested!r}: {where}"
