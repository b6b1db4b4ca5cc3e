"""Randomness per iterator (spdl_torch/dataloader/_iterator.py): reproducible random transforms with a fixed
``generator=`` seed, global RNG draws in workers as torch's, and an epoch that travels with each iterator
instead of living on the shared dataset."""

import random

import numpy as np
import pytest
import torch
import torch.utils.data as tud
from PIL import Image
from torchvision.transforms import v2

from spdl_torch.datasets import ImageFolder

from tests._utils.loaders import OURS, TORCH, both

N_IMAGES = 12


@pytest.fixture(scope="module")
def image_root(tmp_path_factory):
    """root/{a,b}/*.png: 12 noise images of 40x48 (two classes)."""
    root = tmp_path_factory.mktemp("rrc") / "root"
    rng = np.random.default_rng(0)
    for i in range(N_IMAGES):
        d = root / ("a" if i % 2 else "b")
        d.mkdir(parents=True, exist_ok=True)
        Image.fromarray(rng.integers(0, 256, (40, 48, 3), dtype=np.uint8), "RGB").save(d / f"{i:02d}.png")
    return root


def _crops():
    return v2.Compose([v2.RandomResizedCrop(16, scale=(0.05, 0.5)), v2.RandomHorizontalFlip()])


def _images(loader, epochs=1):
    return [torch.cat([batch[0] for batch in loader]) for _ in range(epochs)]


# -- item 5 (a): fused datasets with seed=None follow the loader's generator --------------------------------


def _run_fused(root, generator_seed, global_seed):
    torch.manual_seed(global_seed)  # a second run does not see the same global RNG (it was not seeded)
    ds = ImageFolder(root, transform=_crops(), seed=None)
    assert ds.plan is not None and ds.plan.random  # the fused path, with random crops
    loader = OURS(ds, batch_size=4, num_workers=2, generator=torch.Generator().manual_seed(generator_seed))
    return _images(loader, epochs=2)


def test_fused_seed_none_same_generator_same_crops(image_root):
    first = _run_fused(image_root, generator_seed=7, global_seed=1)
    second = _run_fused(image_root, generator_seed=7, global_seed=2)
    assert first[0].shape == (N_IMAGES, 3, 16, 16)
    assert not torch.equal(first[0], first[1])  # epoch 1 crops differently from epoch 0 ...
    assert all(torch.equal(a, b) for a, b in zip(first, second))  # ... and both epochs repeat exactly


def test_fused_seed_none_other_generator_other_crops(image_root):
    first = _run_fused(image_root, generator_seed=7, global_seed=1)
    other = _run_fused(image_root, generator_seed=8, global_seed=1)
    differing = [not torch.equal(a, b) for a, b in zip(first[0], other[0])]
    assert sum(differing) >= N_IMAGES - 2  # (sample order is the same: shuffle=False)


# -- item 5 (b): unfused transforms drawing from the global RNGs (opt-in worker_rng="per_worker") ------------


class GlobalDraws(tud.Dataset):
    """Item ``i`` is ``[torch.rand(1), random.random()]``: drawn from the process's global RNGs, as unfused
    random transforms (ColorJitter, RandAugment, ...) do."""

    def __len__(self):
        return 8

    def __getitem__(self, i):
        return torch.tensor([torch.rand(1).item(), random.random()], dtype=torch.float64)


def _global_draws(DL, seed, **kwargs):
    loader = DL(GlobalDraws(), batch_size=2, num_workers=2, generator=torch.Generator().manual_seed(seed), **kwargs)
    return torch.cat(list(loader))


@pytest.fixture(scope="module")
def torch_global_draws():
    """torch's values: worker k's globals are seeded with base_seed + k, batch i is loaded by worker i % 2."""
    return _global_draws(TORCH, 21)


@both()
def test_global_rng_draws_repeat_and_match_torch(DL, torch_global_draws):
    kwargs = {"worker_rng": "per_worker"} if DL is OURS else {}
    first = _global_draws(DL, 21, **kwargs)
    torch.manual_seed(99)
    random.seed(99)  # the consumer's globals are elsewhere: the draws must not depend on them
    second = _global_draws(DL, 21, **kwargs)
    assert first.shape == (8, 2)
    assert torch.equal(first, second)
    assert torch.equal(first, torch_global_draws)


# -- item 6: the epoch travels with each iterator -----------------------------------------------------------


@pytest.fixture(scope="module")
def seeded_folder(image_root):
    return ImageFolder(image_root, transform=_crops(), seed=5)


@both()
@pytest.mark.parametrize("num_workers", [0, 2])
def test_other_loaders_epoch_does_not_change_crops(DL, num_workers, seeded_folder):
    kw = dict(batch_size=1, num_workers=num_workers)
    alone = _images(DL(seeded_folder, **kw))[0]
    a, b = DL(seeded_folder, **kw), DL(seeded_folder, **kw)
    _images(b)  # b's epoch 0
    it = iter(a)
    got = [next(it)[0] for _ in range(2)]
    _images(b)  # b's epoch 1, between a's batches
    got += [batch[0] for batch in it]
    assert torch.equal(torch.cat(got), alone)


@both()
def test_second_iterator_does_not_change_first_iterators_crops(DL, seeded_folder):
    alone = _images(DL(seeded_folder, batch_size=1))[0]
    loader = DL(seeded_folder, batch_size=1)
    first = iter(loader)
    got = [next(first)[0]]
    second = iter(loader)
    next(second)
    got += [batch[0] for batch in first]
    assert torch.equal(torch.cat(got), alone)
