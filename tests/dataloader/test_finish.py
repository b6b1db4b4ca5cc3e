"""The device path of a loader's fused batches (spdl_torch/dataloader/_finish.py): the plan split (which
transforms move to the device: ``ToDtype`` + ``Normalize`` after the copy, against torchvision's order), and the
marks that carry a batch's finish to the transfer stage, made by the loader context's ``run_plan``."""

import gc

import pytest
import torch
from torchvision.transforms import v2

from spdl_torch import transforms
from spdl_torch.dataloader._finish import DeviceFinish, pending_finish, run_plan, split_plan
from tests._utils.images import IMAGENET_MEAN, IMAGENET_STD

from tests._utils import images

MEAN, STD = IMAGENET_MEAN, IMAGENET_STD


def _train(dtype=torch.float32, extra=()):
    return v2.Compose([v2.RandomResizedCrop(16), v2.RandomHorizontalFlip(), v2.ToDtype(dtype, scale=True),
                       v2.Normalize(MEAN, STD), *extra])


def test_split_moves_the_fused_conversion_to_the_device():
    plan = transforms.fuse(_train())
    assert plan.op_kwargs["dtype"] == torch.float32 and plan.op_kwargs["mean"] == MEAN
    host, finish = split_plan(plan)
    assert "dtype" not in host.op_kwargs and "mean" not in host.op_kwargs and "std" not in host.op_kwargs
    assert host.op_kwargs["height"] == 16 and host.random
    assert finish == DeviceFinish(dtype=torch.float32, mean=MEAN, std=STD)
    assert plan.op_kwargs["dtype"] == torch.float32  # the dataset's own plan is unchanged


def test_split_keeps_per_sample_remainders_and_uint8_plans_on_the_host():
    per_sample = transforms.fuse(_train(extra=[v2.RandomPerspective(p=1.0)]))
    assert per_sample.per_sample is not None
    assert split_plan(per_sample) == (per_sample, None)
    uint8 = transforms.fuse(v2.Compose([v2.Resize(20), v2.CenterCrop(16)]))
    assert split_plan(uint8) == (uint8, None)


def test_split_moves_a_batched_normalize():
    # ToDtype fused, the second Normalize runs once per batch: both move
    plan = transforms.fuse(_train(extra=[v2.Normalize((0.5,) * 3, (2.0,) * 3)]))
    assert plan.batched is not None and plan.per_sample is None
    host, finish = split_plan(plan)
    assert host.batched is None and finish.batched is plan.batched


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_host_plan_plus_finish_equals_torchvision_order(dtype):
    """uint8 decode + the device finish is bit for bit ToDtype + Normalize of the uint8 batch (torchvision's
    order), and within one uint8 level of the plan that normalises on the CPU (which does not round to uint8)."""
    datas = [images.encode_tensor(images.upsampled_noise(40 + 8 * i, 50, seed=i), "JPEG", quality=95)
             for i in range(3)]
    seeds = torch.tensor([11, 12, 13])
    plan = transforms.fuse(_train(dtype))
    host, finish = split_plan(plan)
    u8 = run_plan(host, datas, seeds, base_seed=0, epoch=0, indices=[0, 1, 2], max_pixels=None)
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
    batch = run_plan(plan, datas, torch.tensor([1, 2]), base_seed=0, epoch=0, indices=[0, 1], max_pixels=None,
                     device=torch.device("cuda"))
    assert batch.dtype == torch.uint8
    finish = pending_finish(batch)
    assert finish is not None and finish.dtype == torch.float32
    assert pending_finish(batch.clone()) is None
    from spdl_torch.dataloader import _finish

    key = id(batch)
    del batch
    gc.collect()
    assert key not in _finish._PENDING
    # without a device: the plan as it is, nothing marked
    plain = run_plan(plan, datas, torch.tensor([1, 2]), base_seed=0, epoch=0, indices=[0, 1], max_pixels=None)
    assert plain.dtype == torch.float32 and pending_finish(plain) is None
