"""The project's main job: one pass over an image folder with spdl_torch and one with torch, compared.

    python examples/main_job.py --root data/imagenet_like [--batch-size 32] [--num-workers 2]
        [--limit N] [--passes 1]

``--root`` is the folder written by ``python -m tools.prepare_data`` (its ``train``
sub-folder is used when present) or any torchvision ``ImageFolder`` root. Both loaders produce the
same batches: ``float32`` tensors ``[B, 3, 224, 224]``, resized so that the shorter side is 256 px,
center-cropped to 224 x 224 px and normalized with the ImageNet mean and standard deviation.

* spdl_torch: ``spdl_torch.DataLoader`` (worker threads) over ``spdl_torch.datasets.ImageFolder``, which
  fuses the ``torchvision.transforms.v2`` pipeline into one native ``decode_images`` call per batch
  (decode, resize, crop, normalize straight into the batch tensor).
* torch: ``torch.utils.data.DataLoader`` (worker processes) over ``torchvision.datasets.ImageFolder``,
  which decodes with Pillow, followed by the classic Pillow-based ``torchvision.transforms``.

The first batch of each pass is a warm-up (worker start-up, caches): its latency is reported on its own
and the throughput counts the images after it. With ``--passes`` > 1 the median pass is reported.
"""

from __future__ import annotations

import argparse
import os
import time

import torch
import torchvision
from torch.utils.data import Subset
from torchvision import transforms
from torchvision.transforms import v2
from tqdm import tqdm

import spdl_torch
import spdl_torch.datasets

MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]  # ImageNet, per RGB channel, in [0, 1]


def build_loaders(root: str, batch_size: int, num_workers: int, limit: int | None) -> dict:
    """The two loaders to compare, by name, over the first ``limit`` images of ``root`` (all if None)."""
    spdl_transform = v2.Compose([
        v2.Resize(256, antialias=True),
        v2.CenterCrop(224),
        v2.ToDtype(torch.float32, scale=True),
        v2.Normalize(MEAN, STD),
    ])
    pil_transform = transforms.Compose([
        transforms.Resize(256),
        transforms.CenterCrop(224),
        transforms.ToTensor(),
        transforms.Normalize(MEAN, STD),
    ])
    spdl_ds = spdl_torch.datasets.ImageFolder(root, transform=spdl_transform)
    torch_ds = torchvision.datasets.ImageFolder(root, transform=pil_transform)
    if limit is not None:
        spdl_ds, torch_ds = Subset(spdl_ds, range(limit)), Subset(torch_ds, range(limit))
    return {
        "spdl_torch": spdl_torch.DataLoader(spdl_ds, batch_size=batch_size, num_workers=num_workers),
        "torch": torch.utils.data.DataLoader(torch_ds, batch_size=batch_size, num_workers=num_workers),
    }


def run_pass(name: str, loader) -> dict:
    """Iterate ``loader`` once with a progress bar.

    Returns the first batch (``first``), its latency in seconds (``first_s``), and the number of images
    after it (``images``), the seconds they took (``seconds``) and their rate (``ips``, images/s).
    """
    with tqdm(total=len(loader.dataset), unit="img", desc=name, leave=False) as bar:
        start = time.perf_counter()
        batches = iter(loader)
        first = next(batches)
        bar.update(len(first[1]))
        warm = time.perf_counter()
        images = 0
        for _, labels in batches:
            images += len(labels)
            bar.update(len(labels))
        end = time.perf_counter()
    seconds = end - warm
    return {"first": first, "first_s": warm - start, "images": images, "seconds": seconds,
            "ips": images / seconds if seconds > 0 else float("nan")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", required=True, help="prepared folder (its train/ is used) or ImageFolder root")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--num-workers", type=int, default=2, help="threads (spdl_torch) / processes (torch)")
    parser.add_argument("--limit", type=int, default=None, help="only the first N images, for a quick check")
    parser.add_argument("--passes", type=int, default=1, help="passes per loader; the median is reported")
    args = parser.parse_args()
    root = os.path.join(args.root, "train") if os.path.isdir(os.path.join(args.root, "train")) else args.root

    loaders = build_loaders(root, args.batch_size, args.num_workers, args.limit)
    results = {}
    for name, loader in loaders.items():
        passes = [run_pass(name, loader) for _ in range(args.passes)]
        results[name] = sorted(passes, key=lambda r: r["seconds"])[len(passes) // 2]

    (spdl_x, spdl_y), (torch_x, torch_y) = results["spdl_torch"]["first"], results["torch"]["first"]
    assert torch.equal(spdl_y, torch_y), "the two loaders disagree on the labels of the first batch"
    print(f"{len(loaders['torch'].dataset)} images from {root}, batch size {args.batch_size}, "
          f"{args.num_workers} workers, median of {args.passes} pass(es); first batch "
          f"{tuple(spdl_x.shape)}, mean |spdl_torch - torch| = {(spdl_x - torch_x).abs().mean():.4f}")
    print(f"{'loader':<12}{'images':>8}{'1st batch s':>13}{'seconds':>10}{'images/s':>10}")
    for name, r in results.items():
        print(f"{name:<12}{r['images']:>8}{r['first_s']:>13.2f}{r['seconds']:>10.2f}{r['ips']:>10.1f}")
    print(f"spdl_torch / torch: {results['spdl_torch']['ips'] / results['torch']['ips']:.2f}x images/s")


if __name__ == "__main__":
    main()
