"""Train a small classifier on the real-photo folder, switching only the DataLoader class.

    python examples/train_classifier.py [--root data/imagenet_like/train] [--loader spdl_torch|torch|both]
        [--steps 300] [--model tiny|resnet18] [--batch-size 32] [--num-workers 2] [--size 112]

The dataset object (``spdl_torch.datasets.ImageFolder``: native JPEG decoding + random resized crop and
flip from ``torchvision.transforms.v2``), the model (random init, CPU), the optimizer and the seed are
the same for both loaders; ``--loader`` changes only which ``DataLoader`` class iterates the dataset:
``spdl_torch.DataLoader`` (worker threads) or ``torch.utils.data.DataLoader`` (worker processes).

The tqdm bar shows the loss and images/s. At the end one line per loader reports the data-wait time per
step (the time the training loop spent blocked in ``next(loader)``), and ``--loader both`` runs both
and compares them (torch first: forking worker processes after spdl_torch's native decode thread
pool has started in this process hangs the workers' decode).
"""

from __future__ import annotations

import argparse
import os
import time

import torch
import torch.nn as nn
import torch.utils.data
from torchvision.transforms import v2
from tqdm import tqdm

import spdl_torch
import spdl_torch.datasets

MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]  # ImageNet, per RGB channel, in [0, 1]
LOADERS = {"spdl_torch": spdl_torch.DataLoader, "torch": torch.utils.data.DataLoader}


def tiny_cnn(num_classes: int) -> nn.Module:
    def block(cin: int, cout: int) -> nn.Module:
        return nn.Sequential(nn.Conv2d(cin, cout, 3, stride=2, padding=1, bias=False), nn.BatchNorm2d(cout),
                             nn.ReLU(inplace=True))

    return nn.Sequential(block(3, 16), block(16, 32), block(32, 64), block(64, 128),
                         nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(128, num_classes))


def make_model(name: str, num_classes: int) -> nn.Module:
    if name == "resnet18":
        import torchvision

        return torchvision.models.resnet18(num_classes=num_classes)
    return tiny_cnn(num_classes)


def train(loader_name: str, dataset, args) -> dict:
    torch.manual_seed(args.seed)
    model = make_model(args.model, len(dataset.classes))
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=1e-4)
    loss_fn = nn.CrossEntropyLoss()
    loader = LOADERS[loader_name](  # the only line that differs between the two runs
        dataset, batch_size=args.batch_size, shuffle=True, num_workers=args.num_workers, drop_last=True,
        persistent_workers=args.num_workers > 0, generator=torch.Generator().manual_seed(args.seed),
    )
    wait_s, steps, images = 0.0, 0, 0
    t_start = time.perf_counter()
    first_batch_s = None
    with tqdm(total=args.steps, desc=loader_name, unit="step") as bar:
        while steps < args.steps:
            it = iter(loader)
            while steps < args.steps:
                t0 = time.perf_counter()
                try:
                    x, y = next(it)
                except StopIteration:
                    break
                waited = time.perf_counter() - t0
                if first_batch_s is None:
                    first_batch_s = waited  # start-up, reported apart
                else:
                    wait_s += waited
                loss = loss_fn(model(x), y)
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
                steps += 1
                images += len(y)
                elapsed = time.perf_counter() - t_start
                bar.set_postfix(loss=f"{loss.item():.3f}", img_s=f"{images / elapsed:.0f}")
                bar.update(1)
            del it
    total = time.perf_counter() - t_start
    del loader
    return {"steps": steps, "images_s": images / total, "first_batch_s": first_batch_s,
            "wait_ms_per_step": 1000 * wait_s / max(1, steps - 1), "final_loss": loss.item()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", default="data/imagenet_like/train")
    parser.add_argument("--loader", choices=["spdl_torch", "torch", "both"], default="both")
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--model", choices=["tiny", "resnet18"], default="tiny")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--num-workers", type=int, default=2)
    parser.add_argument("--size", type=int, default=112, help="training crop size in pixels")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if not os.path.isdir(args.root):
        raise SystemExit(f"{args.root} not found: run `python -m tools.prepare_data` (or make demo) first")

    transform = v2.Compose([
        v2.RandomResizedCrop(args.size, antialias=True),
        v2.RandomHorizontalFlip(),
        v2.ToDtype(torch.float32, scale=True),
        v2.Normalize(MEAN, STD),
    ])
    dataset = spdl_torch.datasets.ImageFolder(args.root, transform=transform)
    # torch first: its fork()ed workers must start before spdl_torch's native decode thread pool exists
    # in this process (a fork after that pool started deadlocks the child's first decode).
    names = ["torch", "spdl_torch"] if args.loader == "both" else [args.loader]
    results = {name: train(name, dataset, args) for name in names}
    for name, r in results.items():
        print(f"{name:<11} {r['steps']} steps, {r['images_s']:.0f} images/s, first batch {r['first_batch_s']:.2f} s, "
              f"data wait {r['wait_ms_per_step']:.1f} ms/step, final loss {r['final_loss']:.3f}")
    if len(results) == 2:
        a, b = results["spdl_torch"]["wait_ms_per_step"], results["torch"]["wait_ms_per_step"]
        print(f"data wait per step: spdl_torch {a:.1f} ms vs torch {b:.1f} ms "
              f"({b / a:.1f}x less with spdl_torch)" if a > 0 else f"data wait per step: spdl_torch {a:.1f} ms vs "
              f"torch {b:.1f} ms")


if __name__ == "__main__":
    main()
