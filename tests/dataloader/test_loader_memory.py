"""Loader memory: threads share the dataset (a large Python list costs no extra memory per worker), and
the loader keeps no batch beyond torch's prefetch contract."""

import gc
import os
import threading
import time
import weakref

import pytest
import torch
import torch.utils.data as tud

from spdl_torch import DataLoader

from tests._utils.waiting import wait_until

PAGE = os.sysconf("SC_PAGE_SIZE")
TOLERANCE_MB = 10


def rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * PAGE


class Strings(tud.Dataset):
    def __init__(self, n):
        self.items = [f"sample-{i:07d}.jpg" for i in range(n)]

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        return self.items[i]


def _no_loader_threads():
    return not any(t.name.startswith("spdl_torch-DataLoader-worker") for t in threading.enumerate())


def peak_rss_delta(ds, num_workers):
    # loaders stop their threads without waiting (__del__ never blocks): let the previous run's threads end and
    # free what they held before the baseline
    wait_until(_no_loader_threads)
    gc.collect()
    base = rss_bytes()
    peak = base
    sampler = tud.RandomSampler(ds, num_samples=50_000)
    for _ in DataLoader(ds, batch_size=256, sampler=sampler, num_workers=num_workers):
        peak = max(peak, rss_bytes())
    return peak - base


@pytest.mark.slow  # builds a list of millions of objects to measure RSS against
@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="needs /proc")
def test_large_python_list_is_shared_by_threads():
    before = rss_bytes()
    ds = Strings(1_000_000)
    dataset_mb = (rss_bytes() - before) / 2**20
    peak_rss_delta(ds, 0)  # warm-up: allocator pools, thread-local caches
    # The least of three runs each: RSS only ever gains from unrelated activity (a batch freed late by an
    # earlier test's thread, a new thread's malloc arena), which made single runs in the full suite 10-15 MB high.
    deltas = {n: min(peak_rss_delta(ds, n) for _ in range(3)) / 2**20 for n in (0, 2, 4)}
    # A worker holding its own copy of the list (what a forked process does as refcounts touch its pages) would add
    # the list's whole size per worker; sharing threads add none of it. A quarter of one copy separates the two
    # with room for allocator noise.
    assert dataset_mb > 50, dataset_mb
    for n in (2, 4):
        assert deltas[n] - deltas[0] < max(TOLERANCE_MB, dataset_mb / 4), (deltas, dataset_mb)


class _Tensors(tud.Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, i):
        return torch.full((4,), i)


@pytest.mark.slow
@pytest.mark.parametrize("in_order", [True, False])
def test_handed_off_batch_is_not_kept_by_the_loader(in_order):
    # torch's contract: at most prefetch_factor * num_workers batches are loaded ahead of the consumer.
    # Once the consumer drops the batch it received, nothing in the loader may keep it alive.
    alive = set()
    lock = threading.Lock()

    def collate(samples):
        batch = torch.stack(samples)
        key = int(batch[0, 0])
        with lock:
            alive.add(key)

        def dead():
            with lock:
                alive.discard(key)

        weakref.finalize(batch, dead)
        return batch

    ahead = 2 * 3  # prefetch_factor * num_workers
    it = iter(DataLoader(_Tensors(), batch_size=2, num_workers=3, prefetch_factor=2, collate_fn=collate, worker_mode="thread",
                         in_order=in_order))
    for _ in range(3):
        batch = next(it)
        assert wait_until(lambda: len(alive) >= ahead + 1), alive  # the pipeline refilled: ahead + ours
        del batch
        gc.collect()
        assert wait_until(lambda: len(alive) == ahead), alive
        time.sleep(0.05)  # nothing comes on top later either
        assert len(alive) == ahead, alive
    del it
