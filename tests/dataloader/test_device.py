"""``DataLoader(pin_memory=True)`` and ``DataLoader(device="cuda")`` on a CUDA device: pinned batches, whose
storage the loader keeps, and the device path equal to the CPU loader's batches. The stream bookkeeping
without a device: tests/cuda/test_transfer.py."""

import pytest
import torch
from torchvision.transforms import v2

import spdl_torch

from tests._utils import images
from tests._utils.images import IMAGENET_MEAN, IMAGENET_STD

pytestmark = pytest.mark.cuda  # skipped without a CUDA device (tests/conftest.py)

MEAN, STD = IMAGENET_MEAN, IMAGENET_STD


def _jpegs(n, seed=0, size=(120, 160)):
    return [images.encode_tensor(images.upsampled_noise(size[0] + 8 * i, size[1], seed=seed + i, cell=12), "JPEG",
                                 quality=95) for i in range(n)]


def test_decode_images_pin_memory_is_pinned_and_the_loader_keeps_that_storage(image_folder, tmp_path):
    batch = spdl_torch.io.decode_images(_jpegs(2), height=16, width=16, pin_memory=True).data
    assert batch.is_pinned()
    image_folder(["a"], 8, lambda rng, c, k: images.upsampled_noise(30, 40, seed=rng))
    ds = spdl_torch.datasets.ImageFolder(str(tmp_path), transform=v2.Compose([v2.Resize(16), v2.CenterCrop(16)]))
    for x, _ in spdl_torch.DataLoader(ds, batch_size=4, num_workers=2, pin_memory=True):
        assert x.is_pinned()


def test_loader_on_cuda_matches_the_cpu_loader(image_folder, tmp_path):
    image_folder(["a", "b"], 6, lambda rng, c, k: images.upsampled_noise(40 + k, 50, seed=rng), quality=95)
    t = v2.Compose([v2.RandomResizedCrop(24), v2.RandomHorizontalFlip(), v2.ToDtype(torch.float32, scale=True),
                    v2.Normalize(MEAN, STD)])
    ds = spdl_torch.datasets.ImageFolder(str(tmp_path), transform=t, seed=3)
    gpu = list(spdl_torch.DataLoader(ds, batch_size=4, num_workers=2, device="cuda"))
    cpu = list(spdl_torch.DataLoader(ds, batch_size=4, num_workers=2))
    for (x, y), (rx, ry) in zip(gpu, cpu):
        assert x.is_cuda and x.dtype == torch.float32 and torch.equal(y.cpu(), ry)
        assert (x.cpu() - rx).abs().max().item() <= 1.0 / 255 / min(STD) + 1e-5
