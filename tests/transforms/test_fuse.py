"""``fuse()``'s matching rules (spdl_torch/transforms/_fuse.py): the eval and train recipes onto
``decode_images`` arguments, the other geometries and what stays in the remainder, and Grayscale / RGB (v2 on
tensors, v1 on PIL images, a PIL remainder after a fused grey conversion) against torchvision's pixels."""


import numpy as np
import pytest
import torch
import torchvision.transforms as T
from PIL import Image
from torchvision.transforms import v2

from tests._utils.images import psnr, smooth_jpegs
from spdl_torch.io import decode_image, read_file
from spdl_torch.transforms import fuse
from tests._utils.images import IMAGENET_MEAN, IMAGENET_STD

MEAN, STD = list(IMAGENET_MEAN), list(IMAGENET_STD)
EVAL = v2.Compose([v2.Resize(40), v2.CenterCrop(32), v2.ToDtype(torch.float32, scale=True), v2.Normalize(MEAN, STD)])


def test_fuse_eval_pipeline():
    plan = fuse(EVAL)
    assert plan.op_kwargs == dict(geometry="eval", resize_shorter=40, height=32, width=32, interpolation="bilinear",
                                  dtype=torch.float32, mean=tuple(MEAN), std=tuple(STD))
    assert plan.rest is None and not plan.random and len(plan.fused) == 4


def test_fuse_train_pipeline_with_rest():
    t = v2.Compose([v2.ToImage(), v2.RandomResizedCrop((20, 30), scale=(0.5, 1.0), interpolation=v2.InterpolationMode.BICUBIC),
                    v2.RandomHorizontalFlip(0.25), v2.RandomPerspective(p=1.0), v2.ToDtype(torch.float32, scale=True)])
    plan = fuse(t)
    assert plan.op_kwargs == dict(geometry="train", height=20, width=30, scale=(0.5, 1.0), ratio=(0.75, 4 / 3),
                                  interpolation="bicubic", hflip_prob=0.25)
    assert plan.random
    assert [type(x) for x in plan.rest.transforms] == [v2.RandomPerspective, v2.ToDtype]


def test_fuse_other_geometries_and_refusals():
    assert fuse(v2.Resize((10, 12))).op_kwargs == dict(geometry="resize", height=10, width=12, interpolation="bilinear")
    assert fuse(v2.CenterCrop(8)).op_kwargs == dict(geometry="eval", resize_shorter=0, height=8, width=8)
    assert fuse(v2.Resize(10)) is None  # no fixed size
    assert fuse(v2.Compose([v2.Resize(10, antialias=False), v2.CenterCrop(8)])) is None
    # max_size and NEAREST map (their pixels: tests/transforms/test_geometry.py).
    assert fuse(v2.Compose([v2.Resize(10, max_size=20), v2.CenterCrop(8)])).op_kwargs["max_size"] == 20
    assert fuse(v2.Resize((10, 12), interpolation=v2.InterpolationMode.NEAREST)).op_kwargs["interpolation"] == "nearest"
    assert fuse(v2.Resize((10, 12), max_size=20)) is None  # torchvision refuses it
    assert fuse(v2.ColorJitter(0.1)) is None
    assert fuse(lambda x: x) is None and fuse(None) is None
    # Normalize without ToDtype, or ToDtype without scale, stays in `rest`.
    plan = fuse(v2.Compose([v2.CenterCrop(8), v2.Normalize(MEAN, STD)]))
    assert "mean" not in plan.op_kwargs and type(plan.rest.transforms[0]) is v2.Normalize
    plan = fuse(v2.Compose([v2.CenterCrop(8), v2.ToDtype(torch.float32)]))
    assert "dtype" not in plan.op_kwargs


# --- datasets ----------------------------------------------------------------------------------------


MIN_PSNR = 38.0


@pytest.fixture(scope="module")
def paths(tmp_path_factory):
    """Six smooth JPEGs of different sizes and aspect ratios (both orientations) and one PNG."""
    return smooth_jpegs(tmp_path_factory.mktemp("geometry"), 16, portrait=True, png=True)


@pytest.mark.parametrize("channels", [1, 3])
def test_grayscale_v2(paths, channels):
    t = v2.Compose([v2.Resize(40), v2.CenterCrop(32), v2.Grayscale(channels)])
    plan = fuse(t)
    assert plan.rest is None and plan.op_kwargs["color"] == "gray"
    batch = plan([read_file(p) for p in paths])
    assert batch.shape == (len(paths), channels, 32, 32)
    for out, p in zip(batch, paths):
        exp = t(decode_image(p))
        assert out.shape == exp.shape and psnr(out, exp) >= MIN_PSNR, p
    # Normalized, one channel: one mean and std value
    t = v2.Compose([v2.Resize(40), v2.CenterCrop(32), v2.Grayscale(1), v2.ToDtype(torch.float32, scale=True),
                    v2.Normalize([0.5], [0.25])])
    plan = fuse(t)
    assert plan.rest is None and plan.op_kwargs["num_output_channels"] == 1
    for out, p in zip(plan([read_file(p) for p in paths]), paths):
        assert psnr(out * 0.25, t(decode_image(p)) * 0.25, 1.0) >= MIN_PSNR


def test_grayscale_then_rgb_and_v1_on_pil(paths):
    t = v2.Compose([v2.Resize(40), v2.CenterCrop(32), v2.Grayscale(), v2.RGB()])
    plan = fuse(t)
    assert plan.rest is None and "num_output_channels" not in plan.op_kwargs
    for out, p in zip(plan([read_file(p) for p in paths]), paths):
        exp = t(decode_image(p))
        assert out.shape == exp.shape == (3, 32, 32) and psnr(out, exp) >= MIN_PSNR
    assert fuse(v2.Compose([v2.CenterCrop(8), v2.RGB()])).op_kwargs == dict(geometry="eval", resize_shorter=0, height=8,
                                                                             width=8)
    # v1: Grayscale first, on PIL images (Pillow's convert("L")), as torchvision's ImageFolder feeds it.
    for channels in (1, 3):
        t = T.Compose([T.Grayscale(channels), T.Resize(40), T.CenterCrop(32), T.ToTensor()])
        plan = fuse(t)
        assert plan.rest is None and plan.op_kwargs["color"] == "gray_pil"
        for out, p in zip(plan([read_file(p) for p in paths]), paths):
            exp = t(Image.open(p).convert("RGB"))
            assert out.shape == exp.shape == (channels, 32, 32) and psnr(out, exp, 1.0) >= MIN_PSNR, p


def test_grayscale_pil_remainder_gets_mode_l(paths):
    # A v1 remainder on PIL images after a fused 1-channel Grayscale gets "L" images, as from Pillow.
    t = T.Compose([T.Resize(40), T.CenterCrop(32), T.Grayscale(), T.Lambda(lambda im: np.asarray(im).copy())])
    plan = fuse(t)
    assert plan.rest_input == "pil"
    outs = plan([read_file(p) for p in paths])
    for out, p in zip(outs, paths):
        exp = t(Image.open(p).convert("RGB"))
        assert out.shape == exp.shape == (32, 32) and psnr(torch.from_numpy(out), torch.from_numpy(exp)) >= MIN_PSNR
