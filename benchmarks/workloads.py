"""What the loader benchmarks' workloads share: the eval and train recipes' sizes and torchvision transforms, and
ImageNet's normalisation (the one place the benchmarks hold it; ``spdl_torch.deploy``'s modules default to it). ``contenders.py``,
``peers.py`` and ``recipes.py`` import it; it imports none of them."""

from __future__ import annotations

import torch

__all__ = ["JITTER", "MEAN", "RATIO", "RESIZE", "SCALE", "SIZE", "STD", "classic_transform", "v2_transform"]

SIZE = 224
RESIZE = 256
SCALE = (0.08, 1.0)
RATIO = (3.0 / 4.0, 4.0 / 3.0)
JITTER = (0.4, 0.4, 0.4)
MEAN = (0.485, 0.456, 0.406)  # ImageNet, per RGB channel, in [0, 1]
STD = (0.229, 0.224, 0.225)


def v2_transform(mode: str, variant: str = ""):
    """The v2 recipe of ``mode``; ``variant`` ``"crop"``: Resize(256) + RandomCrop(224) + flip instead of the
    geometry; ``"jitter"``: ColorJitter after the geometry."""
    from torchvision.transforms import v2

    if variant == "crop":
        geometry = [v2.Resize(RESIZE, antialias=True), v2.RandomCrop(SIZE), v2.RandomHorizontalFlip()]
    elif mode == "eval":
        geometry = [v2.Resize(RESIZE, antialias=True), v2.CenterCrop(SIZE)]
    else:
        geometry = [v2.RandomResizedCrop(SIZE, scale=SCALE, ratio=RATIO, antialias=True), v2.RandomHorizontalFlip()]
    if variant == "jitter":
        geometry.append(v2.ColorJitter(*JITTER))
    return v2.Compose([*geometry, v2.ToDtype(torch.float32, scale=True), v2.Normalize(MEAN, STD)])


def classic_transform(mode: str):
    from torchvision import transforms

    if mode == "eval":
        geometry = [transforms.Resize(RESIZE), transforms.CenterCrop(SIZE)]
    else:
        geometry = [transforms.RandomResizedCrop(SIZE, scale=SCALE, ratio=RATIO), transforms.RandomHorizontalFlip()]
    return transforms.Compose([*geometry, transforms.ToTensor(), transforms.Normalize(MEAN, STD)])
