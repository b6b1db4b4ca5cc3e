"""torch's DataLoader vs spdl_torch.DataLoader with only the import changed, per workload: which worker mode the
"auto" rule picks and what it gives. Fresh process per pass, contenders interleaved, medians, ratios.

    python -m benchmarks.bench_worker_modes --root data/imagenet_like/train [--workers 2 4] [--reps 3]
        [--ab-repo /path/to/previous/checkout]

Workloads (batch 32, one epoch of ITEMS samples per pass, worker start-up included):
  tv_train   torchvision.datasets.ImageFolder + the classic v1 train recipe (Pillow, RandomResizedCrop(224),
             RandomHorizontalFlip, ToTensor, Normalize)
  py_map     a map dataset whose __getitem__ is pure-Python CPU work (~2 ms a sample on one core)
  py_iter    an IterableDataset split by worker doing the same Python work per item
  fused      spdl_torch.datasets.ImageFolder with the v2 train recipe, fully fused; also run by the
             ``--ab-repo`` checkout's spdl_torch.DataLoader (A/B: must be unchanged)
One pass (used by the driver): ``python benchmarks/bench_worker_modes.py --one REPO WORKLOAD LOADER WORKERS ROOT``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
WORK_ITERS = 16000  # Python loop iterations per sample (~2 ms of CPU on one core of the machine below)
ITEMS = 192  # samples per pass (the image workloads: the first ITEMS images of ROOT)


def _python_work(i: int) -> int:
    acc = i
    for k in range(WORK_ITERS):
        acc = (acc * 31 + k) % 1000003
    return acc


def one_pass(repo: str, workload: str, loader_name: str, workers: int, root: str) -> dict:
    import resource
    import time

    sys.path.insert(0, repo)
    import torch
    import torch.utils.data as tud

    import spdl_torch

    class PyMap(tud.Dataset):
        def __len__(self):
            return ITEMS

        def __getitem__(self, i):
            return torch.tensor(_python_work(i))

    class PyIter(tud.IterableDataset):
        def __iter__(self):
            info = tud.get_worker_info()
            k, n = (0, 1) if info is None else (info.id, info.num_workers)
            for i in range(k, ITEMS, n):
                yield torch.tensor(_python_work(i))

    torch.manual_seed(0)
    if workload == "tv_train":
        import torchvision
        from torchvision import transforms as T

        ds = torchvision.datasets.ImageFolder(root, transform=T.Compose([
            T.RandomResizedCrop(224), T.RandomHorizontalFlip(), T.ToTensor(),
            T.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])]))
    elif workload == "fused":
        from torchvision.transforms import v2

        ds = spdl_torch.datasets.ImageFolder(root, transform=v2.Compose([
            v2.RandomResizedCrop(224, antialias=True), v2.RandomHorizontalFlip(), v2.ToDtype(torch.float32, scale=True),
            v2.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])]))
    else:
        ds = PyMap() if workload == "py_map" else PyIter()
    if workload in ("tv_train", "fused"):
        ds = tud.Subset(ds, range(ITEMS))
    DL = tud.DataLoader if loader_name == "torch" else spdl_torch.DataLoader
    loader = DL(ds, batch_size=32, num_workers=workers, shuffle=workload != "py_iter")
    mode = getattr(loader, "resolved_worker_mode", "thread" if loader_name == "spdl" else "process")  # older code: threads
    r0, c0 = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    n = 0
    for batch in loader:
        n += len(batch[1] if isinstance(batch, list) else batch)
    dt = time.perf_counter() - t0
    r1, c1 = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = sum(getattr(b, f) - getattr(a, f) for a, b in ((r0, r1), (c0, c1)) for f in ("ru_utime", "ru_stime"))
    return {"workload": workload, "loader": loader_name, "repo": repo, "workers": workers, "mode": mode,
            "items": n, "items_per_s": n / dt, "cpu_ms_per_item": 1000 * cpu / n,
            "max_rss_mb": r1.ru_maxrss / 1024, "max_child_rss_mb": c1.ru_maxrss / 1024}


def contenders(this_repo: str, ab_repo: str | None) -> list[tuple[str, str, str]]:
    """(workload, loader, repo) of every pass."""
    out = []
    for w in ("tv_train", "py_map", "py_iter", "fused"):
        out += [(w, "torch", this_repo), (w, "spdl", this_repo)]
        if w == "fused" and ab_repo:
            out.append((w, "spdl-A", ab_repo))
    return out


def run_pass(repo: str, workload: str, loader: str, workers: int, root: str) -> dict:
    cmd = [sys.executable, os.path.abspath(__file__), "--one", repo, workload,
           "torch" if loader == "torch" else "spdl", str(workers), root]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900, env={**os.environ, "PYTHONWARNINGS": "ignore"})
    if proc.returncode != 0:
        raise RuntimeError(f"{cmd}: exit {proc.returncode}\n{proc.stderr[-2000:]}")
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    result["loader"] = loader
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--one", nargs=5, metavar=("REPO", "WORKLOAD", "LOADER", "WORKERS", "ROOT"))
    ap.add_argument("--root")
    ap.add_argument("--workers", type=int, nargs="+", default=[2, 4])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--ab-repo")
    ap.add_argument("--json")
    args = ap.parse_args()
    if args.one:
        repo, workload, loader, workers, root = args.one
        print(json.dumps(one_pass(repo, workload, loader, int(workers), root)))
        return
    this_repo = os.path.dirname(HERE)
    results = []
    for rep in range(args.reps):
        for workers in args.workers:
            runs = contenders(this_repo, args.ab_repo)
            for workload, loader, repo in runs[rep % len(runs):] + runs[:rep % len(runs)]:  # rotate the order
                r = run_pass(repo, workload, loader, workers, args.root)
                results.append(r)
                print(json.dumps(r), file=sys.stderr, flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    print("| workload | workers | spdl mode | torch items/s | spdl items/s | ratio | spdl-A ratio | "
          "CPU ms/item torch / spdl | max child RSS MB torch / spdl |")
    print("|---|---|---|---|---|---|---|---|---|")
    for workload in ("tv_train", "py_map", "py_iter", "fused"):
        for workers in args.workers:
            def med(loader, key="items_per_s"):
                xs = [r[key] for r in results if (r["workload"], r["workers"], r["loader"]) == (workload, workers, loader)]
                return statistics.median(xs) if xs else None
            t, s, a = med("torch"), med("spdl"), med("spdl-A")
            mode = next(r["mode"] for r in results if (r["workload"], r["workers"], r["loader"]) == (workload, workers, "spdl"))
            print(f"| {workload} | {workers} | {mode} | {t:.0f} | {s:.0f} | {s / t:.2f}x | "
                  f"{'' if a is None else f'{a / t:.2f}x (this/A {s / a:.2f}x)'} | "
                  f"{med('torch', 'cpu_ms_per_item'):.2f} / {med('spdl', 'cpu_ms_per_item'):.2f} | "
                  f"{med('torch', 'max_child_rss_mb'):.0f} / {med('spdl', 'max_child_rss_mb'):.0f} |")


if __name__ == "__main__":
    main()
