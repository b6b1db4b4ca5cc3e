"""torchvision v2 pipelines fused beyond the basic recipes (conversions, dtypes, nesting, crop sizes), and the
unfused remainder: deterministic transforms once per batch, random ones per sample."""

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


# --- the unfused remainder ---------------------------------------------------------------------------


def test_deterministic_remainder_runs_once_on_the_batch(paths):
    # ToDtype without scale does not map: it and Normalize run on the batch tensor, not per sample.
    t = v2.Compose([v2.CenterCrop(24), v2.ToDtype(torch.float32), v2.Normalize([120.0] * 3, [60.0] * 3),
                    v2.Grayscale(3)])
    plan = fuse(t)
    assert plan.per_sample is None
    assert [type(x) for x in plan.batched.transforms] == [v2.ToDtype, v2.Normalize, v2.Grayscale]
    batch = plan(paths)
    assert type(batch) is torch.Tensor and batch.shape == (len(paths), 3, 24, 24)
    torch.testing.assert_close(batch, torch.stack(reference(t, paths)))  # crop only: the same pixels


def test_random_remainder_stays_per_sample(paths):
    t = v2.Compose([v2.CenterCrop(24), F32, v2.RandomPerspective(p=1.0), v2.Normalize(MEAN, STD)])
    plan = fuse(t)
    assert plan.batched is None
    assert [type(x) for x in plan.per_sample.transforms] == [v2.RandomPerspective, v2.Normalize]
    torch.manual_seed(7)
    batch = plan(paths)
    torch.manual_seed(7)
    expected = torch.stack(reference(t, paths))
    assert isinstance(batch, list)
    batch = torch.stack(batch)
    torch.testing.assert_close(batch, expected)
    erased = [(x == ((0 - torch.tensor(MEAN)) / torch.tensor(STD)).view(3, 1, 1)).all(0) for x in batch]
    assert all(e.any() for e in erased) and not torch.equal(erased[0], erased[1])  # one draw per sample


def test_per_sample_results_of_varying_shape(paths):
    t = v2.Compose([v2.CenterCrop(24), v2.RandomCrop(16, pad_if_needed=True), v2.Lambda(lambda x: x[:, : int(x.sum()) % 5 + 1]),
                    v2.ToDtype(torch.float32)])
    out = fuse(t)(paths)
    assert isinstance(out, list) and len(out) == len(paths) and all(o.dtype == torch.float32 for o in out)


def test_batched_normalize_equals_per_sample():
    # The premise of batching the deterministic remainder: one call on [N, C, H, W] == the stacked rows.
    t = v2.Compose([v2.ToDtype(torch.float32), v2.Normalize([120.0, 110.0, 100.0], [60.0, 50.0, 40.0]), v2.Grayscale(3)])
    batch = torch.randint(0, 256, (8, 3, 20, 30), dtype=torch.uint8)
    torch.testing.assert_close(t(batch), torch.stack([t(x) for x in batch]))


def test_batched_head_in_chunks_equals_one_call():
    # The head runs 4 samples per call into one batch (spdl_torch/transforms/_plan.py): the same values and
    # shape as one call on the whole batch, for a batch that is no multiple of 4 and a head that changes the
    # shape and dtype.
    from spdl_torch.transforms._plan import run_head

    head = v2.Compose([v2.CenterCrop(12), v2.Grayscale(1), v2.ToDtype(torch.float32), v2.Normalize([100.0], [40.0])])
    batch = torch.randint(0, 256, (11, 3, 20, 30), dtype=torch.uint8)
    out = run_head(head, batch)
    assert out.shape == (11, 1, 12, 12) and out.dtype == torch.float32
    torch.testing.assert_close(out, head(batch))
    assert torch.equal(run_head(head, batch[:3]), head(batch[:3]))
