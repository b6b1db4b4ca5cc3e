"""torch's DataLoader vs spdl_torch.DataLoader with only the import changed, per workload: which worker mode the
"auto" rule picks and what it gives. Fresh process per pass, contenders interleaved, medians, ratios.

    python -m benchmarks.bench_worker_modes --root data/imagenet_like/train [--workers 2 4] [--reps 3]
        [--items 512] [--ab-repo /path/to/previous/checkout] [--json out.json]

Workloads (batch 32, one epoch of ``--items`` samples per pass, worker start-up included; a longer pass weighs
the workers' start less, as a training epoch does):
  tv_train   torchvision.datasets.ImageFolder + the classic v1 train recipe (Pillow, RandomResizedCrop(224),
             RandomHorizontalFlip, ToTensor, Normalize)
  tv_eval    the same with the v1 eval recipe (Resize(256), CenterCrop(224), ToTensor, Normalize)
  py_map     a map dataset whose __getitem__ is pure-Python CPU work (~2 ms a sample on one core)
  py_iter    an IterableDataset split by worker doing the same Python work per item
  partial    spdl_torch.datasets.ImageFolder with a partly fused v2 train recipe: RandomResizedCrop(224) and
             RandomHorizontalFlip fused, RandomPerspective (never fused), ToDtype and Normalize per sample in
             Python; also run with worker_mode="hybrid" (loader "spdl-hybrid": the remainder in processes)
  partial_py the same prefix fused, then a user callable doing ~2 ms of pure-Python work per sample, then
             ToDtype and Normalize per sample (also run as "spdl-hybrid")
  fused      spdl_torch.datasets.ImageFolder with the v2 train recipe, fully fused; also run by the
             ``--ab-repo`` checkout's spdl_torch.DataLoader (A/B: must be unchanged)
Memory: the PSS of the pass's process tree (consumer + workers, ``/proc/<pid>/smaps_rollup``) two batches before
the end, above the consumer's PSS before the loader started, per worker; read once, with the clock and the CPU
count paused (one read of a process that imported torch costs ~10-30 ms of CPU: sampling it every 20 ms took a
core of the machine). Both contenders import spdl_torch, so their workers fork from the same parent.
Besides the medians, the table gives the median of the paired ratios (each repetition's spdl pass over the torch
pass run next to it, same workload and workers) with their range: the machine's drift cancels within a pair.
One pass (used by the driver): ``python benchmarks/bench_worker_modes.py --one REPO WORKLOAD LOADER WORKERS ROOT
ITEMS``.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)  # workloads, run as a script or with -m
from workloads import MEAN as _MEAN, STD as _STD  # noqa: E402

WORK_ITERS = 16000  # Python loop iterations per sample (~2 ms of CPU on one core of the machine below)
ITEMS = 512  # samples per pass by default (the image workloads: the first ITEMS images of ROOT)
WORKLOADS = ("tv_train", "tv_eval", "py_map", "py_iter", "partial", "partial_py", "fused")
MEAN, STD = list(_MEAN), list(_STD)


def _python_work(i: int) -> int:
    acc = i
    for k in range(WORK_ITERS):
        acc = (acc * 31 + k) % 1000003
    return acc


def python_remainder(image):
    """A user callable of the partial_py workload: ~2 ms of pure-Python work, the image unchanged."""
    _python_work(int(image[0, 0, 0]))
    return image


def _tree_pss() -> int:
    """PSS (bytes) of this process and its children (the workers)."""
    total = 0
    me = os.getpid()
    pids = [me]
    for tid in os.listdir(f"/proc/{me}/task"):  # children forked by any thread
        try:
            with open(f"/proc/{me}/task/{tid}/children") as f:
                pids += [int(p) for p in f.read().split()]
        except OSError:
            pass
    for pid in pids:
        try:
            with open(f"/proc/{pid}/smaps_rollup") as f:
                for line in f:
                    if line.startswith("Pss:"):
                        total += int(line.split()[1]) * 1024
                        break
        except OSError:
            continue
    return total


def one_pass(repo: str, workload: str, loader_name: str, workers: int, root: str, items: int = ITEMS) -> dict:
    import resource
    import time

    sys.path.insert(0, repo)
    import torch
    import torch.utils.data as tud

    import spdl_torch

    class PyMap(tud.Dataset):
        def __len__(self):
            return items

        def __getitem__(self, i):
            return torch.tensor(_python_work(i))

    class PyIter(tud.IterableDataset):
        def __iter__(self):
            info = tud.get_worker_info()
            k, n = (0, 1) if info is None else (info.id, info.num_workers)
            for i in range(k, items, n):
                yield torch.tensor(_python_work(i))

    torch.manual_seed(0)
    if workload in ("tv_train", "tv_eval"):
        import torchvision
        from torchvision import transforms as T

        recipe = ([T.RandomResizedCrop(224), T.RandomHorizontalFlip()] if workload == "tv_train"
                  else [T.Resize(256), T.CenterCrop(224)])
        ds = torchvision.datasets.ImageFolder(root, transform=T.Compose([*recipe, T.ToTensor(), T.Normalize(MEAN, STD)]))
    elif workload in ("fused", "partial", "partial_py"):
        from torchvision.transforms import v2

        sys.path.insert(0, os.path.dirname(HERE))
        from benchmarks.bench_worker_modes import python_remainder  # importable by name (pickled by reference)

        rest = {"partial": [v2.RandomPerspective(p=0.5)], "partial_py": [v2.Lambda(python_remainder)]}.get(workload, [])
        ds = spdl_torch.datasets.ImageFolder(root, warn_unfused=False, transform=v2.Compose([
            v2.RandomResizedCrop(224, antialias=True), v2.RandomHorizontalFlip(), *rest,
            v2.ToDtype(torch.float32, scale=True), v2.Normalize(MEAN, STD)]))
    else:
        ds = PyMap() if workload == "py_map" else PyIter()
    if workload not in ("py_map", "py_iter"):
        ds = tud.Subset(ds, range(items))
    DL = tud.DataLoader if loader_name == "torch" else spdl_torch.DataLoader
    kw = {"worker_mode": loader_name.split("-")[1]} if loader_name in ("spdl-thread", "spdl-hybrid") else {}
    loader = DL(ds, batch_size=32, num_workers=workers, shuffle=workload != "py_iter", **kw)
    mode = getattr(loader, "resolved_worker_mode", "thread" if loader_name != "torch" else "process")  # older: threads
    base_pss = _tree_pss()
    total = -(-items // 32)  # batches of every workload (the iterable one: items / workers per worker, whole batches)
    gc.collect()  # the first full collection after import before the window (benchmarks/README.md, Method)
    r0, c0 = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    n = k = 0
    paused = paused_cpu = 0.0
    pss = None
    for batch in loader:
        n += len(batch[1] if isinstance(batch, list) else batch)
        k += 1
        if pss is None and k >= total - 2:  # near the end: every worker alive and past its first pages
            p0, q0 = time.perf_counter(), resource.getrusage(resource.RUSAGE_SELF)
            pss = _tree_pss()
            q1 = resource.getrusage(resource.RUSAGE_SELF)
            paused += time.perf_counter() - p0
            paused_cpu += (q1.ru_utime - q0.ru_utime) + (q1.ru_stime - q0.ru_stime)
    dt = time.perf_counter() - t0 - paused
    r1, c1 = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = sum(getattr(b, f) - getattr(a, f) for a, b in ((r0, r1), (c0, c1)) for f in ("ru_utime", "ru_stime")) - paused_cpu
    return {"workload": workload, "loader": loader_name, "repo": repo, "workers": workers, "mode": mode,
            "items": n, "items_per_s": n / dt, "cpu_ms_per_item": 1000 * cpu / n,
            "pss_mb_per_worker": ((pss or base_pss) - base_pss) / 2**20 / workers,
            "max_rss_mb": r1.ru_maxrss / 1024, "max_child_rss_mb": c1.ru_maxrss / 1024}


def contenders(this_repo: str, ab_repo: str | None, workloads: tuple[str, ...] = WORKLOADS) -> list[tuple[str, str, str]]:
    """(workload, loader, repo) of every pass."""
    out = []
    for w in workloads:
        out += [(w, "torch", this_repo), (w, "spdl", this_repo)]
        if w in ("partial", "partial_py"):
            out.append((w, "spdl-hybrid", this_repo))
        if w == "fused" and ab_repo:
            out.append((w, "spdl-A", ab_repo))
    return out


def run_pass(repo: str, workload: str, loader: str, workers: int, root: str, items: int = ITEMS) -> dict:
    cmd = [sys.executable, os.path.abspath(__file__), "--one", repo, workload,
           "spdl" if loader == "spdl-A" else loader, str(workers), root, str(items)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900, env={**os.environ, "PYTHONWARNINGS": "ignore"})
    if proc.returncode != 0:
        raise RuntimeError(f"{cmd}: exit {proc.returncode}\n{proc.stderr[-2000:]}")
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    result["loader"] = loader
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--one", nargs=6, metavar=("REPO", "WORKLOAD", "LOADER", "WORKERS", "ROOT", "ITEMS"))
    ap.add_argument("--items", type=int, default=ITEMS, help="samples per pass")
    ap.add_argument("--root")
    ap.add_argument("--workers", type=int, nargs="+", default=[2, 4])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--ab-repo")
    ap.add_argument("--json")
    ap.add_argument("--workloads", nargs="+", default=list(WORKLOADS), choices=WORKLOADS)
    args = ap.parse_args()
    if args.one:
        repo, workload, loader, workers, root, items = args.one
        print(json.dumps(one_pass(repo, workload, loader, int(workers), root, int(items))))
        return
    this_repo = os.path.dirname(HERE)
    results = []
    for rep in range(args.reps):
        for workers in args.workers:
            runs = contenders(this_repo, args.ab_repo, tuple(args.workloads))
            for workload, loader, repo in runs[rep % len(runs):] + runs[:rep % len(runs)]:  # rotate the order
                r = run_pass(repo, workload, loader, workers, args.root, args.items)
                r["rep"] = rep
                results.append(r)
                print(json.dumps(r), file=sys.stderr, flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    print(table(results, args.workers))


def paired_ratios(results: list[dict], workload: str, workers: int) -> list[float]:
    """Each repetition's spdl items/s over the torch pass of the same repetition, workload and workers."""
    by_rep: dict[int, dict[str, float]] = {}
    for r in results:
        if (r["workload"], r["workers"]) == (workload, workers) and r["loader"] in ("torch", "spdl") and "rep" in r:
            by_rep.setdefault(r["rep"], {})[r["loader"]] = r["items_per_s"]
    return [p["spdl"] / p["torch"] for p in by_rep.values() if len(p) == 2]


def table(results: list[dict], workers_list: list[int]) -> str:
    """The markdown table of medians: items/s, the ratio to torch's loader, CPU and PSS per worker."""
    lines = ["| workload | workers | rule's choice | torch items/s | spdl items/s | ratio | paired ratio (range) | "
             "other contender | CPU ms/item torch / spdl | PSS MB per worker torch / spdl |",
             "|---|---|---|---:|---:|---:|---:|---|---|---|"]
    for workload in WORKLOADS:
        for workers in workers_list:
            def med(loader, key="items_per_s"):
                xs = [r[key] for r in results if (r["workload"], r["workers"], r["loader"]) == (workload, workers, loader)]
                return statistics.median(xs) if xs else None
            t, s = med("torch"), med("spdl")
            if t is None or s is None:
                continue
            mode = next(r["mode"] for r in results if (r["workload"], r["workers"], r["loader"]) == (workload, workers, "spdl"))
            other = ""
            for name in ("spdl-A", "spdl-thread", "spdl-hybrid"):
                o = med(name)
                if o is not None:
                    other = f"{name}: {o:.0f} items/s, {o / t:.2f}x (this / it {s / o:.2f}x)"
            pairs = paired_ratios(results, workload, workers)
            paired = (f"{statistics.median(pairs):.2f}x ({min(pairs):.2f}-{max(pairs):.2f})" if pairs else "-")
            lines.append(f"| {workload} | {workers} | {mode} | {t:.0f} | {s:.0f} | **{s / t:.2f}x** | {paired} | {other} | "
                         f"{med('torch', 'cpu_ms_per_item'):.2f} / {med('spdl', 'cpu_ms_per_item'):.2f} | "
                         f"{med('torch', 'pss_mb_per_worker'):.0f} / {med('spdl', 'pss_mb_per_worker'):.0f} |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
