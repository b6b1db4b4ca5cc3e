"""Where a loader's memory overhead goes: batches alive vs. allocator retention, sampled over one epoch.

    python benchmarks/mem_probe.py [--root data/imagenet_like/train] [--limit 640] [--workers 2]
        [--batch-size 32] [--dtype float32|uint8] [--loaders torch,spdl_torch]

Runs the part-1 configuration of ``bench_dataloader.py`` (the same dataset, transform and loader
arguments) and samples, every ``--interval-ms``:

* ``pss``: PSS of the process tree minus the consumer's PSS before the loader started (the benchmark's
  overhead), and for torch the share of its worker processes; ``peak_anon``: the same for anonymous and
  shared memory only (file pages left out: their PSS moves with other programs mapping the same libraries);
  ``peak_all``: anonymous PSS plus the machine's ``Shmem`` (``/proc/meminfo``) above its level at the
  start. It adds what PSS cannot see: torch's batches that a worker has put into its queue and unmapped but
  the consumer has not received yet live in shared memory that no process maps (assumes no other program
  on the machine changes its shared memory meanwhile);
* ``alive``: spdl_torch: batch tensors made by the fused op and not yet freed (in workers, queues or the
  consumer), counted with ``weakref.finalize``; torch: the iterator's outstanding tasks plus the batch the
  consumer holds (worker processes cannot be looked into from here);
* ``native``: spdl_torch: the batch memory pool's live buffers (``batch_memory_stats()["live_buffers"]``):
  like ``alive``, plus the batches a running ``decode_images`` call has allocated and not returned yet
  (``alive`` sees a batch only once the call returned it); ``peak_native`` is the pool's exact high-water
  mark over the run (``peak_live_buffers``, builds that have it); ``mean_native`` and ``mean_anon`` average
  the samples over the epoch;
* ``arena_free``: glibc ``mallinfo2().fordblks`` of this process: bytes free inside malloc arenas, i.e. kept
  by the allocator instead of returned to the OS (``hblkhd``: bytes in live mmap-ed chunks).

It prints, per loader, the peak overhead and what was alive at that sample, and the maxima of each
counter over the epoch. MB = 2**20 bytes; a float32 batch of 32x3x224x224 is 18.4 MB (19.3e6 bytes).
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import os
import sys
import threading
import time
import weakref

import psutil
import torch
import torch.utils.data as tud
from torchvision.transforms import v2

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from measure import machine_shmem_bytes  # noqa: E402
from workloads import MEAN as _MEAN, STD as _STD  # noqa: E402

import spdl_torch  # noqa: E402
import spdl_torch.datasets  # noqa: E402

MB = 2**20
MEAN, STD = list(_MEAN), list(_STD)


class _MallInfo2(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in
                ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks",
                 "keepcost")]


_libc = ctypes.CDLL("libc.so.6")
_libc.mallinfo2.restype = _MallInfo2


def mallinfo() -> _MallInfo2:
    return _libc.mallinfo2()


class Tracked(tud.Dataset):
    """Forwards to ``inner`` and counts the batch tensors its ``__getitems__`` returns views of."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.alive = 0
        self.made = 0
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self.inner)

    def __getitem__(self, i):
        return self.inner[i]

    def _dead(self) -> None:
        with self._lock:
            self.alive -= 1

    def __getitems__(self, indices):
        items = self.inner.__getitems__(indices)
        base = items[0][0]._base if items and isinstance(items[0][0], torch.Tensor) else None
        if base is not None:
            with self._lock:
                self.alive += 1
                self.made += 1
            weakref.finalize(base, self._dead)
        return items

    def __getstate__(self):  # torch's workers: the counters are per process, not shared
        return {"inner": self.inner}

    def __setstate__(self, state):
        self.__init__(state["inner"])


def pss(procs) -> tuple[int, int, int]:
    """(PSS, PSS of anonymous + shared memory, PSS of anonymous memory) summed over ``procs``, from
    ``/proc/<pid>/smaps_rollup``. The last two leave out file pages (libraries), whose PSS share changes
    whenever another process on the machine maps or unmaps the same files (e.g. another torch program)."""
    total = anon = anon_only = 0
    for p in procs:
        try:
            with open(f"/proc/{p.pid}/smaps_rollup") as f:
                fields = dict(line.split(":", 1) for line in f.read().splitlines()[1:])
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            continue
        kb = lambda k: int(fields.get(k, "0 kB").split()[0]) * 1024  # noqa: E731
        total += kb("Pss")
        anon += kb("Pss_Anon") + kb("Pss_Shmem")
        anon_only += kb("Pss_Anon")
    return total, anon, anon_only


def _cpu_s(me: psutil.Process) -> float:
    """CPU seconds of this process, its live children and its reaped children."""
    t = me.cpu_times()
    total = t.user + t.system + t.children_user + t.children_system
    for c in me.children(recursive=True):
        try:
            ct = c.cpu_times()
            total += ct.user + ct.system
        except psutil.NoSuchProcess:
            pass
    return total


def probe(dataset: Tracked, name: str, workers: int, batch_size: int, interval_s: float, consumer_s: float) -> dict:
    gc.collect()
    me = psutil.Process()
    base, base_anon, base_anon_only = pss([me])
    base_shm = machine_shmem_bytes()
    samples = []
    state = {"it": None, "held": 0}
    stop = threading.Event()

    def sample() -> None:
        children = me.children(recursive=True)
        total, anon, anon_only = pss([me, *children])
        shm = machine_shmem_bytes() - base_shm
        workers_pss = pss(children)[0]
        it = state["it"]
        if name == "torch":
            alive = (getattr(it, "_tasks_outstanding", 0) if it is not None else 0) + state["held"]
        else:
            alive = dataset.alive
        mi = mallinfo()
        native = _live_buffers() if name != "torch" else 0
        samples.append((total - base, workers_pss, alive, mi.fordblks, mi.hblkhd, anon - base_anon,
                        anon_only - base_anon_only + shm, native))

    def run() -> None:
        while not stop.wait(interval_s):
            sample()

    native0 = _live_buffers()
    reset_peak = getattr(spdl_torch.io, "reset_batch_memory_peak", None)
    if reset_peak is not None:
        reset_peak()
    th = threading.Thread(target=run, daemon=True)
    th.start()
    loader = (tud.DataLoader if name == "torch" else spdl_torch.DataLoader)(
        dataset, batch_size=batch_size, num_workers=workers)
    t0 = time.perf_counter()
    cpu0 = _cpu_s(me)
    state["it"] = it = iter(loader)
    n = 0
    for _, labels in it:
        state["held"] = 1
        n += len(labels)
        if consumer_s:
            time.sleep(consumer_s)
    wall = time.perf_counter() - t0
    cpu = _cpu_s(me) - cpu0
    sample()
    stop.set()
    th.join()
    del it, loader
    state["it"] = None
    peak = max(samples, key=lambda s: s[0])
    return {
        "images/s": n / wall,
        "cpu_ms/img": 1000 * cpu / n,
        "peak_MB": peak[0] / MB,
        "peak_anon_MB": max(s[5] for s in samples) / MB,
        "peak_all_MB": max(s[6] for s in samples) / MB,
        "workers_MB_at_peak": peak[1] / MB,
        "alive_at_peak": peak[2],
        "arena_free_MB_at_peak": peak[3] / MB,
        "mmapped_MB_at_peak": peak[4] / MB,
        "max_alive": max(s[2] for s in samples),
        "native_at_peak": peak[7] - native0 if name != "torch" else float("nan"),
        "max_native": max(s[7] for s in samples) - native0 if name != "torch" else float("nan"),
        "mean_native": sum(s[7] for s in samples) / len(samples) - native0 if name != "torch" else float("nan"),
        "mean_anon_MB": sum(s[5] for s in samples) / len(samples) / MB,
        "peak_native": (spdl_torch.io.batch_memory_stats()["peak_live_buffers"] - native0
                        if reset_peak is not None and name != "torch" else float("nan")),
        "max_arena_free_MB": max(s[3] for s in samples) / MB,
        "max_mmapped_MB": max(s[4] for s in samples) / MB,
        "samples": len(samples),
    }


def _live_buffers() -> int:
    """Batch buffers of the pool owned by tensors now (0 for builds without the pool)."""
    stats = getattr(spdl_torch.io, "batch_memory_stats", None)
    return stats()["live_buffers"] if stats else 0


def _pool_stats() -> dict[str, int]:
    """The batch memory pool's event counters (empty for builds without the pool)."""
    stats = getattr(spdl_torch.io, "batch_memory_stats", None)
    return {k: v for k, v in stats().items() if k in ("maps", "reuses", "unmaps")} if stats else {}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", default="data/imagenet_like/train")
    parser.add_argument("--limit", type=int, default=640)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--dtype", choices=("float32", "uint8"), default="float32")
    parser.add_argument("--loaders", default="torch,spdl_torch")
    parser.add_argument("--interval-ms", type=float, default=10.0)
    parser.add_argument("--pool-capacity-mib", type=float, default=None,
                        help="spdl_torch.io.set_batch_memory_capacity before the run (default: the library's)")
    parser.add_argument("--consumer-ms", type=float, default=0.0, help="sleep per batch in the consumer")
    args = parser.parse_args()

    ts = [v2.Resize(256, antialias=True), v2.CenterCrop(224)]
    if args.dtype == "float32":
        ts += [v2.ToDtype(torch.float32, scale=True), v2.Normalize(MEAN, STD)]
    images = spdl_torch.datasets.ImageFolder(args.root, transform=v2.Compose(ts))
    dataset = Tracked(tud.Subset(images, range(min(args.limit, len(images)))))
    keys = ("images/s", "cpu_ms/img", "peak_MB", "peak_anon_MB", "peak_all_MB", "workers_MB_at_peak",
            "alive_at_peak", "arena_free_MB_at_peak", "mmapped_MB_at_peak", "max_alive", "native_at_peak",
            "max_native", "peak_native", "mean_native", "mean_anon_MB", "max_arena_free_MB", "max_mmapped_MB")
    print(f"{args.dtype}, {len(dataset)} images, batch {args.batch_size}, {args.workers} workers; "
          f"one batch = {args.batch_size * 3 * 224 * 224 * (4 if args.dtype == 'float32' else 1) / MB:.1f} MB")
    print(f"{'loader':<12}" + "".join(f"{k[:13]:>14}" for k in keys))
    if args.pool_capacity_mib is not None:
        spdl_torch.io.set_batch_memory_capacity(int(args.pool_capacity_mib * MB))
    for name in args.loaders.split(","):  # torch first: forking after the native pool started hangs
        before = _pool_stats()
        r = probe(dataset, name, args.workers, args.batch_size, args.interval_ms / 1000, args.consumer_ms / 1000)
        after = _pool_stats()
        pool = {k: after[k] - before[k] for k in after}
        print(f"{name:<12}" + "".join(f"{r[k]:>14.1f}" for k in keys) + f"  pool {pool}", flush=True)


if __name__ == "__main__":
    main()
