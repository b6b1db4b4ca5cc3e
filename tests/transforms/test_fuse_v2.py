"""torchvision v2 pipelines fused beyond the basic recipes (conversions, dtypes, nesting, crop sizes); the
unfused remainder's runs: tests/transforms/test_plan.py."""

import math

import numpy as np
import pytest
import torch
from PIL import Image
from torchvision.transforms import v2

from spdl_torch.io import decode_image, read_file
from spdl_torch.transforms import fuse

MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
F32 = v2.ToDtype(torch.float32, scale=True)


def psnr(a, b, peak=255.0):
    mse = (a.double() - b.double()).pow(2).mean().item()
    return math.inf if mse == 0 else 10 * math.log10(peak**2 / mse)


@pytest.fixture(scope="module")
def paths(tmp_path_factory):
    root = tmp_path_factory.mktemp("v2")
    rng = np.random.default_rng(2)
    out = []
    for k in range(6):
        h, w = 50 + 11 * k, 90 - 6 * k
        small = rng.integers(0, 256, (h // 8, w // 8, 3), dtype=np.uint8)
        path = root / f"{k}.jpg"
        Image.fromarray(small).resize((w, h), Image.BICUBIC).save(path, quality=95)
        out.append(str(path))
    return out


def reference(t, paths):
    return [torch.as_tensor(t(decode_image(p))) for p in paths]


PIPELINES = {
    "uint8": (v2.Compose([v2.Resize(40), v2.CenterCrop(32)]), torch.uint8, False),
    "to_image_mid_and_pure_tensor": (
        v2.Compose([v2.ToImage(), v2.Resize((24, 32)), v2.ToImage(), F32, v2.Normalize(MEAN, STD), v2.ToPureTensor()]),
        torch.float32, True),
    "convert_image_dtype": (
        v2.Compose([v2.Resize(40), v2.CenterCrop(32), v2.ConvertImageDtype(torch.float32), v2.Normalize(MEAN, STD)]),
        torch.float32, True),
    "bfloat16": (v2.Compose([v2.Resize(40), v2.CenterCrop(32), v2.ToDtype(torch.bfloat16, scale=True)]),
                 torch.bfloat16, False),
    "bfloat16_normalized": (
        v2.Compose([v2.Resize(40), v2.CenterCrop(32), v2.ConvertImageDtype(torch.bfloat16), v2.Normalize(MEAN, STD)]),
        torch.bfloat16, True),
    "float32_then_bfloat16_cast": (
        v2.Compose([v2.Resize(40), v2.CenterCrop(32), F32, v2.Normalize(MEAN, STD), v2.ToDtype(torch.bfloat16)]),
        torch.bfloat16, True),
    "nested_compose": (
        v2.Compose([v2.Compose([v2.ToImage(), v2.Resize(40)]),
                    v2.Compose([v2.CenterCrop(32), v2.Compose([F32, v2.Normalize(MEAN, STD)])])]),
        torch.float32, True),
    "sequential": (torch.nn.Sequential(v2.Resize(40), v2.CenterCrop(32), F32), torch.float32, False),
    "uint8_to_dtype_noop": (v2.Compose([v2.CenterCrop(20), v2.ToDtype(torch.uint8, scale=True)]), torch.uint8, False),
    "random_apply_flip_always": (
        v2.Compose([v2.Resize(40), v2.CenterCrop(32), v2.RandomApply([v2.RandomHorizontalFlip(1.0)], p=1.0)]),
        torch.uint8, False),
}


@pytest.mark.parametrize("name", list(PIPELINES))
def test_fused_pipeline_matches_torchvision(paths, name):
    t, dtype, normalized = PIPELINES[name]
    plan = fuse(t)
    assert plan is not None and plan.rest is None, plan
    batch = plan([read_file(p) for p in paths])
    assert type(batch) is torch.Tensor and batch.dtype == dtype
    ref = reference(t, paths)
    for out, exp in zip(batch, ref):
        assert out.shape == exp.shape and exp.dtype == dtype
        a, b = out.float(), exp.float()
        if normalized:
            a, b = a * torch.tensor(STD).view(3, 1, 1), b * torch.tensor(STD).view(3, 1, 1)
        peak = 1.0 if dtype != torch.uint8 else 255.0
        # bfloat16 keeps 8 bits of mantissa: about 0.4 % relative error, ~45 dB on [0, 1] values
        assert psnr(a, b, peak) >= (40 if dtype != torch.bfloat16 else 38), name


def test_empty_compose_is_not_fused():
    import torchvision.transforms as T

    assert fuse(T.Compose([])) is None and fuse(torch.nn.Sequential()) is None  # (v2.Compose refuses [])


def test_random_apply_probability_multiplies():
    plan = fuse(v2.Compose([v2.CenterCrop(8), v2.RandomApply([v2.RandomHorizontalFlip(0.5)], p=0.5)]))
    assert plan.op_kwargs["hflip_prob"] == 0.25 and plan.random and plan.rest is None
    assert fuse(v2.Compose([v2.CenterCrop(8), v2.RandomApply([v2.RandomPerspective(p=1.0)], p=0.5)])).rest is not None


@pytest.mark.parametrize("crop", [(32, 32), (20, 64), (56, 40), (80, 100)])
def test_resize_then_center_crop_of_any_size(paths, crop):
    # Larger than the resized image on one or both sides: zero padding, as CenterCrop.
    t = v2.Compose([v2.Resize(40), v2.CenterCrop(crop)])
    plan = fuse(t)
    assert plan.op_kwargs == dict(geometry="eval", resize_shorter=40, height=crop[0], width=crop[1],
                                  interpolation="bilinear")
    batch = plan(paths)
    for out, exp in zip(batch, reference(t, paths)):
        assert out.shape == exp.shape
        assert psnr(out, exp) >= 40
