"""One timed pass of a DataLoader in a fresh process, for side-by-side runs of two checkouts (A/B) and the
loader's modes; prints one JSON line.

    python benchmarks/bench_loader_ab.py REPO MODE ROOT [--hash]

REPO: a checkout whose spdl_torch is imported (built in place); ROOT: data/imagenet_like/train. MODE:
``eval`` (the fused eval transform, all images, spdl_torch.DataLoader), ``recipe_<name>`` (a training recipe of
``benchmarks/recipes.py``, e.g. ``recipe_ta_v2``, ``recipe_am_v2``, ``recipe_timm_train``, fused, on 640 images,
spdl_torch.DataLoader), ``jitter_shared`` / ``jitter_per_worker`` / ``jitter_torch`` (RandomResizedCrop fused +
ColorJitter per sample from torch's global RNG on 640 images: spdl_torch.DataLoader with worker_rng="shared" /
"per_worker", torch's DataLoader). Batch 32, 2 workers, ``torch.manual_seed(0)`` first.
Run the contenders interleaved, several repetitions, and compare medians: on 2 vCPUs single passes spread by
about +-15 %. ``--hash`` adds ``sha256``, a hash of every batch's bytes (images and labels, in order): for
``eval`` and the recipes the same bytes on every run, so two checkouts that give it equal load the same batches
(the jitter modes draw from the global RNG in the order the threads run, so their hash varies); hashing costs
the consumer CPU, so time passes without it.
"""
import argparse
import gc
import hashlib
import json
import os
import resource
import sys
import time

parser = argparse.ArgumentParser(description="One timed pass of a DataLoader (see the module docstring).")
parser.add_argument("repo", help="the checkout whose spdl_torch is imported (built in place)")
parser.add_argument("mode", help="eval, recipe_<name>, jitter_shared, jitter_per_worker or jitter_torch")
parser.add_argument("root", help="the image folder, e.g. data/imagenet_like/train")
parser.add_argument("--hash", action="store_true", help="add sha256, the hash of every batch's bytes in order")
args = parser.parse_args()
repo, mode, root = args.repo, args.mode, args.root
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # this checkout's benchmarks
from benchmarks import recipes  # noqa: E402  (imports no spdl_torch)

MODES = ("eval", "jitter_shared", "jitter_per_worker", "jitter_torch", *(f"recipe_{r}" for r in recipes.RECIPES))
if mode not in MODES:
    parser.error(f"mode {mode!r}: expected one of {', '.join(MODES)}")

sys.path.insert(0, repo)  # the checkout under test, before spdl_torch is imported
import torch  # noqa: E402
from torchvision.transforms import v2  # noqa: E402

import spdl_torch  # noqa: E402
from spdl_torch.datasets import ImageFolder  # noqa: E402
from benchmarks.workloads import MEAN, STD  # noqa: E402

torch.manual_seed(0)
if mode.startswith("eval"):
    tf = v2.Compose([v2.Resize(256, antialias=True), v2.CenterCrop(224), v2.ToDtype(torch.float32, scale=True),
                     v2.Normalize(MEAN, STD)])
    limit = None
elif mode.startswith("recipe_"):
    tf = recipes.transform(mode.removeprefix("recipe_"))
    limit = 640
else:  # an unfused remainder drawing from torch's global RNG
    tf = v2.Compose([v2.RandomResizedCrop(224, antialias=True), v2.ColorJitter(0.4, 0.4, 0.4)])
    limit = 640
ds = ImageFolder(root, transform=tf)
if limit:
    ds = torch.utils.data.Subset(ds, range(limit))
kw = {}
if mode.endswith("per_worker"):
    kw["worker_rng"] = "per_worker"
DL = torch.utils.data.DataLoader if mode.endswith("torch") else spdl_torch.DataLoader
loader = DL(ds, batch_size=32, num_workers=2, **kw)
gc.collect()  # the first full collection after import (0.1-0.2 s) before the window, not in it by chance
r0, c0 = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
digest = hashlib.sha256()
t0, n = time.perf_counter(), 0
for x, y in loader:
    n += len(y)
    if args.hash:
        digest.update(x.contiguous().numpy().tobytes())
        digest.update(y.numpy().tobytes())
dt = time.perf_counter() - t0
r1, c1 = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
cpu = (r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime) + (c1.ru_utime + c1.ru_stime - c0.ru_utime - c0.ru_stime)
print(json.dumps({"repo": repo, "mode": mode, "images": n, "images_per_s": n / dt, "cpu_ms_per_image": 1000 * cpu / n,
                  **({"sha256": digest.hexdigest()} if args.hash else {})}))
