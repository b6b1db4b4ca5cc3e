"""``spdl_torch.cuda.normalize`` (``ToDtype(scale=True)`` + ``Normalize`` after the copy) against torchvision's
transforms, bit for bit: torch's operations on the CPU here (the same ops run on the GPU), the one-pass kernel on
a CUDA device (tests marked ``cuda``), and the kernel's op registration (opcheck)."""

import pytest
import torch
from torchvision.transforms import v2

from spdl_torch import cuda
from spdl_torch._build_info import cuda_build
from tests._utils.images import IMAGENET_MEAN, IMAGENET_STD

MEAN, STD = IMAGENET_MEAN, IMAGENET_STD


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("channels_last", [False, True])
@pytest.mark.parametrize("normalize", [True, False])
def test_normalize_is_torchvisions_todtype_and_normalize_bit_for_bit(dtype, channels_last, normalize):
    g = torch.Generator().manual_seed(1)
    x = torch.randint(0, 256, (4, 3, 9, 7), dtype=torch.uint8, generator=g)
    if channels_last:
        x = x.contiguous(memory_format=torch.channels_last)
    ref = v2.ToDtype(dtype, scale=True)(x)
    if normalize:
        ref = v2.Normalize(MEAN, STD)(ref)
    out = cuda.normalize(x, dtype, MEAN if normalize else None, STD if normalize else None)
    assert out.dtype == dtype and out.shape == x.shape
    assert torch.equal(out.view(torch.int16 if dtype == torch.bfloat16 else torch.int32),
                       ref.view(torch.int16 if dtype == torch.bfloat16 else torch.int32))
    assert out.is_contiguous(memory_format=torch.channels_last) == channels_last


def test_normalize_checks():
    x = torch.zeros((1, 3, 2, 2), dtype=torch.uint8)
    with pytest.raises(ValueError, match="float32 or bfloat16"):
        cuda.normalize(x, torch.uint8)
    with pytest.raises(ValueError, match="both mean and std"):
        cuda.normalize(x, torch.float32, MEAN)
    with pytest.raises(ValueError, match="std evaluated to zero"):
        cuda.normalize(x, torch.float32, MEAN, (1.0, 0.0, 1.0))


needs_kernels = pytest.mark.skipif(not cuda_build(), reason="spdl_torch's CPU variant: no CUDA kernels")


@pytest.mark.cuda
@needs_kernels
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("channels_last", [False, True])
def test_normalize_kernel_is_torchs_ops_bit_for_bit(dtype, channels_last):
    x = torch.randint(0, 256, (8, 3, 67, 45), dtype=torch.uint8, device="cuda")
    if channels_last:
        x = x.contiguous(memory_format=torch.channels_last)
    ref = cuda.normalize(x, dtype, MEAN, STD, impl="torch")
    out = cuda.normalize(x, dtype, MEAN, STD, impl="kernel")
    torch.cuda.synchronize()
    bits = torch.int16 if dtype == torch.bfloat16 else torch.int32
    assert torch.equal(out.view(bits), ref.view(bits))
    assert out.is_contiguous(memory_format=torch.channels_last) == channels_last
    plain = cuda.normalize(x, dtype, impl="kernel")
    assert torch.equal(plain.view(bits), cuda.normalize(x, dtype).view(bits))


@pytest.mark.cuda
@needs_kernels
def test_opcheck_normalize_batch():
    x = torch.randint(0, 256, (2, 3, 8, 8), dtype=torch.uint8, device="cuda")
    torch.library.opcheck(torch.ops.spdl_torch.normalize_batch, (x,),
                          dict(mean=list(MEAN), std=list(STD), dtype=torch.float32))
