"""Soak test: many epochs over the real-photo set with spdl_torch.DataLoader; RSS must stay flat after epoch 2.

    python benchmarks/soak.py [--root data/imagenet_like/train] [--epochs 20]   (or: make soak)

Each epoch decodes every image, resizes the shorter side to 256, centre-crops 224 and normalizes, in
shuffled batches of 32 on 2 worker threads (the README's main job). After each epoch it prints the
process's RSS and peak RSS (/proc/self/status VmRSS / VmHWM), the live thread count and open descriptors.
It exits 1 when the median RSS of the last 5 epochs exceeds that of epochs 2-6 by more than --tolerance-mb. Too slow for
the test suite (about 2 s per epoch on 2 cores); skipped, with the reason, when the photo set is absent.
"""

import argparse
import gc
import os
import statistics
import sys
import time

import torch
from torchvision.transforms import v2

import spdl_torch

from workloads import MEAN, STD


def _status(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) // 1024
    return -1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default="data/imagenet_like/train")
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--num-workers", type=int, default=2)
    parser.add_argument("--tolerance-mb", type=float, default=64.0)
    args = parser.parse_args()
    if not os.path.isdir(args.root):
        print(f"soak: skipped: {args.root} is absent (build it with `make demo` or "
              f"`python -m tools.prepare_data --out {os.path.dirname(args.root)}`)")
        return 0
    transform = v2.Compose([v2.Resize(256, antialias=True), v2.CenterCrop(224), v2.ToDtype(torch.float32, scale=True),
                            v2.Normalize(MEAN, STD)])
    dataset = spdl_torch.datasets.ImageFolder(args.root, transform=transform)
    loader = spdl_torch.DataLoader(dataset, batch_size=args.batch_size, shuffle=True, num_workers=args.num_workers)
    print(f"soak: {len(dataset)} images, {args.epochs} epochs, batch {args.batch_size}, {args.num_workers} workers")
    print(f"{'epoch':>5} {'images':>7} {'seconds':>8} {'rss_mb':>7} {'peak_mb':>8} {'threads':>8} {'fds':>5}")
    gc.collect()
    print(f"{0:>5} {0:>7} {0:>8.2f} {_status('VmRSS'):>7} {_status('VmHWM'):>8} "
          f"{len(os.listdir('/proc/self/task')):>8} {len(os.listdir('/proc/self/fd')):>5}   (before the first epoch)")
    rss = []
    for epoch in range(1, args.epochs + 1):
        t0 = time.perf_counter()
        images = 0
        for batch, _ in loader:
            images += batch.shape[0]
        gc.collect()
        rss.append(_status("VmRSS"))
        print(f"{epoch:>5} {images:>7} {time.perf_counter() - t0:>8.2f} {rss[-1]:>7} {_status('VmHWM'):>8} "
              f"{len(os.listdir('/proc/self/task')):>8} {len(os.listdir('/proc/self/fd')):>5}", flush=True)
    if len(rss) < 7:
        return 0
    # RSS after an epoch swings with the allocator's free lists; compare medians of windows, not two points.
    early, late = statistics.median(rss[1:6]), statistics.median(rss[-5:])
    growth = late - early
    print(f"soak: median RSS over epochs 2-6: {early:.0f} MB, over the last 5: {late:.0f} MB "
          f"(growth {growth:+.0f} MB; min..max over epochs 2..{len(rss)}: {min(rss[1:])}..{max(rss[1:])} MB; "
          f"tolerance {args.tolerance_mb} MB)")
    return 0 if growth <= args.tolerance_mb else 1


if __name__ == "__main__":
    sys.exit(main())
