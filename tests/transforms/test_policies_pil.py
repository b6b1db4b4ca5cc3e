"""Classic torchvision.transforms (v1) augmentations of a PIL image, fused: each sample's rows, run by the native
op, against torchvision v1 itself on the same PIL image (Pillow's ``img.rotate`` / ``img.transform(AFFINE)``,
``ImageEnhance``, ``ImageOps``, the uint8 HSV hue): identical on every pixel, for RandomRotation / RandomAffine
(nearest, bilinear, bicubic; fills; centres; scale), ColorJitter (hue to +-0.5), the single colour transforms
and the policies' ops (TrivialAugmentWide, RandAugment, AutoAugment), and v2 classes given a PIL image; a v1
pipeline end to end through FileListDataset. Small photo-like images in the fast tier; real photos of the media
corpus in the slow one."""

import functools

import numpy as np
import pytest
import torch
import torchvision.transforms as T1
import torchvision.transforms.autoaugment as AA
import torchvision.transforms.functional as TF
from PIL import Image
from torchvision.transforms import v2
from torchvision.transforms.v2 import functional as F2

from spdl_torch.datasets import FileListDataset, collate
from spdl_torch.transforms import _augment_program as P
from spdl_torch.transforms import FusedPlan, fuse
from spdl_torch.transforms._fuse import analyse
from spdl_torch.transforms._policies import match_augment

from tests._utils import corpus, images
from tests._utils.augment import from_pil, to_pil

IM = T1.InterpolationMode


def _rotation(t, pil, ops, rng):
    return TF.rotate(pil, ops[-1].magnitude, interpolation=t.interpolation, expand=False, center=t.center, fill=t.fill)


def _is_v2(t) -> bool:
    return type(t).__module__.startswith("torchvision.transforms.v2")


def _affine(t, pil, ops, rng):
    # the sampler's draws in torchvision's order (angle, translate, scale, shear), replayed from the same stream
    w, h = pil.size
    angle = rng.uniform(*t.degrees)
    tx = ty = 0
    if t.translate is not None:
        tx = int(round(rng.uniform(-t.translate[0] * w, t.translate[0] * w)))
        ty = int(round(rng.uniform(-t.translate[1] * h, t.translate[1] * h)))
    scale = 1.0 if t.scale is None else rng.uniform(*t.scale)
    sx = sy = 0.0
    if t.shear is not None:
        sx = rng.uniform(t.shear[0], t.shear[1])
        if len(t.shear) == 4:
            sy = rng.uniform(t.shear[2], t.shear[3])
    affine = F2.affine if _is_v2(t) else TF.affine  # (their matrices differ in the last bits)
    return affine(pil, angle, [tx, ty], scale, [sx, sy], interpolation=t.interpolation, fill=t.fill, center=t.center)


def _jitter(t, pil, ops, rng):
    for op in ops:
        pil = getattr(TF, f"adjust_{op.name}")(pil, op.magnitude)
    return pil


def _policy(t, pil, ops, rng):
    for op in ops:
        if op.op in ("fill", "pil_affine_low"):  # a geometric op's leading rows
            continue
        if _is_v2(t):
            pil = t._apply_image_or_video_transform(pil, op.name, op.magnitude, interpolation=t.interpolation,
                                                    fill=t._fill)
        else:
            pil = AA._apply_op(pil, op.name, op.magnitude, interpolation=t.interpolation, fill=t.fill)
    return pil


def _fixed(fn):
    return lambda t, pil, ops, rng: fn(pil) if ops else pil


CASES = {
    "rotate_nearest_30_45": (lambda: T1.RandomRotation((30, 45)), _rotation),
    "rotate_bilinear_-45_-30_fill": (lambda: T1.RandomRotation((-45, -30), IM.BILINEAR, fill=128), _rotation),
    "rotate_bilinear_any": (lambda: T1.RandomRotation(180, IM.BILINEAR), _rotation),
    "rotate_bicubic_centre_rgb_fill": (
        lambda: T1.RandomRotation(180, IM.BICUBIC, center=[5, 30], fill=[10, 200, 30]), _rotation),
    "rotate_bilinear_centre_origin": (lambda: T1.RandomRotation((30, 45), IM.BILINEAR, center=[0, 0], fill=255),
                                      _rotation),
    "rotate_quarter_turns": (lambda: T1.RandomRotation((90, 90), IM.BILINEAR, fill=7), _rotation),
    "rotate_half_turn": (lambda: T1.RandomRotation((180, 180), IM.BICUBIC), _rotation),
    "affine_bilinear_all": (lambda: T1.RandomAffine(30, translate=(0.2, 0.1), scale=(0.7, 1.3),
                                                    shear=(-20, 20, -10, 10), interpolation=IM.BILINEAR,
                                                    fill=(0, 128, 255)), _affine),
    "affine_nearest_centre": (lambda: T1.RandomAffine((-10, 10), shear=15, center=[3, 4]), _affine),
    "affine_bicubic_translate": (lambda: T1.RandomAffine(0, translate=(0.3, 0.3), interpolation=IM.BICUBIC, fill=99),
                                 _affine),
    "jitter": (lambda: T1.ColorJitter(0.8, 0.8, 0.8, 0.5), _jitter),
    "jitter_hue_0.45_0.5": (lambda: T1.ColorJitter(hue=(0.45, 0.5)), _jitter),
    "jitter_hue_-0.5_-0.45": (lambda: T1.ColorJitter(hue=(-0.5, -0.45)), _jitter),
    "jitter_wide_factors": (lambda: T1.ColorJitter(brightness=(0, 3), contrast=(0, 3), saturation=(0, 4)), _jitter),
    "grayscale": (lambda: T1.RandomGrayscale(1.0), _fixed(lambda p: TF.rgb_to_grayscale(p, 3))),
    "autocontrast": (lambda: T1.RandomAutocontrast(1.0), _fixed(TF.autocontrast)),
    "equalize": (lambda: T1.RandomEqualize(1.0), _fixed(TF.equalize)),
    "invert": (lambda: T1.RandomInvert(1.0), _fixed(TF.invert)),
    "posterize": (lambda: T1.RandomPosterize(2, 1.0), _fixed(lambda p: TF.posterize(p, 2))),
    "solarize": (lambda: T1.RandomSolarize(100.5, 1.0), _fixed(lambda p: TF.solarize(p, 100.5))),
    "solarize_above_255": (lambda: T1.RandomSolarize(300, 1.0), _fixed(lambda p: TF.solarize(p, 300))),
    # a threshold float32 cannot tell from 17: Pillow compares with the double (17 stays)
    "solarize_just_above_17": (lambda: T1.RandomSolarize(17.0000001, 1.0), _fixed(lambda p: TF.solarize(p, 17.0000001))),
    "sharpness_3": (lambda: T1.RandomAdjustSharpness(3.0, 1.0), _fixed(lambda p: TF.adjust_sharpness(p, 3.0))),
    "sharpness_0.2": (lambda: T1.RandomAdjustSharpness(0.2, 1.0), _fixed(lambda p: TF.adjust_sharpness(p, 0.2))),
    "trivial_bilinear_rgb_fill": (lambda: T1.TrivialAugmentWide(interpolation=IM.BILINEAR, fill=[5, 100, 250]),
                                  _policy),
    "rand_bicubic": (lambda: T1.RandAugment(num_ops=3, magnitude=12, interpolation=IM.BICUBIC), _policy),
    "auto_imagenet_nearest": (lambda: T1.AutoAugment(T1.AutoAugmentPolicy.IMAGENET, fill=77), _policy),
    "auto_svhn_bilinear": (lambda: T1.AutoAugment(T1.AutoAugmentPolicy.SVHN, IM.BILINEAR), _policy),
    # v2 classes given a PIL image (a v1 pipeline's): torchvision v2 calls Pillow too, with its own matrix
    "v2_rotate_bilinear_centre": (lambda: v2.RandomRotation((30, 45), IM.BILINEAR, center=[3, 5], fill=100), _rotation),
    "v2_affine_bicubic": (lambda: v2.RandomAffine(30, translate=(0.2, 0.1), scale=(0.7, 1.3), shear=(-20, 20, -10, 10),
                                                  interpolation=IM.BICUBIC, fill=55), _affine),
    "v2_jitter": (lambda: v2.ColorJitter(0.8, 0.8, 0.8, 0.5), _jitter),
    "v2_trivial_bilinear": (lambda: v2.TrivialAugmentWide(interpolation=IM.BILINEAR, fill=[5, 100, 250]), _policy),
}
POLICIES = {"trivial_bilinear_rgb_fill", "rand_bicubic", "auto_imagenet_nearest", "auto_svhn_bilinear",
            "v2_trivial_bilinear"}


def _native(img: torch.Tensor, programs: list[list]) -> torch.Tensor:
    from spdl_torch.io import decode_images

    prog = torch.zeros(len(programs), max(max(len(p) for p in programs), 1), 8)
    for n, ops in enumerate(programs):
        for k, op in enumerate(ops):
            prog[n, k] = torch.tensor(op.row())
    h, w = img.shape[1:]
    return decode_images([images.png_tensor(img)] * len(programs), height=h, width=w, geometry="resize", interpolation="nearest",
                         augment=prog).data


def assert_fused_equals_torchvision(name: str, imgs: list[torch.Tensor], seeds: list[int]) -> set[str]:
    """Each seed's rows on each image against torchvision's own transform on the PIL image: identical. Returns
    the op names drawn."""
    make, replay = CASES[name]
    t = make()
    seen = set()
    for img in imgs:
        h, w = img.shape[1:]
        sampler, why = match_augment(t, h, w, pil=True)
        assert sampler is not None, why
        programs = [sampler.draw(P.Rng(s), h, w) for s in seeds]
        assert all(len(ops) <= sampler.max_rows for ops in programs)
        got = _native(img, programs).permute(0, 2, 3, 1).numpy()  # numpy: cheaper than torch ops per sample
        pil = to_pil(img)
        for s, ops, out in zip(seeds, programs, got):
            want = np.asarray(replay(t, pil, ops, P.Rng(s)).convert("RGB"))
            if not np.array_equal(out, want):
                d = np.abs(out.astype(np.int16) - want)
                raise AssertionError((name, s, (h, w), [(o.op, o.name, o.magnitude) for o in ops], int(d.max()),
                                      int((d > 0).sum())))
            seen.update(op.name for op in ops)
    return seen


FAST_IMAGES = [(37, 53, 1), (48, 48, 2)]  # (h, w, seed): odd and square sizes


@pytest.mark.parametrize("name", list(CASES))
def test_v1_op_on_pil_equals_torchvision(name):
    imgs = [images.photo(h, w, seed=s) for h, w, s in FAST_IMAGES]
    seen = assert_fused_equals_torchvision(name, imgs, list(range(6 if name not in POLICIES else 64)))
    if name.startswith("trivial"):  # the policy's geometric ops were among the draws
        assert {"Rotate", "ShearX", "TranslateY", "Color", "Contrast", "AutoContrast"} <= seen, seen


def test_v1_pil_rows_follow_pillow_not_the_tensor_rule():
    # The same transform on a tensor keeps torchvision's tensor rule (affine / adjust_hue rows); on a PIL image
    # Pillow's rows (fill + pil_affine with its low parts, pil_hue)
    rot, hue = T1.RandomRotation((30, 45), IM.BILINEAR), T1.ColorJitter(hue=0.5)
    assert {op.op for op in match_augment(rot, 40, 40)[0].draw(P.Rng(1), 40, 40)} == {"affine"}
    assert [op.op for op in match_augment(rot, 40, 40, pil=True)[0].draw(P.Rng(1), 40, 40)] == \
        ["fill", "pil_affine_low", "pil_affine_low", "pil_affine"]
    assert [op.op for op in match_augment(hue, 40, 40)[0].draw(P.Rng(1), 40, 40)] == ["adjust_hue"]
    (op,) = match_augment(hue, 40, 40, pil=True)[0].draw(P.Rng(1), 40, 40)
    assert op.op == "pil_hue" and op.args == (float(int(op.magnitude * 255) % 256),)


def test_pil_only_forms_fuse_and_the_rest_say_why():
    # Pillow takes bicubic, per-channel fills and RandomAffine's scale; not Pillow's other filters, a fill of
    # 2 values, expand=True or RandomPosterize(bits=0) (Pillow's posterize decides: black or an error)
    for t in (T1.RandomRotation(10, IM.BICUBIC), T1.RandomAffine(5, scale=(0.9, 1.1), fill=[1, 2, 3]),
              T1.TrivialAugmentWide(interpolation=IM.BICUBIC, fill=[4, 5, 6])):
        assert match_augment(t, 32, 32, pil=True)[0] is not None
    for t, why in [(T1.RandomRotation(10, IM.BOX), "interpolation"), (T1.RandomAffine(5, fill=[1, 2]), "fill"),
                   (T1.RandomRotation(10, expand=True), "expand"), (T1.RandomPosterize(0, 1.0), "bits=0"),
                   (T1.RandAugment(interpolation=IM.LANCZOS), "interpolation"),
                   (T1.RandomAffine(5, scale=(0.9, 1.1)), None)]:
        sampler, reason = match_augment(t, 32, 32)  # on a tensor
        if why is None:
            assert sampler is None and "scale" in reason  # the tensor affine has no scale
            continue
        sampler, reason = match_augment(t, 32, 32, pil=True)
        assert sampler is None and why in reason, (t, reason)
    assert "below 1e-30" in match_augment(T1.RandomAffine(0, scale=(1e-31, 1.0)), 32, 32, pil=True)[1]
    bad = T1.RandomAffine(0, scale=(0.5, 1.0))
    bad.scale = (0.0, 1.0)  # torchvision's constructor refuses it; its forward would pass scale 0 to Pillow
    with pytest.raises(ValueError, match=r"RandomAffine: scale=\(0.0, 1.0\) is invalid \(0 < min <= max\)"):
        match_augment(bad, 32, 32, pil=True)


def test_policies_fuse_their_pil_forms_in_a_pipeline():
    # A v1 train pipeline on PIL images (before PILToTensor) draws Pillow's rows; after PILToTensor (a tensor)
    # torchvision's tensor rows
    on_pil = analyse(T1.Compose([T1.RandomResizedCrop(32), T1.RandAugment(), T1.ColorJitter(0.2, hue=0.1),
                                 T1.PILToTensor()]))
    on_tensor = analyse(T1.Compose([T1.PILToTensor(), T1.RandomResizedCrop(32), T1.RandAugment(),
                                    T1.ColorJitter(0.2, hue=0.1)]))
    for a, kinds in ((on_pil, {"pil_enhance", "pil_hue"}), (on_tensor, {"adjust_brightness", "adjust_hue"})):
        assert a.plan.rest is None, a.reason
        ops = [op.op for s in range(40) for op in a.plan.sample_augmentation(s) if op.transform == "ColorJitter"]
        assert set(ops) == kinds
    assert on_pil.plan.augment.max_rows == 2 * 4 + 2  # RandAugment's 2 ops: fill, 2 low parts, pil_affine each


# ------------------------------------------------------------------------------------------- end to end

def test_v1_pipeline_on_pil_equals_torchvision_end_to_end(tmp_path):
    # RandomResizedCrop, then the augmentations on the PIL crop, then PILToTensor: the fused batch against
    # torchvision's own transforms (with the sample's draws) on the un-augmented crop as a PIL image
    from spdl_torch.io._batch import decode_images

    paths = [str(images.write(tmp_path / f"{k}.png", images.upsampled_noise(70 + 9 * k, 90 - 4 * k, seed=k, cell=6)))
             for k in range(6)]
    rot = T1.RandomRotation((-45, 45), IM.BILINEAR, fill=(9, 99, 199))
    jitter = T1.ColorJitter(0.4, 0.4, 0.4, 0.45)
    gray, trivial = T1.RandomGrayscale(0.3), T1.TrivialAugmentWide(interpolation=IM.BICUBIC)
    t = T1.Compose([T1.RandomResizedCrop(48), rot, jitter, gray, trivial, T1.PILToTensor()])
    ds = FileListDataset(paths, transform=t, seed=3, require_fused=True)
    got = collate(ds.__getitems__(range(len(paths))))[0]
    assert got.shape == (6, 3, 48, 48) and got.dtype == torch.uint8
    plan = ds.plan
    seeds = FusedPlan.sample_seeds(3, 0, range(len(paths)))
    geometry = {k: v for k, v in plan.op_kwargs.items() if k not in ("dtype", "mean", "std")}
    crops = decode_images(paths, seeds=seeds, **geometry).data
    for k, seed in enumerate(seeds.tolist()):
        ops = plan.sample_augmentation(seed)
        pil = to_pil(crops[k])
        by = {name: [op for op in ops if op.transform == name] for name in
              ("RandomRotation", "ColorJitter", "RandomGrayscale", "TrivialAugmentWide")}
        pil = _rotation(rot, pil, by["RandomRotation"], None)
        pil = _jitter(jitter, pil, by["ColorJitter"], None)
        pil = TF.rgb_to_grayscale(pil, 3) if by["RandomGrayscale"] else pil
        pil = _policy(trivial, pil, by["TrivialAugmentWide"], None)
        assert torch.equal(got[k], T1.PILToTensor()(pil)), (k, [(o.op, o.name, o.magnitude) for o in ops])
    assert fuse(t).rest is None


# ------------------------------------------------------------------------------------------ real photos

@functools.cache
def _real_photos(limit: int = 6) -> list[torch.Tensor]:
    """Photographs of the corpus (the 500 x 500 and larger sRGB ones, a 150 x 103 JPEG), each reduced to fit 160 x
    160 by Pillow."""
    names = ("srgb8.png", "hdr_room.png", "flower_cropped.jpg", "video-001.jpeg")
    paths = [p for p in corpus.files("photos_png", ".png") + corpus.files("jpeg_variants", ".jpg", ".jpeg")
             if corpus.short_name(p).endswith(names)]
    out = []
    for p in paths:
        pil = Image.open(p).convert("RGB")
        if min(pil.size) >= 100 and len(out) < limit:
            pil.thumbnail((160, 160), Image.Resampling.BILINEAR)
            out.append(from_pil(pil))
    return out


@pytest.mark.slow
@pytest.mark.parametrize("name", list(CASES))
def test_v1_op_on_real_photos_equals_torchvision(name):
    # ~0.3-3 s a case on 2 cores: 6 corpus photos of up to 160 x 160, 8 seeds each (24 for the policies)
    corpus.require_corpus()
    photos = _real_photos()
    assert photos
    assert_fused_equals_torchvision(name, photos, list(range(100, 108 if name not in POLICIES else 124)))
