"""Classic torchvision.transforms (v1) recipes on spdl_torch's datasets: fused, and against torchvision's own
ImageFolder + the same v1 transform on PIL images."""

import math
import os
import warnings

import numpy as np
import pytest
import torch
import torchvision
import torchvision.transforms as T
import torchvision.transforms.functional as F1
from PIL import Image

from spdl_torch.datasets import FileListDataset, ImageFolder, collate
from spdl_torch.transforms import FusedPlan, fuse
from spdl_torch.transforms._fuse import input_kind
from tests._utils.images import psnr
from tests._utils import corpus
from tests._utils.images import train_box
from tests._utils.images import IMAGENET_MEAN, IMAGENET_STD

MEAN, STD = list(IMAGENET_MEAN), list(IMAGENET_STD)
MIN_PSNR = 38.0
BILINEAR, BICUBIC = T.InterpolationMode.BILINEAR, T.InterpolationMode.BICUBIC


def v1_eval(interp=BILINEAR, size=256, crop=224):
    return T.Compose([T.Resize(size, interpolation=interp), T.CenterCrop(crop), T.ToTensor(), T.Normalize(MEAN, STD)])


def v1_train(size=224, **kw):
    return T.Compose([T.RandomResizedCrop(size, **kw), T.RandomHorizontalFlip(), T.ToTensor(), T.Normalize(MEAN, STD)])


def psnr_normalized(a, b):
    """PSNR of two normalized float images on the 0..255 scale."""
    scale = 255 * torch.tensor(STD).view(-1, 3, 1, 1)
    return psnr(a * scale, b * scale)


# Real photos of the media corpus (JPEG variants of photographs; the truncated one fails in Pillow) and the
# ImageNet-like set when `make demo` has prepared it.
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PHOTOS = [p for p in corpus.files("jpeg_variants", ".jpg", ".jpeg") if "truncated" not in p.name]
PHOTOS += sorted(__import__("pathlib").Path(REPO, "data", "imagenet_like", "train").glob("*/*.JPEG"))[::16]


@pytest.fixture(scope="module")
def photo_tree(tmp_path_factory):
    if not PHOTOS:
        pytest.skip("no real photos: the media corpus is absent")
    root = tmp_path_factory.mktemp("photos")
    for i, p in enumerate(PHOTOS):
        d = root / f"c{i % 3}"
        d.mkdir(exist_ok=True)
        os.symlink(p, d / f"{i:03d}.jpg")
    return root


@pytest.fixture(scope="module")
def small_tree(tmp_path_factory):
    root = tmp_path_factory.mktemp("small")
    rng = np.random.default_rng(1)
    for c in ("a", "b"):
        (root / c).mkdir()
        for k in range(4):
            h, w = 60 + 9 * k, 80 - 5 * k
            small = rng.integers(0, 256, (h // 8, w // 8, 3), dtype=np.uint8)
            Image.fromarray(small).resize((w, h), Image.BICUBIC).save(root / c / f"{k}.png")
    return root


# --- fuse() of v1 --------------------------------------------------------------------------------


def test_classic_recipes_fuse_completely():
    plan = fuse(v1_eval())
    assert plan.op_kwargs == dict(geometry="eval", resize_shorter=256, height=224, width=224, interpolation="bilinear",
                                  dtype=torch.float32, mean=tuple(MEAN), std=tuple(STD))
    assert plan.rest is None and not plan.random
    plan = fuse(v1_train())
    assert plan.op_kwargs == dict(geometry="train", height=224, width=224, scale=(0.08, 1.0), ratio=(0.75, 4 / 3),
                                  interpolation="bilinear", hflip_prob=0.5, dtype=torch.float32,
                                  mean=tuple(MEAN), std=tuple(STD))
    assert plan.rest is None and plan.random
    assert input_kind(v1_eval()) == "pil" and input_kind(torchvision.transforms.v2.Resize(3)) == "tensor"


def test_input_kind_of_mixed_pipelines():
    v2 = torchvision.transforms.v2
    # v2 first, a v1 transform that takes tensors later: tensors (as before v1 support), fused as far as it goes.
    t = v2.Compose([v2.RandomResizedCrop(24), v2.ToDtype(torch.float32, scale=True), T.Normalize(MEAN, STD)])
    assert input_kind(t) == "tensor" and fuse(t).rest is None
    # v1 ToTensor anywhere refuses tensors: PIL, as torchvision's ImageFolder would give it.
    t = v2.Compose([v2.RandomResizedCrop(24), v2.RandomHorizontalFlip(), T.ToTensor()])
    assert input_kind(t) == "pil" and fuse(t).rest is None and fuse(t).op_kwargs["dtype"] == torch.float32
    assert input_kind(lambda x: x) == "tensor" and input_kind(None) == "tensor"


def test_v1_variants_fuse():
    # PILToTensor + ConvertImageDtype instead of ToTensor; Resize((h, w)); bicubic; Resize([S]); flip after ToTensor.
    t = T.Compose([T.Resize((30, 40), interpolation=BICUBIC), T.PILToTensor(), T.ConvertImageDtype(torch.float32),
                   T.RandomHorizontalFlip(0.3), T.Normalize(MEAN, STD)])
    assert fuse(t).op_kwargs == dict(geometry="resize", height=30, width=40, interpolation="bicubic", hflip_prob=0.3,
                                     dtype=torch.float32, mean=tuple(MEAN), std=tuple(STD))
    assert fuse(T.Compose([T.Resize([20]), T.CenterCrop((10, 12)), T.PILToTensor()])).op_kwargs == dict(
        geometry="eval", resize_shorter=20, height=10, width=12, interpolation="bilinear")
    # PIL images are always antialiased: antialias=False does not matter for a v1 pipeline of PIL images.
    assert fuse(T.Compose([T.Resize(20, antialias=False), T.CenterCrop(16)])).op_kwargs["resize_shorter"] == 20
    assert fuse(T.Compose([T.CenterCrop(8), T.ToTensor(), T.ConvertImageDtype(torch.bfloat16)])).op_kwargs == dict(
        geometry="eval", resize_shorter=0, height=8, width=8, dtype=torch.bfloat16)
    # NEAREST on a PIL image is Pillow's (the op's nearest_exact); max_size maps.
    assert fuse(T.Compose([T.Resize(20, interpolation=T.InterpolationMode.NEAREST), T.CenterCrop(8)])).op_kwargs == \
        dict(geometry="eval", resize_shorter=20, height=8, width=8, interpolation="nearest_exact")
    assert fuse(T.Compose([T.Resize(20, max_size=40), T.CenterCrop(8)])).op_kwargs["max_size"] == 40
    # Not fused: Pillow-only filters (LANCZOS, BOX), Resize(S) alone, Normalize of a PIL image, ToTensor
    # after PILToTensor.
    assert fuse(T.Compose([T.Resize(20, interpolation=T.InterpolationMode.LANCZOS), T.CenterCrop(8)])) is None
    assert fuse(T.Resize(20)) is None
    plan = fuse(T.Compose([T.CenterCrop(8), T.Normalize(MEAN, STD)]))
    assert "mean" not in plan.op_kwargs and plan.rest_input == "pil"
    plan = fuse(T.Compose([T.CenterCrop(8), T.PILToTensor(), T.ToTensor()]))
    assert type(plan.rest.transforms[0]) is T.ToTensor and plan.rest_input == "tensor"


# --- pixels against torchvision's ImageFolder + v1 on PIL -----------------------------------------


@pytest.mark.slow  # torchvision's v1 on PIL over the photo tree is the cost (~10 s a case on 2 cores)
@pytest.mark.parametrize("interp", [BILINEAR, BICUBIC], ids=["bilinear", "bicubic"])
def test_eval_matches_torchvision_v1_on_pil(photo_tree, interp):
    t = v1_eval(interp)
    ref = torchvision.datasets.ImageFolder(photo_tree, transform=t)
    ours = ImageFolder(photo_tree, transform=t, require_fused=True)
    assert ours.samples == ref.samples
    batch, labels = collate(ours.__getitems__(list(range(len(ours)))))
    assert batch.shape == (len(ref), 3, 224, 224) and batch.dtype == torch.float32
    assert labels.tolist() == ref.targets
    scores = {os.path.basename(p): psnr_normalized(ref[i][0], batch[i]) for i, (p, _) in enumerate(ref.samples)}
    worst = min(scores, key=scores.get)
    assert scores[worst] >= MIN_PSNR, f"worst {worst}: {scores[worst]:.1f} dB over {len(scores)} photos"


@pytest.mark.slow  # the photo tree through torchvision's v1 pipeline
def test_train_geometry_follows_the_rrc_rule(photo_tree):
    t = v1_train(scale=(0.2, 1.0))
    ours = ImageFolder(photo_tree, transform=t, seed=5, require_fused=True)
    ref = torchvision.datasets.ImageFolder(photo_tree)  # PIL images
    idx = list(range(0, len(ours), 2))
    batch = collate(ours.__getitems__(idx))[0]
    seeds = FusedPlan.sample_seeds(ours.seed, ours.epoch, idx).tolist()
    worst = math.inf
    for k, (i, s) in enumerate(zip(idx, seeds)):
        img = ref[i][0]
        top, left, h, w, flip = train_box(s, img.height, img.width, scale=(0.2, 1.0), hflip_prob=0.5)
        crop = F1.resized_crop(img, top, left, h, w, [224, 224])  # PIL: antialiased bilinear
        crop = F1.hflip(crop) if flip else crop
        worst = min(worst, psnr_normalized(F1.normalize(F1.to_tensor(crop), MEAN, STD), batch[k]))
    assert worst >= MIN_PSNR


def test_unfused_v1_gets_pil_images_like_torchvision(small_tree):
    # Resize(S) alone has no fixed size: nothing fuses, and the v1 pipeline gets PIL images as from torchvision.
    t = T.Compose([T.Resize(30), T.ToTensor()])
    with pytest.warns(UserWarning, match=r"not fused: Resize\(size=30"):
        ours = ImageFolder(small_tree, transform=t)
    ref = torchvision.datasets.ImageFolder(small_tree, transform=t)
    assert ours.plan is None
    for i in range(len(ref)):
        assert torch.equal(ours[i][0], ref[i][0])
    # A v1 transform that only works on PIL images, unfused, also runs.
    pil_only = T.Compose([T.Lambda(lambda im: im.convert("L").convert("RGB")), T.ToTensor()])
    with pytest.warns(UserWarning):
        ours = FileListDataset([p for p, _ in ref.samples], transform=pil_only)
    ref = torchvision.datasets.ImageFolder(small_tree, transform=pil_only)
    assert all(torch.equal(ours[i][0], ref[i][0]) for i in range(len(ref)))


def test_remainder_before_to_tensor_gets_pil_images(small_tree):
    # Fused CenterCrop; the PIL-only Lambda, ToTensor and Normalize run per sample, on PIL images first.
    gray = T.Lambda(lambda im: im.convert("L").convert("RGB"))
    t = T.Compose([T.CenterCrop(40), gray, T.ToTensor(), T.Normalize(MEAN, STD)])
    with pytest.warns(UserWarning, match=r"only partly fused: Lambda.* run per sample in Python"):
        ours = ImageFolder(small_tree, transform=t)
    plan = ours.plan
    assert plan.rest_input == "pil" and plan.batched is None
    assert [type(x) for x in plan.per_sample.transforms] == [T.Lambda, T.ToTensor, T.Normalize]
    ref = torchvision.datasets.ImageFolder(small_tree, transform=t)
    batch = collate(ours.__getitems__(list(range(len(ours)))))[0]
    for i in range(len(ref)):
        torch.testing.assert_close(batch[i], ref[i][0])  # PNG, crop only: the same pixels
    assert isinstance(ours.__getitems__([0])[0][0], torch.Tensor)
    assert torch.equal(ours[2][0], batch[2])


def test_random_v1_remainder_draws_per_sample_from_torch_rng(small_tree):
    # RandomPerspective (never fused) after the fused crop: per sample, on PIL images, one draw per sample from torch's RNG.
    t = T.Compose([T.CenterCrop(40), T.RandomPerspective(p=1.0), T.ToTensor()])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours = ImageFolder(small_tree, transform=t)
    ref = torchvision.datasets.ImageFolder(small_tree, transform=t)
    torch.manual_seed(3)
    batch = collate(ours.__getitems__(list(range(len(ours)))))[0]
    torch.manual_seed(3)
    expected = torch.stack([ref[i][0] for i in range(len(ref))])
    torch.testing.assert_close(batch, expected)
    assert not torch.equal(batch[0] / batch[0].mean(), batch[1] / batch[1].mean())


def test_torchvision_pil_loader_with_v1(small_tree):
    # An explicit loader (torchvision's own) is not fused; the result is torchvision's exactly.
    t = v1_eval(size=40, crop=32)
    ours = ImageFolder(small_tree, transform=t, loader=torchvision.datasets.folder.default_loader)
    ref = torchvision.datasets.ImageFolder(small_tree, transform=t)
    assert ours.plan is None
    assert all(torch.equal(ours[i][0], ref[i][0]) for i in range(len(ref)))


# --- a user's subclass runs its own code; no-ops are absorbed ------------------------------------------


class ZeroCall(T.Compose):
    """Overrides __call__ (what torchvision's v1 Compose runs): its output times 0."""

    def __call__(self, img):
        return super().__call__(img) * 0


class UnusedForward(T.Compose):
    """Defines a forward that v1's Compose never calls: it runs as torchvision's Compose, so it fuses."""

    def forward(self, img):
        return img * 0


class ZeroApply(T.RandomApply):
    def forward(self, img):
        return F1.invert(super().forward(img))


class GreyFirst(T.RandomApply):
    """A v1 subclass that needs PIL images (as its base gets them from torchvision's ImageFolder)."""

    def forward(self, img):
        return super().forward(img).convert("L").convert("RGB")


@pytest.mark.parametrize("make, cls, fused", [
    (lambda: T.Compose([GreyFirst([T.RandomHorizontalFlip(1.0)], p=1.0), T.CenterCrop(40),
                        torchvision.transforms.v2.PILToTensor()]), "GreyFirst", False),
    (lambda: ZeroCall([T.CenterCrop(40), T.ToTensor()]), "ZeroCall", False),
    (lambda: T.Compose([T.CenterCrop(40), ZeroCall([T.ToTensor()]), T.Normalize(MEAN, STD)]), "ZeroCall", False),
    (lambda: T.Compose([T.CenterCrop(40), ZeroApply([T.RandomHorizontalFlip(1.0)], p=1.0), T.PILToTensor()]),
     "ZeroApply", False),
    (lambda: UnusedForward([T.CenterCrop(40), T.ToTensor(), T.Normalize(MEAN, STD)]), None, True),
    (lambda: T.Compose([T.CenterCrop(40), UnusedForward([T.ToTensor(), T.Normalize(MEAN, STD)])]), None, True),
], ids=["pil_first", "call", "call_nested", "random_apply_forward", "unused_forward", "unused_forward_nested"])
def test_v1_subclass_runs_as_torchvision_runs_it(small_tree, make, cls, fused):
    t = make()
    ref = torchvision.datasets.ImageFolder(small_tree, transform=t)
    if fused:
        ours = ImageFolder(small_tree, transform=t, require_fused=True)
        assert ours.plan.rest is None
    else:
        reason = f"{cls} overrides {'__call__' if cls == 'ZeroCall' else 'forward'}: runs as written"
        with pytest.warns(UserWarning, match=reason):
            ours = ImageFolder(small_tree, transform=t)
        assert reason in repr(ours)
        with pytest.raises(ValueError, match=rf"(?s)require_fused=True, but {cls}\(.*{reason}"):
            ImageFolder(small_tree, transform=t, require_fused=True)
    batch = collate(ours.__getitems__(list(range(len(ours)))))[0] if ours.plan is not None else \
        torch.stack([ours[i][0] for i in range(len(ours))])
    for i in range(len(ref)):
        torch.testing.assert_close(batch[i], ref[i][0], rtol=0, atol=1e-6)  # PNG, crop only: the same values
    if type(t) is ZeroCall:
        assert float(batch.abs().max()) == 0


V2 = torchvision.transforms.v2


@pytest.mark.parametrize("t", [
    # on the PIL image: v2's dtype conversions and ToPureTensor pass it through, an empty RandomApply too
    T.Compose([T.CenterCrop(40), V2.ToDtype(torch.uint8), V2.ToDtype(torch.float32, scale=True), V2.ToPureTensor(),
               V2.ConvertImageDtype(torch.float32), T.RandomApply([]), V2.Identity(), T.PILToTensor()]),
    # on the uint8 tensor
    T.Compose([T.CenterCrop(40), T.PILToTensor(), T.ConvertImageDtype(torch.uint8), V2.ToDtype(torch.uint8),
               V2.ToDtype(torch.uint8, scale=True), torch.nn.Identity()]),
    # on the float32 tensor of ToTensor
    T.Compose([T.CenterCrop(40), T.ToTensor(), T.ConvertImageDtype(torch.float32), V2.ToDtype(torch.float32),
               T.Normalize(MEAN, STD), V2.ToDtype(torch.float32, scale=True), T.RandomApply([])]),
], ids=["pil", "uint8", "float32"])
def test_v1_noops_are_fused(small_tree, t):
    ours = ImageFolder(small_tree, transform=t, require_fused=True)
    assert ours.plan.rest is None
    ref = torchvision.datasets.ImageFolder(small_tree, transform=t)
    batch = collate(ours.__getitems__(list(range(len(ours)))))[0]
    for i in range(len(ref)):
        assert batch[i].dtype == ref[i][0].dtype
        torch.testing.assert_close(batch[i], ref[i][0], rtol=0, atol=1e-6)


@pytest.mark.parametrize("flips, probs", [
    ([T.RandomHorizontalFlip(2.0), T.RandomApply([T.RandomVerticalFlip(1.0)], p=float("nan"))], (1.0, 1.0)),
    ([T.RandomHorizontalFlip(float("nan")), T.RandomApply([T.RandomVerticalFlip(-1.0)], p=0.5)], (0.0, 0.0)),
], ids=["always", "never"])
def test_v1_flip_probabilities_torchvision_runs(small_tree, flips, probs):
    # v1 flips compare torch.rand(1) < p: p above 1 always flips, below 0 or NaN never; RandomApply compares
    # p < torch.rand(1): NaN always applies
    t = T.Compose([T.CenterCrop(40), *flips, T.PILToTensor()])
    ours = ImageFolder(small_tree, transform=t, require_fused=True)
    assert (ours.plan.op_kwargs["hflip_prob"], ours.plan.op_kwargs["vflip_prob"]) == probs
    ref = torchvision.datasets.ImageFolder(small_tree, transform=t)
    batch = collate(ours.__getitems__(list(range(len(ours)))))[0]
    assert all(torch.equal(batch[i], ref[i][0]) for i in range(len(ref)))
    with pytest.raises(ValueError, match=r"RandomHorizontalFlip: p=1.5 is invalid"):  # v2's constructor refuses it
        flip = torchvision.transforms.v2.RandomHorizontalFlip()
        flip.p = 1.5
        fuse(T.Compose([T.CenterCrop(8), flip]))
