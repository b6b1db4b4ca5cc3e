"""``decode_images(device="cuda")`` (spdl_torch/io/_cuda_batch.py): the CPU-only geometry arguments are
refused before any GPU work (so also without a device); on a CUDA device (tests marked ``cuda``) nvJPEG's
batches against the CPU path (PSNR), normalised output, bad samples, and the op's registration (opcheck)."""

import math

import pytest
import torch

import spdl_torch
from spdl_torch.io import decode_images
from spdl_torch._build_info import nvjpeg_build

from tests._utils import images
from tests._utils.images import encode_tensor, noise
from tests._utils.images import IMAGENET_MEAN, IMAGENET_STD


@pytest.mark.parametrize("kwargs, name", [
    (dict(vflip_prob=0.5), "vflip_prob"),
    (dict(max_size=300), "max_size"),
    (dict(geometry="random_crop", resize_shorter=64), "geometry"),
    (dict(color="gray"), "color"),
    (dict(interpolation="nearest"), "interpolation"),
])
def test_cpu_only_arguments_are_refused_on_cuda(kwargs, name):
    data = encode_tensor(noise((48, 64, 3)), "JPEG")
    args = dict(height=32, width=32, device="cuda")
    args.update(kwargs)
    with pytest.raises(ValueError, match=rf"device='cuda' does not support {name}"):
        decode_images([data], **args)


needs_nvjpeg = pytest.mark.skipif(not nvjpeg_build(), reason="built without nvJPEG")


MEAN, STD = IMAGENET_MEAN, IMAGENET_STD


def _jpegs(n, seed=0, size=(120, 160)):
    return [images.encode_tensor(images.upsampled_noise(size[0] + 8 * i, size[1], seed=seed + i, cell=12), "JPEG",
                                 quality=95) for i in range(n)]


def _psnr(a, b):
    mse = ((a.double() - b.double()) ** 2).mean().item()
    return math.inf if mse == 0 else 10 * math.log10(255.0**2 / mse)


@pytest.mark.cuda
@needs_nvjpeg
@pytest.mark.parametrize("geometry", ["eval", "train", "resize"])
def test_nvjpeg_path_against_the_cpu_path(geometry):
    data = _jpegs(6)
    seeds = torch.arange(100, 106)
    kw = dict(height=64, width=64, geometry=geometry, resize_shorter=72 if geometry == "eval" else 0,
              hflip_prob=0.5, seeds=seeds)
    cpu = spdl_torch.io.decode_images(data, dct_min_ratio=0, **kw).data
    gpu = spdl_torch.io.decode_images(data, device="cuda", **kw).data
    assert gpu.is_cuda and gpu.shape == cpu.shape and gpu.dtype == torch.uint8
    for i in range(len(data)):
        assert _psnr(gpu[i].cpu(), cpu[i]) >= 38.0, i


@pytest.mark.cuda
@needs_nvjpeg
def test_nvjpeg_normalised_output_and_bad_samples():
    data = _jpegs(3)
    out = spdl_torch.io.decode_images(data, height=32, width=32, resize_shorter=40, dtype=torch.float32, mean=MEAN,
                                      std=STD, device="cuda").data
    ref = spdl_torch.io.decode_images(data, height=32, width=32, resize_shorter=40, dtype=torch.float32, mean=MEAN,
                                      std=STD, dct_min_ratio=0).data
    assert (out.cpu() - ref).abs().mean().item() < 0.02
    bad = data[:1] + [images.encode_tensor(images.noise((8, 8, 3)), "PNG")]
    with pytest.raises(spdl_torch.DecodeError, match="JPEG only") as e:
        spdl_torch.io.decode_images(bad, height=8, width=8, device="cuda")
    assert e.value.sample_index == 1
    result = spdl_torch.io.decode_images(bad, height=8, width=8, device="cuda", strict=False)
    batch, ok = result.data, result.ok
    assert ok.tolist() == [True, False] and int(batch[1].abs().sum()) == 0


@pytest.mark.cuda
@needs_nvjpeg
def test_opcheck_decode_images_cuda():
    data = _jpegs(2)
    torch.library.opcheck(torch.ops.spdl_torch.decode_images_cuda, (data,),
                          dict(device_index=0, height=16, width=16, resize_shorter=20),
                          test_utils=("test_schema", "test_faketensor"))
