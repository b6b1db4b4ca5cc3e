"""ToDtype + Normalize after the copy: spdl_torch.cuda.normalize against torchvision's transforms (bit for bit,
on the CPU; the same torch ops run on the GPU), the plan split (which transforms move to the device), the
marks that carry a batch's finish to the transfer stage, and on a CUDA device the normalisation kernel bit
for bit against torch's ops (tests marked ``cuda``)."""

import gc

import pytest
import torch
from torchvision.transforms import v2

from spdl_torch import cuda, transforms
from spdl_torch.cuda._finish import run_plan

from tests._utils import images

MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)


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


def _train(dtype=torch.float32, extra=()):
    return v2.Compose([v2.RandomResizedCrop(16), v2.RandomHorizontalFlip(), v2.ToDtype(dtype, scale=True),
                       v2.Normalize(MEAN, STD), *extra])


def test_split_moves_the_fused_conversion_to_the_device():
    plan = transforms.fuse(_train())
    assert plan.op_kwargs["dtype"] == torch.float32 and plan.op_kwargs["mean"] == MEAN
    host, finish = cuda.split_plan(plan)
    assert "dtype" not in host.op_kwargs and "mean" not in host.op_kwargs and "std" not in host.op_kwargs
    assert host.op_kwargs["height"] == 16 and host.random
    assert finish == cuda.DeviceFinish(dtype=torch.float32, mean=MEAN, std=STD)
    assert plan.op_kwargs["dtype"] == torch.float32  # the dataset's own plan is unchanged


def test_split_keeps_per_sample_remainders_and_uint8_plans_on_the_host():
    per_sample = transforms.fuse(_train(extra=[v2.RandomPerspective(p=1.0)]))
    assert per_sample.per_sample is not None
    assert cuda.split_plan(per_sample) == (per_sample, None)
    uint8 = transforms.fuse(v2.Compose([v2.Resize(20), v2.CenterCrop(16)]))
    assert cuda.split_plan(uint8) == (uint8, None)


def test_split_moves_a_batched_normalize():
    # ToDtype fused, the second Normalize runs once per batch: both move
    plan = transforms.fuse(_train(extra=[v2.Normalize((0.5,) * 3, (2.0,) * 3)]))
    assert plan.batched is not None and plan.per_sample is None
    host, finish = cuda.split_plan(plan)
    assert host.batched is None and finish.batched is plan.batched


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_host_plan_plus_finish_equals_torchvision_order(dtype):
    """uint8 decode + the device finish is bit for bit ToDtype + Normalize of the uint8 batch (torchvision's
    order), and within one uint8 level of the plan that normalises on the CPU (which does not round to uint8)."""
    datas = [images.encode_tensor(images.upsampled_noise(40 + 8 * i, 50, seed=i), "JPEG", quality=95)
             for i in range(3)]
    seeds = torch.tensor([11, 12, 13])
    plan = transforms.fuse(_train(dtype))
    host, finish = cuda.split_plan(plan)
    u8 = run_plan(host, datas, seeds, max_pixels=None)
    assert u8.dtype == torch.uint8
    out = finish(u8)
    ref = v2.Normalize(MEAN, STD)(v2.ToDtype(dtype, scale=True)(u8))
    assert torch.equal(out, ref)
    fused = plan(datas, seeds)
    level = 1.0 / 255 / min(STD) + (0.02 if dtype == torch.bfloat16 else 1e-5)
    assert (out.float() - fused.float()).abs().max().item() <= level


def test_run_plan_marks_the_batch_and_the_mark_dies_with_it():
    datas = [images.encode_tensor(images.upsampled_noise(32, 32, seed=3), "JPEG")] * 2
    plan = transforms.fuse(_train())
    batch = run_plan(plan, datas, torch.tensor([1, 2]), max_pixels=None, device=torch.device("cuda"))
    assert batch.dtype == torch.uint8
    finish = cuda.pending_finish(batch)
    assert finish is not None and finish.dtype == torch.float32
    assert cuda.pending_finish(batch.clone()) is None
    from spdl_torch.cuda import _finish

    key = id(batch)
    del batch
    gc.collect()
    assert key not in _finish._PENDING
    # without a device: the plan as it is, nothing marked
    plain = run_plan(plan, datas, torch.tensor([1, 2]), max_pixels=None)
    assert plain.dtype == torch.float32 and cuda.pending_finish(plain) is None


needs_kernels = pytest.mark.skipif(not cuda.cuda_build(), reason="spdl_torch's CPU variant: no CUDA kernels")


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
