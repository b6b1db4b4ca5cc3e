"""The unfused remainder after a fused prefix: per sample vs once per batch, on real photos.

    python -m benchmarks.bench_remainder [--root data/imagenet_like] [--images 256] [--batch-size 32] [--reps 5]

Transform: ``RandomResizedCrop(224), RandomHorizontalFlip()`` (fused), then ``ColorJitter(0.4, 0.4, 0.4)``
(random: per sample, as torchvision) and ``ToDtype(float32, scale=True), Normalize(...)`` (not fused after
ColorJitter). In one thread (native pool and torch at 1 thread), milliseconds per batch of:

* ``fused + per-sample rest``: the plan, with the whole remainder per sample (what the datasets do),
* ``fused + batched tail``: ColorJitter per sample, then ToDtype + Normalize once on the stacked batch
  (measured 5-12 % slower on 2 cores: not used),
* ``per-sample torchvision``: ``decode_image`` + the whole v2 transform per sample (torch DataLoader's work).

Then the same for a deterministic remainder (``Resize(256), CenterCrop(224)`` fused, ``ToDtype(float32)``
without scale + ``Normalize`` on the 0..255 scale unfused): per sample vs once on the batch (what the
datasets do: a deterministic head of the remainder runs on the batch, 4 samples per call, which stays one
tensor), and the head on the whole batch in one call.

Prints one line per variant; nothing is asserted.
"""

from __future__ import annotations

import argparse
import time

import torch
from torchvision.transforms import v2

from benchmarks.contenders import MEAN, STD, list_images


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--root", default="data/imagenet_like")
    p.add_argument("--images", type=int, default=256)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--torch-threads", type=int, default=1, help="torch intra-op threads (default 1, as in loaders)")
    p.add_argument("--reps", type=int, default=5, help="interleaved repetitions (min and median printed)")
    args = p.parse_args()

    from spdl_torch.io import decode_image, read_file, set_num_threads
    from spdl_torch.transforms import FusedPlan, fuse

    torch.set_num_threads(args.torch_threads)
    set_num_threads(1)
    paths = list_images(args.root)[0][: args.images]
    datas = [read_file(p) for p in paths]
    t = v2.Compose([v2.RandomResizedCrop(224), v2.RandomHorizontalFlip(), v2.ColorJitter(0.4, 0.4, 0.4),
                    v2.ToDtype(torch.float32, scale=True), v2.Normalize(MEAN, STD)])
    plan = fuse(t)
    jitter_only = FusedPlan(op_kwargs=plan.op_kwargs, fused=plan.fused, rest=v2.Compose(plan.rest.transforms[:1]),
                            random=plan.random)
    tail = v2.Compose(plan.rest.transforms[1:])
    bs = args.batch_size
    batches = [datas[i:i + bs] for i in range(0, len(datas), bs)]

    # A deterministic remainder: ToDtype without scale (no op equivalent) + Normalize on the 0..255 scale.
    t2 = v2.Compose([v2.Resize(256), v2.CenterCrop(224), v2.ToDtype(torch.float32),
                     v2.Normalize([255 * m for m in MEAN], [255 * s for s in STD])])
    plan2 = fuse(t2)
    per_sample2 = FusedPlan(op_kwargs=plan2.op_kwargs, fused=plan2.fused, rest=plan2.rest, random=plan2.random)
    bare2 = FusedPlan(op_kwargs=plan2.op_kwargs, fused=plan2.fused, rest=None, random=plan2.random)
    variants = {
        "jitter: fused + per-sample rest": lambda b: torch.stack(plan(b)),
        "jitter: fused + batched tail": lambda b: tail(torch.stack(jitter_only(b))),
        "jitter: per-sample torchvision": lambda b: torch.stack([t(decode_image(d)) for d in b]),
        "deterministic: per-sample rest": lambda b: torch.stack(per_sample2(b)),
        "deterministic: batched head (chunks of 4)": plan2,
        "deterministic: whole batch at once": lambda b: plan2.batched(bare2(b)),
        "deterministic: per-sample torchvision": lambda b: torch.stack([t2(decode_image(d)) for d in b]),
    }

    def measure(fn) -> float:
        t0 = time.perf_counter()
        for b in batches:
            fn(b)
        return 1e3 * (time.perf_counter() - t0) / len(batches)

    for fn in variants.values():
        fn(batches[0])  # warm-up
    times: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(args.reps):  # interleaved repetitions: load changes hit every variant alike
        for name, fn in variants.items():
            times[name].append(measure(fn))
    for name, ts in times.items():
        ts.sort()
        print(f"{name:<42} min {ts[0]:7.1f}  median {ts[len(ts) // 2]:7.1f} ms/batch of {bs}"
              f"  ({ts[0] / bs:.2f} ms/image at best)")
    set_num_threads(0)


if __name__ == "__main__":
    main()
