"""spdl_torch.DataLoader (threads) vs torch.utils.data.DataLoader (processes), same dataset object.

    python benchmarks/bench_dataloader.py [--root data/imagenet_like/train] [--limit 0] [--workers 2]
        [--batch-size 32] [--reps 3] [--strings 1000000] [--string-samples 200000] [--plot out.png]

Part 1 -- images: the same ``spdl_torch.datasets.ImageFolder`` (all 2,000 photos unless ``--limit``)
iterated by each loader with
``--workers`` workers, in two configurations of its torchvision v2 transform: ``float32`` (resize 256 /
center crop 224 / ToDtype(float32) / Normalize: batches of 32x3x224x224 float32, 18.4 MiB) and ``uint8``
(resize 256 / center crop 224 only, normalization left to the GPU: 4.6 MiB batches). Reported, medians of
``--reps`` passes run interleaved (torch, spdl_torch, torch, ...): images/s, CPU seconds per image
(process tree: workers included) and time to first batch from passes with nothing else running; loader
memory overhead from separate passes sampled every 50 ms (reading PSS is slow enough that a sampler running
during the timed passes would take a third of a core from spdl_torch and a whole one from torch's three
processes: one read costs ~17 ms of CPU per process with torch loaded): peak (peak PSS of the tree
minus the consumer's PSS before the loader started; ``benchmarks/measure.py``), the same over anonymous
and shared memory only (``anon+shm``: without the shared libraries' file pages, whose PSS moves with other
programs on the machine, and with torch's batches in transit from a worker to the consumer, which live in
shared memory that no process maps and no PSS counts).

Part 2 -- a dataset holding ``--strings`` Python strings (a typical file list), ``--string-samples``
random samples read through each loader with 0, 1, 2 and 4 workers: memory overhead per configuration.
Worker processes touch the list's objects (reference counts), which un-shares the pages they sit on;
threads share the one list.

Both loaders run in this one process (spdl_torch's native pool is fork-safe: torch's worker processes
forked after it started get a pool of their own).
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import time
import warnings

import torch
import torch.utils.data as tud
from torchvision.transforms import v2

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from measure import ResourceMonitor  # noqa: E402
from workloads import MEAN as _MEAN, STD as _STD  # noqa: E402

import spdl_torch  # noqa: E402
import spdl_torch.datasets  # noqa: E402

MEAN, STD = list(_MEAN), list(_STD)
LOADERS = {"torch": tud.DataLoader, "spdl_torch": spdl_torch.DataLoader}
MB = 2**20


class Strings(tud.Dataset):
    def __init__(self, n: int) -> None:
        self.items = [f"train/class_{i % 1000:04d}/image_{i:08d}.JPEG" for i in range(n)]

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, i: int) -> str:
        return self.items[i]


def _count(batch: list) -> int:
    return len(batch)


def _empty_batch_memory_pool() -> None:
    """Unmaps the freed batches spdl_torch's pool keeps from an earlier run, so that they are neither in
    this run's baseline (a pool emptied during the run would lower its overhead) nor reused by it."""
    capacity = spdl_torch.io.batch_memory_stats()
    spdl_torch.io.set_batch_memory_capacity(0)
    spdl_torch.io.set_batch_memory_capacity(capacity)


def _cpu_s() -> float:
    """User + system CPU seconds of this process and its reaped children (torch's workers are joined, so
    reaped, when its iterator is exhausted)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def _iterate(dataset, name: str, workers: int, batch_size: int) -> tuple[int, float]:
    """One pass over the dataset: (images, seconds to the first batch)."""
    t0 = time.perf_counter()
    it = iter(LOADERS[name](dataset, batch_size=batch_size, num_workers=workers))
    first = next(it)
    first_s = time.perf_counter() - t0
    images = len(first[1])
    del first  # the consumer keeps no batch beyond the one it works on
    for _, labels in it:
        images += len(labels)
    del it
    return images, first_s


def time_images(dataset, name: str, workers: int, batch_size: int) -> dict:
    """images/s, CPU per image and time to first batch of one pass, with no sampler running: reading PSS
    costs CPU per process and sample, so a sampler takes far more of a 2-core machine from the 3-process
    torch loader than from the 1-process spdl_torch loader."""
    _empty_batch_memory_pool()
    gc.collect()
    c0, t0 = _cpu_s(), time.perf_counter()
    images, first_s = _iterate(dataset, name, workers, batch_size)
    wall, cpu = time.perf_counter() - t0, _cpu_s() - c0
    return {"images/s": images / wall, "cpu_ms/img": 1000 * cpu / images, "first_batch_s": first_s, "wall_s": wall}


def memory_images(dataset, name: str, workers: int, batch_size: int) -> dict:
    """Loader memory overhead of one pass, sampled by a :class:`ResourceMonitor`."""
    _empty_batch_memory_pool()
    with ResourceMonitor() as mon:  # it collects the garbage first
        _iterate(dataset, name, workers, batch_size)
    u = mon.usage
    return {"overhead_MB": u.overhead_pss_bytes / MB, "anon_MB": u.overhead_anon_bytes / MB}


def bench_images(datasets: dict, workers: int, batch_size: int, reps: int) -> dict:
    """Every (config, loader) ``reps`` times, interleaved (torch, spdl_torch, torch, ...): timing passes
    first, then memory passes; medians."""
    for dataset in datasets.values():  # warm-up, untimed: lazy imports, spdl_torch's native pool
        for name in LOADERS:
            _iterate(tud.Subset(dataset, range(min(4 * batch_size, len(dataset)))), name, workers, batch_size)
    timings = {config: {name: [] for name in LOADERS} for config in datasets}
    memory = {config: {name: [] for name in LOADERS} for config in datasets}
    for results, measure in ((timings, time_images), (memory, memory_images)):
        for _ in range(reps):
            for config, dataset in datasets.items():
                for name in LOADERS:
                    results[config][name].append(measure(dataset, name, workers, batch_size))
    res = {}
    for config in datasets:
        res[config] = {}
        for name in LOADERS:
            runs = timings[config][name] + memory[config][name]
            res[config][name] = {key: statistics.median(r[key] for r in runs if key in r) for key in
                                 ("images/s", "cpu_ms/img", "first_batch_s", "overhead_MB", "anon_MB")}
    return res


def bench_strings(dataset, name: str, workers: int, sampler: list[int]) -> dict:
    samples = len(sampler)
    with ResourceMonitor() as mon:  # it collects the garbage first
        n = sum(LOADERS[name](dataset, batch_size=1000, sampler=sampler, num_workers=workers, collate_fn=_count))
    assert n == samples
    return {"overhead_MB": mon.usage.overhead_pss_bytes / MB, "wall_s": mon.usage.wall_s}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", default="data/imagenet_like/train")
    parser.add_argument("--limit", type=int, default=0, help="images in part 1 (0: all)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--reps", type=int, default=3, help="passes per loader and configuration (medians)")
    parser.add_argument("--strings", type=int, default=1_000_000)
    parser.add_argument("--string-samples", type=int, default=200_000)
    parser.add_argument("--plot", default=None, help="write a PNG of part 2 (needs matplotlib)")
    args = parser.parse_args()
    warnings.filterwarnings("ignore", message="This DataLoader will create")  # torch: more workers than CPUs

    transforms = {
        "float32": v2.Compose([v2.Resize(256, antialias=True), v2.CenterCrop(224), v2.ToDtype(torch.float32, scale=True),
                               v2.Normalize(MEAN, STD)]),
        "uint8": v2.Compose([v2.Resize(256, antialias=True), v2.CenterCrop(224)]),
    }
    datasets = {}
    for config, transform in transforms.items():
        images = spdl_torch.datasets.ImageFolder(args.root, transform=transform)
        datasets[config] = tud.Subset(images, range(min(args.limit, len(images)))) if args.limit else images
    n_images = len(datasets["float32"])
    print(f"part 1: {n_images} images from {args.root}, batch {args.batch_size}, {args.workers} workers, "
          f"{os.cpu_count()} CPUs")
    res = bench_images(datasets, args.workers, args.batch_size, args.reps)
    print(f"{'config':<9}{'loader':<12}{'images/s':>10}{'CPU ms/img':>12}{'overhead MB':>13}{'anon+shm MB':>13}"
          f"{'1st batch s':>13}")
    for config, r in res.items():
        for name in LOADERS:
            x = r[name]
            print(f"{config:<9}{name:<12}{x['images/s']:>10.1f}{x['cpu_ms/img']:>12.2f}{x['overhead_MB']:>13.1f}"
                  f"{x['anon_MB']:>13.1f}{x['first_batch_s']:>13.2f}")
    for config, r in res.items():
        s, t = r["spdl_torch"], r["torch"]
        print(f"{config}: spdl_torch / torch: {s['images/s'] / t['images/s']:.2f}x images/s, "
              f"{s['cpu_ms/img'] / t['cpu_ms/img']:.2f}x CPU per image, {s['overhead_MB'] / t['overhead_MB']:.2f}x memory "
              f"overhead ({s['anon_MB'] / t['anon_MB']:.2f}x in anonymous + shared memory)", flush=True)

    strings = Strings(args.strings)
    # the random indices are drawn once, outside the measurements (a RandomSampler would allocate a
    # permutation of the whole dataset as Python ints inside them)
    sampler = torch.randint(len(strings), (args.string_samples,), generator=torch.Generator().manual_seed(0)).tolist()
    bench_strings(strings, "spdl_torch", 0, sampler)  # warm-up: the interpreter's allocators, lazy imports
    print(f"\npart 2: loader memory overhead (MB of PSS) reading {args.string_samples} random samples of a "
          f"dataset of {args.strings} Python strings")
    workers_list = [0, 1, 2, 4]
    table = {name: {w: bench_strings(strings, name, w, sampler) for w in workers_list} for name in LOADERS}
    print(f"{'workers':<10}" + "".join(f"{name:>14}" for name in LOADERS))
    for w in workers_list:
        print(f"{w:<10}" + "".join(f"{table[name][w]['overhead_MB']:>14.1f}" for name in LOADERS))

    if args.plot:
        try:
            import matplotlib

            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError:
            print("matplotlib is not installed: no plot")
            return
        fig, ax = plt.subplots(figsize=(5, 3.5))
        for name in LOADERS:
            ax.plot(workers_list, [table[name][w]["overhead_MB"] for w in workers_list], marker="o", label=name)
        ax.set_xlabel("workers")
        ax.set_ylabel("memory overhead (MB PSS)")
        ax.set_title(f"{args.strings} Python strings")
        ax.legend()
        fig.tight_layout()
        fig.savefig(args.plot)
        print(f"wrote {args.plot}")


if __name__ == "__main__":
    main()
