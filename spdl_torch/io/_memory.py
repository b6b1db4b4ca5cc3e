"""The memory behind :func:`~spdl_torch.io.decode_images`' non-pinned batches: its pool and counters.

A batch of at least 1 MiB gets its own anonymous mapping (2 MiB aligned, transparent huge pages when the
system allows them) instead of ``malloc`` memory. When the last tensor using it is freed, the buffer goes
back to a small pool for the next batch of the same size or, past the pool's capacity (by default 40 MiB:
two float32 batches of 32x3x224x224), straight back to the operating system. So a loader's resident
memory follows the batches alive plus at most the capacity, instead of whatever ``malloc``'s per-thread
arenas keep. Pinned batches (``pin_memory=True``) come from torch's caching host allocator and are not
counted here.
"""

from __future__ import annotations

import torch

__all__ = ["batch_memory_stats", "set_batch_memory_capacity"]

_STATS = ("pooled_buffers", "pooled_bytes", "live_buffers", "live_bytes", "maps", "reuses", "unmaps",
          "peak_live_buffers", "peak_live_bytes", "capacity")


def batch_memory_stats(*, reset_peak: bool = False) -> dict[str, int]:
    """Counters of the batch memory pool (bytes are mapped bytes: the batch's size rounded up to pages), and its
    capacity.

    Args:
        reset_peak: after reading them, restart ``peak_live_buffers`` / ``peak_live_bytes`` from the buffers live
            now (as ``torch.cuda.reset_peak_memory_stats``), so the next call's peaks are those since this one.

    Returns:
        ``pooled_buffers`` / ``pooled_bytes``: freed buffers kept for reuse; ``live_buffers`` /
        ``live_bytes``: buffers owned by tensors now; ``maps``: buffers mapped fresh, ``reuses``: batches
        served from the pool, ``unmaps``: buffers returned to the OS (all three since the process started);
        ``peak_live_buffers`` / ``peak_live_bytes``: the most buffers / bytes live at once since the process
        started or the last ``reset_peak=True``. A batch is live from its allocation, which
        ``decode_images`` makes once the calls ahead of it have started their last samples, until its last
        tensor is freed. ``capacity``: the most bytes of freed batch buffers kept for reuse
        (:func:`set_batch_memory_capacity`).
    """
    return dict(zip(_STATS, (int(v) for v in torch.ops.spdl_torch.batch_memory_stats(reset_peak=bool(reset_peak)))))


def set_batch_memory_capacity(nbytes: int) -> None:
    """Sets the most bytes of freed batch buffers kept for reuse; lowering it unmaps the excess, least
    recently freed first, right away.

    The default, 40 MiB, keeps two float32 batches of 32x3x224x224: with 2 loader workers every batch
    then reuses a freed buffer. ``0`` returns every freed buffer to the OS at once: each batch maps fresh
    memory, which keeps resident memory at the batches alive (~1-1.5 batches less at a loader's peak) but
    costs CPU for the page faults of every batch: +1 to +10 ms per float32 batch of ~52 ms on 2 vCPUs
    (``python benchmarks/bench_batch_memory.py``), and without transparent huge pages a fresh 18 MiB mapping
    alone costs 11-12 ms.

    Args:
        nbytes: the capacity in bytes (``0``: keep nothing).

    Raises:
        ValueError: ``nbytes`` is negative or not an int.
    """
    if isinstance(nbytes, bool) or not isinstance(nbytes, int) or nbytes < 0:
        raise ValueError(f"{nbytes=} must be an int >= 0")
    torch.ops.spdl_torch.set_batch_memory_capacity(nbytes)
