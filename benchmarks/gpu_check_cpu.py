"""The device check's CPU parts (benchmarks/gpu_check.sh): the fused loader's images/s at 1..16 threads against
torch's DataLoader at the same numbers of workers (the SPDL paper's scaling figure, on our code), with CPU
seconds per image and memory overhead, and the fused eval recipe's speed-up from 1 thread to the most. Runs on
any machine (the dry run here too)."""

from __future__ import annotations

import os

import torch

from .contenders import MEAN, SCALE, SIZE, STD, RATIO, PilDataset, list_images
from .measure import ResourceMonitor

__all__ = ["scaling"]


def _train_v2():
    from torchvision.transforms import v2

    return v2.Compose([v2.RandomResizedCrop(SIZE, scale=SCALE, ratio=RATIO, antialias=True), v2.RandomHorizontalFlip(),
                       v2.ToDtype(torch.float32, scale=True), v2.Normalize(MEAN, STD)])


def _eval_v2():
    from torchvision.transforms import v2

    return v2.Compose([v2.Resize(256, antialias=True), v2.CenterCrop(SIZE), v2.ToDtype(torch.float32, scale=True),
                       v2.Normalize(MEAN, STD)])


def _run(loader) -> tuple[int, object]:
    n = 0
    with ResourceMonitor() as mon:
        for x, _ in loader:
            n += x.shape[0]
    return n, mon.usage


def _one(kind: str, root: str, threads: int, batch: int, limit: int) -> dict:
    import spdl_torch

    paths, labels, _ = list_images(root)
    paths, labels = paths[:limit], labels[:limit]
    if kind in ("spdl_torch", "spdl_torch_eval"):
        spdl_torch.io.set_num_threads(threads)
        transform = _train_v2() if kind == "spdl_torch" else _eval_v2()
        ds = spdl_torch.datasets.FileListDataset(paths, labels, transform=transform, seed=0)
        loader = spdl_torch.DataLoader(ds, batch_size=batch, num_workers=max(1, min(threads, 4)))
    else:
        torch.set_num_threads(1)
        ds = PilDataset(paths, labels, "train")
        loader = torch.utils.data.DataLoader(ds, batch_size=batch, num_workers=threads)
    _run(loader)  # warm-up epoch: page cache, thread/process start
    n, usage = _run(loader)
    spdl_torch.io.set_num_threads(0)
    return {"loader": kind, "threads": threads, "images": n, "wall_s": usage.wall_s,
            "images_per_s": n / usage.wall_s, "cpu_s_per_image": usage.cpu_s / n,
            "overhead_mb": usage.overhead_anon_bytes / 2**20}


def scaling(root: str, threads: list[int], batch: int = 64, limit: int = 1000) -> dict:
    """Images/s of both loaders at each thread/worker count; ratios (ours / torch's) and our 16-vs-1 speed-up."""
    rows = []
    cores = len(os.sched_getaffinity(0))
    for t in threads:
        if t > cores:
            rows.append({"threads": t, "skipped": f"{cores} cores"})
            continue
        for kind in ("spdl_torch", "torch"):
            rows.append(_one(kind, root, t, batch, limit))
    ours = {r["threads"]: r for r in rows if r.get("loader") == "spdl_torch"}
    theirs = {r["threads"]: r for r in rows if r.get("loader") == "torch"}
    ratios = {t: ours[t]["images_per_s"] / theirs[t]["images_per_s"] for t in ours if t in theirs}
    out = {"rows": rows, "ratio_vs_torch": ratios, "cores": cores}
    if 1 in ours and max(ours) > 1:
        out["speedup_max_vs_1"] = {"threads": max(ours), "x": ours[max(ours)]["images_per_s"] / ours[1]["images_per_s"]}
        most = max(ours)
        ev = {t: _one("spdl_torch_eval", root, t, batch, limit) for t in (1, most)}
        rows += ev.values()
        out["eval_speedup_max_vs_1"] = {"threads": most, "x": ev[most]["images_per_s"] / ev[1]["images_per_s"]}
    return out
