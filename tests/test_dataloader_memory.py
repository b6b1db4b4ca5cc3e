"""Threads share the dataset: a dataset holding a large Python list costs no extra memory per worker."""

import gc
import os

import pytest
import torch.utils.data as tud

from spdl_torch.dataloader import DataLoader

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


def peak_rss_delta(ds, num_workers):
    gc.collect()
    base = rss_bytes()
    peak = base
    sampler = tud.RandomSampler(ds, num_samples=50_000)
    for _ in DataLoader(ds, batch_size=256, sampler=sampler, num_workers=num_workers):
        peak = max(peak, rss_bytes())
    return peak - base


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="needs /proc")
def test_large_python_list_is_shared_by_threads():
    ds = Strings(1_000_000)
    size_mb = (rss_bytes()) / 2**20
    peak_rss_delta(ds, 0)  # warm-up: allocator pools, thread-local caches
    deltas = {n: peak_rss_delta(ds, n) / 2**20 for n in (0, 2, 4)}
    assert size_mb > 50  # the dataset is big compared to the tolerance
    for n in (2, 4):
        assert deltas[n] - deltas[0] < TOLERANCE_MB, deltas
