"""Leak and lifecycle tests: many create / iterate-partially / destroy cycles leave the process's thread
count, open file descriptors and RSS flat (measured, with a tolerance).

Thread counts come from /proc/self/task (native threads included, not only Python's), descriptors from
/proc/self/fd, RSS from /proc/self/status. A warm-up phase lets allocator pools, torch's lazy state and the
native decode pool reach steady state before the baseline is taken.
"""

import gc
import os
import time

import numpy as np
import pytest
import torch

import spdl_torch
from spdl_torch.io import decode_image

from tests._utils import images

CYCLES = 1000
WARMUP = 50
RSS_TOLERANCE_KB = 24 * 1024  # allocator noise; a leak of one batch per cycle would be >= 1000 x 12 KB
SETTLE_S = 5.0


def _threads() -> int:
    return len(os.listdir("/proc/self/task"))


def _fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def _rss_kb() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def _settle(baseline_threads: int) -> None:
    """Waits (bounded) for threads of finished loaders to exit: shutdown is prompt but asynchronous."""
    deadline = time.monotonic() + SETTLE_S
    while True:
        gc.collect()
        if _threads() <= baseline_threads or time.monotonic() > deadline:
            return
        time.sleep(0.02)


def _measure(cycle, cycles: int = CYCLES) -> dict:
    before = _threads()
    for i in range(WARMUP):
        cycle(i)
    # loaders stop their threads without waiting for them (__del__ never blocks): the baseline is taken once
    # the warm-up's threads are gone, so it counts none of their event loops' descriptors
    _settle(before)
    gc.collect()
    base = {"threads": _threads(), "fds": _fds(), "rss_kb": _rss_kb()}
    t0 = time.perf_counter()
    peak_threads = 0
    for i in range(cycles):
        cycle(i)
        if i % 50 == 0:
            peak_threads = max(peak_threads, _threads())
    seconds = time.perf_counter() - t0
    _settle(base["threads"])
    after = {"threads": _threads(), "fds": _fds(), "rss_kb": _rss_kb()}
    delta = {k: after[k] - base[k] for k in base}
    print(f"\n{cycles} cycles in {seconds:.1f} s; baseline {base}; delta {delta}; peak threads {peak_threads}")
    return {"delta": delta, "peak_threads": peak_threads, "base": base}


class _Tensors(torch.utils.data.Dataset):
    def __len__(self) -> int:
        return 64

    def __getitem__(self, i: int) -> torch.Tensor:
        return torch.full((3, 32, 32), float(i))


class _Decoding(torch.utils.data.Dataset):
    """Native decode in the workers (the GIL-free op and its per-thread decoder state)."""

    def __init__(self) -> None:
        rng = np.random.default_rng(0)
        self.blobs = [images.encode(images.noise((40, 48, 3), rng, high=255), fmt) for fmt in ("JPEG", "PNG")]

    def __len__(self) -> int:
        return 32

    def __getitem__(self, i: int) -> torch.Tensor:
        return decode_image(self.blobs[i % 2])


def _assert_flat(result: dict) -> None:
    d = result["delta"]
    assert d["threads"] <= 0, f"threads grew by {d['threads']} ({result})"
    assert d["fds"] <= 0, f"open file descriptors grew by {d['fds']} ({result})"
    assert d["rss_kb"] <= RSS_TOLERANCE_KB, f"RSS grew by {d['rss_kb']} KB ({result})"


@pytest.mark.slow
def test_dataloader_create_iterate_partially_destroy():
    dataset = _Tensors()

    def cycle(i: int) -> None:
        loader = spdl_torch.DataLoader(dataset, batch_size=4, num_workers=2, worker_mode="thread")
        it = iter(loader)
        for _ in range(1 + i % 3):  # 1..3 of the 16 batches: the rest are in flight or not yet requested
            next(it)
        del it, loader

    _assert_flat(_measure(cycle))


@pytest.mark.slow
def test_dataloader_with_native_decode_create_iterate_partially_destroy():
    dataset = _Decoding()

    def cycle(i: int) -> None:
        loader = spdl_torch.DataLoader(dataset, batch_size=4, num_workers=2, shuffle=bool(i % 2), worker_mode="thread")
        for k, _ in enumerate(loader):
            if k == i % 4:
                break

    _assert_flat(_measure(cycle, cycles=300))


@pytest.mark.slow
def test_pipeline_create_iterate_partially_destroy():
    try:
        from spdl_torch.pipeline import PipelineBuilder
    except ImportError as e:  # the engine is being written in spdl_torch/pipeline/
        pytest.skip(f"spdl_torch.pipeline.PipelineBuilder is not available: {e}")

    def work(x: int) -> torch.Tensor:
        return torch.full((8,), float(x))

    def cycle(i: int) -> None:
        pipeline = (PipelineBuilder().add_source(range(64)).pipe(work, concurrency=2).aggregate(4).add_sink(2)
                    .build(num_threads=2))
        it = iter(pipeline)
        for _ in range(1 + i % 3):
            next(it)
        del it
        pipeline.close()
        del pipeline

    _assert_flat(_measure(cycle))
