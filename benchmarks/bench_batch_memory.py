"""CPU per decode_images batch with a fresh mapping per batch (pool capacity 0) vs a recycled buffer.

    python benchmarks/bench_batch_memory.py [--root data/imagenet_like/train] [--dtype float32|uint8]
        [--rounds 6] [--calls 10]

Decodes the same 32 photos (resize 256, centre crop 224, and for float32 normalization) ``--calls`` times
per round, alternating the two capacities round by round; prints the median and range of the process CPU
time per batch (all native pool threads included). The difference is the cost of mapping, faulting and
unmapping a batch's memory (see csrc/ops/batch_memory.cpp).
"""

from __future__ import annotations

import argparse
import glob
import os
import statistics
import time

import torch

import spdl_torch.io as io
from workloads import MEAN, STD

MIB = 2**20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", default="data/imagenet_like/train")
    parser.add_argument("--dtype", choices=("float32", "uint8"), default="float32")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--calls", type=int, default=10)
    args = parser.parse_args()
    files = sorted(glob.glob(os.path.join(args.root, "*", "*")))[:32]
    datas = [io.read_file(f) for f in files]
    kw = dict(height=224, width=224, geometry="eval", resize_shorter=256, dtype=getattr(torch, args.dtype))
    if args.dtype == "float32":
        kw.update(mean=list(MEAN), std=list(STD))
    nbytes = io.decode_images(datas, **kw).data.untyped_storage().nbytes()
    settings = {"fresh mapping (capacity 0)": 0, "recycled (capacity 2 batches)": 2 * nbytes + 2 * MIB}
    old = io.batch_memory_stats()["capacity"]

    def run(capacity: int, calls: int) -> float:
        io.set_batch_memory_capacity(capacity)
        t0 = time.process_time()
        for _ in range(calls):
            batch = io.decode_images(datas, **kw).data
            del batch
        return (time.process_time() - t0) / calls * 1000

    run(settings["recycled (capacity 2 batches)"], 3)  # warm-up: thread pool, decoder state
    times: dict[str, list[float]] = {name: [] for name in settings}
    for _ in range(args.rounds):
        for name, capacity in settings.items():
            times[name].append(run(capacity, args.calls))
    io.set_batch_memory_capacity(old)
    print(f"{len(datas)} images, {args.dtype}, batch of {nbytes / MIB:.1f} MiB; CPU ms per batch:")
    for name, v in times.items():
        print(f"  {name:<32} median {statistics.median(v):6.2f}  range {min(v):.2f}-{max(v):.2f}")


if __name__ == "__main__":
    main()
