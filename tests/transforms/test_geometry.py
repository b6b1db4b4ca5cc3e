"""The geometry rules of ``fuse()`` (spdl_torch/transforms/_geometry.py) against torchvision's own transforms:
Resize(S) + RandomCrop (padding, pad_if_needed), Resize(..., max_size), vertical and both flips, NEAREST.
Random geometry: our draw (``sample_geometry``, the op's own) applied with torchvision's transform code, so
the crop box, padding and flips are torchvision's; then the pixels compared (PSNR)."""

import math
import os
from pathlib import Path

import numpy as np
import pytest
import torch
import torchvision.transforms as T
import torchvision.transforms.functional as F1
from PIL import Image
from torchvision.transforms import v2
from torchvision.transforms.v2 import functional as F2

import spdl_torch
from spdl_torch.io import decode_image, read_file
from spdl_torch.transforms._sample_geometry import sample_geometry
from spdl_torch.transforms import fuse
from spdl_torch.transforms._fuse import analyse

from tests._utils.images import psnr, smooth_jpegs
from tests._utils import corpus
from tests._utils.images import IMAGENET_MEAN, IMAGENET_STD

MEAN, STD = list(IMAGENET_MEAN), list(IMAGENET_STD)
NEAREST, NEAREST_EXACT = v2.InterpolationMode.NEAREST, v2.InterpolationMode.NEAREST_EXACT
MIN_PSNR = 38.0


@pytest.fixture(scope="module")
def paths(tmp_path_factory):
    """Six smooth JPEGs of different sizes and aspect ratios (both orientations) and one PNG."""
    return smooth_jpegs(tmp_path_factory.mktemp("geometry"), 16, portrait=True, png=True)


def seeds_for(paths):
    return torch.arange(len(paths), dtype=torch.int64) * 1_000_003 + 17


def crop_reference(img, crop: v2.RandomCrop, geo):
    """torchvision's RandomCrop of ``img`` (padding rule and all) at our top/left."""
    params = crop.make_params([img])
    params.update(top=geo.top, left=geo.left, needs_crop=True)
    return crop.transform(img, params)


def flip_reference(img, geo):
    img = F2.horizontal_flip(img) if geo.hflip else img
    return F2.vertical_flip(img) if geo.vflip else img


# --- Resize(S) + RandomCrop, v2 on tensors -------------------------------------------------------------

RANDOM_CROPS = {
    "plain": dict(size=32),
    "rect": dict(size=(36, 24)),
    "padding": dict(size=40, padding=4),
    "padding_ltrb": dict(size=(30, 44), padding=(1, 2, 5, 3)),
    "pad_if_needed": dict(size=(56, 48), pad_if_needed=True),
    "both": dict(size=(64, 30), padding=(2, 3), pad_if_needed=True),
}


@pytest.mark.parametrize("name", list(RANDOM_CROPS))
def test_v2_resize_random_crop(paths, name):
    crop = v2.RandomCrop(**RANDOM_CROPS[name])
    t = v2.Compose([v2.Resize(40), crop, v2.RandomHorizontalFlip(0.5), v2.RandomVerticalFlip(0.5)])
    plan = fuse(t)
    assert plan is not None and plan.rest is None and plan.random, plan
    assert plan.op_kwargs["geometry"] == "random_crop" and plan.op_kwargs["resize_shorter"] == 40
    seeds = seeds_for(paths)
    batch = plan([read_file(p) for p in paths], seeds)
    kw = {k: v for k, v in plan.op_kwargs.items() if k in ("resize_shorter", "padding", "pad_if_needed",
                                                              "hflip_prob", "vflip_prob")}
    flips = set()
    for out, p, s in zip(batch, paths, seeds.tolist()):
        img = decode_image(p)
        geo = sample_geometry(s, img.shape[1], img.shape[2], out_size=crop.size, geometry="random_crop", **kw)
        resized = v2.Resize(40)(img)
        exp = flip_reference(crop_reference(resized, crop, geo), geo)
        assert out.shape == exp.shape
        assert psnr(out, exp) >= MIN_PSNR, (name, p, geo)
        flips.add((geo.hflip, geo.vflip))
    assert len(flips) >= 2  # the seeds give different flips


def test_random_crop_offsets_cover_torchvisions_range():
    # torchvision draws top in [0, H - h] and left in [0, W - w], uniformly: so do we (from the seed).
    tops, lefts = [], []
    for s in range(3000):
        g = sample_geometry(s, 40, 60, out_size=(32, 32), geometry="random_crop")
        tops.append(g.top)
        lefts.append(g.left)
    assert set(tops) == set(range(9)) and set(lefts) == set(range(29))
    counts = np.bincount(lefts)
    assert counts.min() > 0.6 * counts.mean() and counts.max() < 1.4 * counts.mean()
    # RandomCrop alone (no resize) and the padded coordinates
    g = sample_geometry(3, 10, 12, out_size=(14, 12), geometry="random_crop", padding=(0, 2, 0, 2))
    assert 0 <= g.top <= 0 and g.left == 0 and (g.height, g.width) == (14, 12)


def test_random_crop_alone_and_v1(paths, monkeypatch):
    # v1 on PIL images: torchvision's own forward (padding, pad_if_needed) with our offsets in get_params.
    seeds = seeds_for(paths)
    t = T.Compose([T.Resize(40), T.RandomCrop(48, padding=3, pad_if_needed=True), T.RandomHorizontalFlip(0.5),
                   T.ToTensor(), T.Normalize(MEAN, STD)])
    plan = fuse(t)
    assert plan.rest is None and plan.op_kwargs["padding"] == (3, 3, 3, 3) and plan.op_kwargs["pad_if_needed"]
    batch = plan([read_file(p) for p in paths], seeds)
    for out, p, s in zip(batch, paths, seeds.tolist()):
        img = Image.open(p).convert("RGB")
        geo = sample_geometry(s, img.height, img.width, out_size=(48, 48), geometry="random_crop", resize_shorter=40,
                              padding=(3, 3, 3, 3), pad_if_needed=True, hflip_prob=0.5)
        monkeypatch.setattr(T.RandomCrop, "get_params", staticmethod(lambda im, size: (geo.top, geo.left, 48, 48)))
        ref = T.Compose([T.Resize(40), T.RandomCrop(48, padding=3, pad_if_needed=True)])(img)
        ref = F1.hflip(ref) if geo.hflip else ref
        ref = F1.normalize(F1.to_tensor(ref), MEAN, STD)
        scale = 255 * torch.tensor(STD).view(3, 1, 1)
        assert psnr(out * scale, ref * scale) >= MIN_PSNR, p
    # RandomCrop with no resize before it
    crop = v2.RandomCrop(30)
    plan = fuse(v2.Compose([v2.ToImage(), crop]))
    assert plan.op_kwargs == dict(geometry="random_crop", resize_shorter=0, height=30, width=30)
    batch = plan([read_file(p) for p in paths], seeds)
    for out, p, s in zip(batch, paths, seeds.tolist()):
        img = decode_image(p)
        geo = sample_geometry(s, img.shape[1], img.shape[2], out_size=(30, 30), geometry="random_crop")
        assert torch.equal(out, crop_reference(img, crop, geo))  # a crop of the decoded pixels: exact


def test_random_crop_larger_than_the_image_names_the_sample(paths):
    plan = fuse(v2.Compose([v2.Resize(40), v2.RandomCrop(64)]))
    with pytest.raises(spdl_torch.DecodeError, match=r"RandomCrop: the crop 64x64 is larger than the image") as info:
        plan([read_file(p) for p in paths], seeds_for(paths))
    assert info.value.sample_index is not None
    with pytest.raises(ValueError, match="larger than"):  # torchvision refuses it too
        v2.Compose([v2.Resize(40), v2.RandomCrop(64)])(decode_image(paths[0]))
    batch, ok = plan([read_file(p) for p in paths], seeds_for(paths), strict=False)
    assert not ok.any() and not batch.any()  # every resized image is smaller than 64 on one side


# --- Resize(..., max_size) ----------------------------------------------------------------------------


@pytest.mark.parametrize("resize,crop", [(v2.Resize(40, max_size=50), 32), (v2.Resize(None, max_size=48), (30, 44)),
                                         (v2.Resize(36, max_size=100), 30)],
                         ids=["short_and_max", "max_only", "max_unused"])
def test_resize_max_size(paths, resize, crop):
    t = v2.Compose([resize, v2.CenterCrop(crop), v2.ToDtype(torch.float32, scale=True)])
    plan = fuse(t)
    assert plan.rest is None and plan.op_kwargs["max_size"] == resize.max_size
    batch = plan([read_file(p) for p in paths])
    for out, p in zip(batch, paths):
        exp = t(decode_image(p))
        assert out.shape == exp.shape and psnr(out, exp, 1.0) >= MIN_PSNR, p


def test_resize_max_size_v1_and_random_crop(paths):
    t = T.Compose([T.Resize(40, max_size=48), T.CenterCrop(36), T.PILToTensor()])
    batch = fuse(t)([read_file(p) for p in paths])
    for out, p in zip(batch, paths):
        exp = t(Image.open(p).convert("RGB"))
        assert out.shape == exp.shape and psnr(out, exp) >= MIN_PSNR, p
    crop = v2.RandomCrop(30, pad_if_needed=True)
    plan = fuse(v2.Compose([v2.Resize(36, max_size=44), crop]))
    seeds = seeds_for(paths)
    batch = plan([read_file(p) for p in paths], seeds)
    for out, p, s in zip(batch, paths, seeds.tolist()):
        img = decode_image(p)
        geo = sample_geometry(s, img.shape[1], img.shape[2], out_size=(30, 30), geometry="random_crop",
                              resize_shorter=36, max_size=44, pad_if_needed=True)
        exp = crop_reference(v2.Resize(36, max_size=44)(img), crop, geo)
        assert psnr(out, exp) >= MIN_PSNR, p


@pytest.mark.parametrize("resize", [v2.Resize(64, max_size=80), v2.Resize(None, max_size=80)], ids=["S", "None"])
@pytest.mark.parametrize("size", [(3000, 4), (4, 3000)], ids=["tall", "wide"])
def test_resize_max_size_to_a_side_of_0_pixels_raises_like_torchvision(paths, tmp_path, resize, size):
    path = tmp_path / "thin.jpg"  # max_size 80 makes its 4-pixel side int(80 * 4 / 3000) = 0 (or 64 * 80 / 48000)
    Image.fromarray(np.full((*size, 3), 120, np.uint8)).save(path, quality=95)
    t = v2.Compose([resize, v2.CenterCrop(64)])
    with pytest.raises(RuntimeError, match="sizes should be greater than 0"):  # torchvision refuses it
        t(decode_image(path))
    if resize.size is not None:  # v1 (no Resize(None)) on a PIL image: Pillow refuses a side of 0 pixels
        with pytest.raises(ValueError):
            T.Compose([T.Resize(resize.size, max_size=80), T.CenterCrop(64)])(Image.open(path))
    plan = fuse(t)
    assert plan.rest is None
    data = [read_file(paths[0]), read_file(path), read_file(paths[1])]
    message = r"Resize: max_size 80 makes the \d+x\d+ image \d+x\d+ \(a side of 0 pixels\); torchvision raises"
    with pytest.raises(spdl_torch.DecodeError, match=message) as info:
        plan(data)
    assert info.value.sample_index == 1
    batch, ok = plan(data, strict=False)
    assert ok.tolist() == [True, False, True] and not batch[1].any()


# --- flips ---------------------------------------------------------------------------------------------


def test_vertical_and_both_flips(paths):
    t = v2.Compose([v2.Resize(40), v2.CenterCrop(32), v2.RandomVerticalFlip(0.5),
                    v2.RandomApply([v2.RandomHorizontalFlip(1.0)], p=0.5), v2.ToDtype(torch.float32, scale=True)])
    plan = fuse(t)
    assert plan.rest is None and plan.op_kwargs["vflip_prob"] == 0.5 and plan.op_kwargs["hflip_prob"] == 0.5
    seeds = seeds_for(paths)
    batch = plan([read_file(p) for p in paths], seeds)
    seen = set()
    for out, p, s in zip(batch, paths, seeds.tolist()):
        img = decode_image(p)
        geo = sample_geometry(s, img.shape[1], img.shape[2], out_size=(32, 32), geometry="eval", resize_shorter=40,
                              hflip_prob=0.5, vflip_prob=0.5)
        exp = flip_reference(v2.CenterCrop(32)(v2.Resize(40)(img)), geo).float() / 255
        assert psnr(out, exp, 1.0) >= MIN_PSNR, p
        seen.add((geo.hflip, geo.vflip))
    assert len(seen) >= 3
    # Always flipped, both ways: a 180 degree rotation of the unflipped output.
    both = fuse(v2.Compose([v2.Resize(40), v2.CenterCrop(32), v2.RandomVerticalFlip(1.0), v2.RandomHorizontalFlip(1.0)]))
    plain = fuse(v2.Compose([v2.Resize(40), v2.CenterCrop(32)]))
    datas = [read_file(p) for p in paths]
    assert torch.equal(both(datas, seeds), plain(datas).flip(-1).flip(-2))


# --- Grayscale and RGB ---------------------------------------------------------------------------------


# --- NEAREST -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", [NEAREST, NEAREST_EXACT], ids=["nearest", "nearest_exact"])
def test_nearest_v2(paths, mode):
    for t in (v2.Compose([v2.Resize(40, interpolation=mode), v2.CenterCrop(32)]),
              v2.Resize((23, 71), interpolation=mode), v2.Resize((150, 120), interpolation=mode)):
        plan = fuse(t)
        assert plan.rest is None and plan.op_kwargs["interpolation"] == mode.value.replace("-", "_")
        batch = plan([read_file(p) for p in paths])
        for out, p in zip(batch, paths):
            exp = t(decode_image(p))
            same = (out == exp).all(0).float().mean().item()
            assert same >= 0.99 and psnr(out, exp) >= MIN_PSNR, (t, p, same)  # index rule of torch's kernel


def test_nearest_train_and_v1(paths):
    seeds = seeds_for(paths)
    t = v2.RandomResizedCrop(28, scale=(0.3, 1.0), interpolation=NEAREST)
    plan = fuse(t)
    batch = plan([read_file(p) for p in paths], seeds)
    for out, p, s in zip(batch, paths, seeds.tolist()):
        img = decode_image(p)
        g = plan.sample_geometry(s, img.shape[1], img.shape[2])  # the plan's own arguments
        assert g == sample_geometry(s, img.shape[1], img.shape[2], out_size=(28, 28), scale=(0.3, 1.0))
        exp = F2.resized_crop(img, g.top, g.left, g.height, g.width, [28, 28], interpolation=NEAREST)
        assert psnr(out, exp) >= MIN_PSNR, p
    t = T.Compose([T.Resize(40, interpolation=T.InterpolationMode.NEAREST), T.CenterCrop(32), T.PILToTensor()])
    for out, p in zip(fuse(t)([read_file(p) for p in paths]), paths):  # Pillow's NEAREST
        assert psnr(out, t(Image.open(p).convert("RGB"))) >= MIN_PSNR, p


# --- what does not fuse, and why -----------------------------------------------------------------------


@pytest.mark.parametrize("t,unfused,reason", [
    (v2.Compose([v2.Resize(40), v2.RandomCrop(32, padding=4, padding_mode="reflect")]), v2.RandomCrop,
     "padding_mode='reflect'"),
    (v2.Compose([v2.Resize(40), v2.RandomCrop(32, padding=4, fill=7)]), v2.RandomCrop, "only zero padding"),
    (v2.Compose([v2.Resize(40), v2.RandomCrop(32), v2.RandomChoice([v2.RandomHorizontalFlip(1.0),
                                                                     v2.RandomVerticalFlip(1.0)])]),
     v2.RandomChoice, "RandomChoice"),
    (v2.Compose([v2.CenterCrop(8), v2.RandomVerticalFlip(), v2.RandomVerticalFlip()]), v2.RandomVerticalFlip,
     "a second vertical flip"),
    (v2.Compose([v2.CenterCrop(8), v2.ToDtype(torch.float32, scale=True), v2.Grayscale()]), v2.Grayscale,
     "Grayscale of a float image"),
    (v2.Compose([v2.CenterCrop(8), v2.Grayscale(), v2.ToDtype(torch.float32, scale=True), v2.Normalize(MEAN, STD)]),
     v2.Normalize, "3 values of a 1-channel"),
    (v2.Compose([v2.Resize(40, antialias=False), v2.CenterCrop(32)]), v2.Resize, "without antialias"),
    (T.Compose([T.Resize(40, interpolation=T.InterpolationMode.BOX), T.CenterCrop(32)]), T.Resize, "BOX"),
])
def test_unfused_reasons(t, unfused, reason):
    a = analyse(t)
    assert type(a.unfused) is unfused and reason.lower() in a.reason.lower(), a.reason


# --- real photos (a subsample of the corpus) -----------------------------------------------------------

REPO = Path(__file__).resolve().parents[2]
PHOTOS = [p for p in corpus.files("jpeg_variants", ".jpg", ".jpeg") if "truncated" not in p.name][::3]
PHOTOS += sorted(Path(REPO, "data", "imagenet_like", "train").glob("*/*.JPEG"))[::100]


def test_real_photos_resize_random_crop_flip():
    if not PHOTOS:
        pytest.skip("no real photos: the media corpus is absent")
    crop = v2.RandomCrop(224, pad_if_needed=True)
    t = v2.Compose([v2.Resize(256), crop, v2.RandomHorizontalFlip(), v2.ToDtype(torch.float32, scale=True)])
    plan = fuse(t)
    seeds = seeds_for(PHOTOS)
    batch = plan([read_file(p) for p in PHOTOS], seeds)
    worst = math.inf
    for out, p, s in zip(batch, PHOTOS, seeds.tolist()):
        img = decode_image(p)
        geo = sample_geometry(s, img.shape[1], img.shape[2], out_size=(224, 224), geometry="random_crop",
                              resize_shorter=256, pad_if_needed=True, hflip_prob=0.5)
        exp = flip_reference(crop_reference(v2.Resize(256)(img), crop, geo), geo).float() / 255
        worst = min(worst, psnr(out, exp, 1.0))
    assert worst >= MIN_PSNR, f"worst {worst:.1f} dB over {len(PHOTOS)} photos ({os.cpu_count()} CPUs)"
