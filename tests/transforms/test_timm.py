"""timm's transforms recognised by module and class name (spdl_torch never imports timm): what
``timm.data.create_transform`` returns fuses as far as it has a fused form, and says why not beyond it."""

import collections
import math

import pytest
import torch
from PIL import Image
from torchvision.transforms import InterpolationMode

from spdl_torch.datasets import FileListDataset, collate
from spdl_torch.transforms import fuse
from spdl_torch.transforms._fuse import analyse

from tests._utils import images
from tests._utils.augment import timm_stand_in


def test_timm_classes_recognised_by_name():
    import torchvision.transforms as T1

    rrc = timm_stand_in("RandomResizedCropAndInterpolation", size=(64, 48), scale=(0.2, 1.0), ratio=(0.75, 1.33),
                      interpolation=InterpolationMode.BICUBIC)
    erase = timm_stand_in("RandomErasing", probability=0.25, min_area=0.02, max_area=1 / 3,
                        log_aspect_ratio=(math.log(0.3), math.log(1 / 0.3)), min_count=1, max_count=1, mode="pixel")
    t = T1.Compose([rrc, T1.RandomHorizontalFlip(), timm_stand_in("MaybeToTensor"),
                    T1.Normalize(torch.tensor([0.5] * 3), torch.tensor([0.25] * 3)), erase])
    a = analyse(t)
    assert a.input == "pil" and a.plan.rest is None, a
    kw = a.plan.op_kwargs
    assert (kw["geometry"], kw["height"], kw["width"], kw["interpolation"]) == ("train", 64, 48, "bicubic")
    assert kw["scale"] == (0.2, 1.0) and kw["dtype"] == torch.float32 and kw["mean"] == (0.5,) * 3
    assert a.plan.fused[0] is rrc and a.plan.augment.names() == ["RandomErasing"]
    (op,) = [op for s in range(200) for op in a.plan.sample_augmentation(s)][:1]
    assert op.op == "erase" and op.args[0] == 2  # mode="pixel": normal values per pixel

    random_interp = timm_stand_in("RandomResizedCropAndInterpolation", size=(64, 64), scale=(0.08, 1.0),
                                ratio=(0.75, 1.33), interpolation=(InterpolationMode.BILINEAR, InterpolationMode.BICUBIC))
    a = analyse(T1.Compose([random_interp, timm_stand_in("MaybeToTensor")]))
    assert a.plan.rest is None and a.plan.op_kwargs["interpolation"] == ("bilinear", "bicubic") and a.plan.random
    blur = timm_stand_in("AugmentOp", name="GaussianBlur", prob=0.5, magnitude=9, hparams={}, kwargs={})
    rand = timm_stand_in("RandAugment", ops=[blur], num_layers=2, choice_weights=None)
    a = analyse(T1.Compose([rrc, rand, timm_stand_in("ToNumpy")]))
    assert a.unfused is rand and "GaussianBlur" in a.reason
    erase.mode, erase.max_count = "rand", 3  # one normal value per channel and box, up to 3 boxes
    a = analyse(T1.Compose([rrc, timm_stand_in("MaybeToTensor"), erase]))
    assert a.plan.rest is None and a.plan.augment.eraser.max_rows == 3, a
    ops = [op for s in range(400) for op in a.plan.sample_augmentation(s)]
    assert {op.args[0] for op in ops} == {1} and {len([o for o in a.plan.sample_augmentation(s)])
                                                  for s in range(400)} == {0, 1, 2, 3}
    assert len({op.args[5:] for op in ops}) == len(ops)  # a colour per box
    for attr, value, match in [("probability", "0.5", "probability='0.5'"), ("mode", "cut", "mode='cut'"),
                               ("min_count", 4, r"min_count/max_count=\(4, 3\)"),
                               ("min_count", 1.0, r"min_count/max_count=\(1.0, 3\)"),
                               ("max_area", -0.1, "min_area/max_area"), ("min_area", math.inf, "min_area/max_area")]:
        bad = timm_stand_in("RandomErasing", **{**erase.__dict__, attr: value})
        with pytest.raises(ValueError, match=match):
            analyse(T1.Compose([rrc, timm_stand_in("MaybeToTensor"), bad]))


@pytest.fixture(scope="module")
def paths(tmp_path_factory):
    root = tmp_path_factory.mktemp("timm")
    return [str(images.write(root / f"{k}.png", images.upsampled_noise(300 + 20 * k, 260 - 10 * k, seed=k, cell=20)))
            for k in range(4)]


def test_timm_create_transform(paths):
    timm_data = pytest.importorskip("timm.data")
    train = timm_data.create_transform(224, is_training=True, auto_augment="rand-m9-mstd0.5-inc1", re_prob=0.25,
                                       interpolation="random")
    a = analyse(train)
    assert a.plan.op_kwargs["interpolation"] == ("bilinear", "bicubic")
    assert a.plan.rest is None and a.plan.augment.names() == ["RandAugment", "RandomErasing"], a.reason
    train = timm_data.create_transform(224, is_training=True, auto_augment="rand-m9-mstd0.5-inc1", re_prob=0.25,
                                       interpolation="bilinear")
    a = analyse(train)
    assert a.plan.op_kwargs["geometry"] == "train" and a.plan.op_kwargs["hflip_prob"] == 0.5
    assert a.plan.rest is None  # timm's policies: tests/transforms/test_timm_policies.py
    plain = timm_data.create_transform(96, is_training=True, re_prob=0.25, re_mode="pixel", interpolation="bicubic",
                                       color_jitter=None)
    plan = fuse(plain)
    assert plan.rest is None and plan.augment.names() == ["RandomErasing"], plan
    # eval: fused whole, the values of timm's own pipeline on the PIL image
    ev = timm_data.create_transform(96)
    ds = FileListDataset(paths, transform=ev, require_fused=True)
    got = collate(ds.__getitems__(range(len(paths))))[0]
    for k, p in enumerate(paths):
        want = ev(Image.open(p).convert("RGB"))
        mse = ((got[k] - want) * torch.tensor(timm_data.IMAGENET_DEFAULT_STD).view(3, 1, 1)).pow(2).mean().item()
        assert 10 * math.log10(1 / max(mse, 1e-12)) > 40


def test_timm_random_draws_match_ours():
    # timm's own draws (Python's random module) against the fused forms: the erasing box of timm's
    # RandomErasing and the crop box of RandomResizedCropAndInterpolation, chi-square over 20,000 draws.
    import random

    pytest.importorskip("timm.data")
    from timm.data.random_erasing import RandomErasing
    from timm.data.transforms import RandomResizedCropAndInterpolation

    from spdl_torch.transforms._sample_geometry import sample_geometry
    from spdl_torch.transforms import _augment_program as P
    from spdl_torch.transforms import FusedPlan
    from spdl_torch.transforms._timm import translate

    from tests._utils.stats import homogeneity_p

    n, h, w = 20_000, 40, 52
    seeds = FusedPlan.sample_seeds(77, 0, range(n)).tolist()
    erase = RandomErasing(probability=0.5, mode="const", device="cpu")
    random.seed(0)
    theirs = collections.Counter()
    for _ in range(n):
        img = torch.ones((3, h, w))
        erase(img)
        box = (img[0] == 0).nonzero()
        theirs[(int(box[:, 0].min()) // 4, int(box[:, 1].min()) // 4, len(box[:, 0].unique()) // 3,
                len(box[:, 1].unique()) // 3) if len(box) else None] += 1
    sampler, _ = translate(erase)[0].sampler(3)
    mine = collections.Counter()
    for s in seeds:
        ops = sampler.draw(P.Rng(s), h, w)
        mine[tuple(int(x) // d for x, d in zip(ops[0].args[1:5], (4, 4, 3, 3))) if ops else None] += 1
    assert homogeneity_p(mine, theirs) > 1e-3

    rrc = RandomResizedCropAndInterpolation(32, scale=(0.1, 1.0))
    src = torch.zeros((3, 300, 200))
    theirs = collections.Counter(tuple(v // 20 for v in rrc.get_params(src, rrc.scale, rrc.ratio)) for _ in range(n))
    mine = collections.Counter()
    for s in seeds:
        g = sample_geometry(s, 300, 200, out_size=(32, 32), scale=(0.1, 1.0))
        mine[(g.top // 20, g.left // 20, g.height // 20, g.width // 20)] += 1
    assert homogeneity_p(mine, theirs) > 1e-3


def test_random_interpolation_draws_a_filter_per_sample(paths, tmp_path):
    import torchvision.transforms as T1

    from spdl_torch import DecodeError
    from spdl_torch.io import decode_images
    from spdl_torch.transforms import FusedPlan
    from spdl_torch.transforms._augment_program import interpolation_choice

    rrc = timm_stand_in("RandomResizedCropAndInterpolation", size=(40, 40), scale=(0.3, 1.0), ratio=(0.75, 1.33),
                      interpolation=(InterpolationMode.BILINEAR, InterpolationMode.BICUBIC))
    plan = fuse(T1.Compose([rrc, timm_stand_in("MaybeToTensor")]))
    srcs = paths * 4
    seeds = FusedPlan.sample_seeds(3, 0, range(len(srcs)))
    got = plan(srcs, seeds)
    kw = {k: v for k, v in plan.op_kwargs.items() if k not in ("geometry", "interpolation")}
    picks = [interpolation_choice(s, 2) for s in seeds.tolist()]
    assert 0 < sum(picks) < len(srcs)
    for c, name in enumerate(("bilinear", "bicubic")):
        whole = decode_images(srcs, seeds=seeds, geometry="train", interpolation=name, dimension_order="NHWC",
                              **kw).data.permute(0, 3, 1, 2)
        for k in range(len(srcs)):
            if picks[k] == c:
                assert torch.equal(got[k], whole[k])
    # a bad sample is named by its index in the whole batch
    bad = tmp_path / "bad.png"
    bad.write_bytes(b"\x89PNG\r\n\x1a\n" + b"\0" * 40)
    srcs[9] = str(bad)
    with pytest.raises(DecodeError) as info:
        plan(srcs, seeds)
    assert info.value.sample_index == 9 and str(info.value).startswith(f"{bad}: ")
    out, ok = plan(srcs, seeds, strict=False)
    assert ok.tolist() == [k != 9 for k in range(len(srcs))] and out.shape == got.shape
