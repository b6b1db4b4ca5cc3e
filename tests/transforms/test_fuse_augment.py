"""fuse() of torchvision's random augmentations: torchvision's classification reference presets (both
backends, v1 and v2) fuse whole, the plan's per-sample programs reproduce torchvision's ops end to end
(decode_images with augment rows, here the reference executor standing in for the native op), the programs do
not depend on the loader's thread count, and what cannot fuse says why."""

import pytest
import torch
import torchvision.transforms as T1
from torchvision.transforms import v2
from torchvision.transforms.v2 import functional as F

import spdl_torch
import spdl_torch.io
from spdl_torch.datasets import FileListDataset, collate
from spdl_torch.transforms import FusedPlan, fuse
from spdl_torch.transforms._fuse import analyse

from tests._utils import images
from tests._utils.images import IMAGENET_MEAN, IMAGENET_STD

MEAN, STD = IMAGENET_MEAN, IMAGENET_STD
BILINEAR = v2.InterpolationMode.BILINEAR


def train_preset(T, backend, policy, crop=176, re_prob=0.1, hflip=0.5):
    """torchvision's references/classification/presets.py ClassificationPresetTrain, v1 (T1) or v2."""
    use_v2 = T is v2
    ts = [T.PILToTensor()] if backend == "tensor" else []
    ts.append(T.RandomResizedCrop(crop, interpolation=BILINEAR, antialias=True))
    if hflip > 0:
        ts.append(T.RandomHorizontalFlip(hflip))
    if policy == "ra":
        ts.append(T.RandAugment(interpolation=BILINEAR, magnitude=9))
    elif policy == "ta_wide":
        ts.append(T.TrivialAugmentWide(interpolation=BILINEAR))
    elif policy == "augmix":
        ts.append(T.AugMix(interpolation=BILINEAR, severity=3))
    else:
        ts.append(T.AutoAugment(policy=T.AutoAugmentPolicy(policy), interpolation=BILINEAR))
    if backend == "pil":
        ts.append(T.PILToTensor())
    ts += [T.ToDtype(torch.float, scale=True) if use_v2 else T.ConvertImageDtype(torch.float), T.Normalize(MEAN, STD)]
    if re_prob > 0:
        ts.append(T.RandomErasing(p=re_prob))
    if use_v2:
        ts.append(T.ToPureTensor())
    return T.Compose(ts)


def eval_preset(T, backend, crop=224, resize=256):
    use_v2 = T is v2
    ts = [T.PILToTensor()] if backend == "tensor" else []
    ts += [T.Resize(resize, interpolation=BILINEAR, antialias=True), T.CenterCrop(crop)]
    if backend == "pil":
        ts.append(T.PILToTensor())
    ts += [T.ToDtype(torch.float, scale=True) if use_v2 else T.ConvertImageDtype(torch.float), T.Normalize(MEAN, STD)]
    if use_v2:
        ts.append(T.ToPureTensor())
    return T.Compose(ts)


POLICY_CLASS = {"ta_wide": "TrivialAugmentWide", "ra": "RandAugment", "imagenet": "AutoAugment", "augmix": "AugMix"}


@pytest.mark.parametrize("T", [v2, T1], ids=["v2", "v1"])
@pytest.mark.parametrize("backend", ["pil", "tensor"])
@pytest.mark.parametrize("policy", ["ta_wide", "ra", "imagenet", "augmix"])
def test_reference_train_presets_fuse_whole(T, backend, policy):
    plan = fuse(train_preset(T, backend, policy))
    assert plan is not None and plan.rest is None, plan
    assert plan.augment.names() == [POLICY_CLASS[policy], "RandomErasing"]
    kw = plan.op_kwargs
    assert (kw["geometry"], kw["height"], kw["width"], kw["hflip_prob"]) == ("train", 176, 176, 0.5)
    assert kw["dtype"] == torch.float32 and kw["mean"] == MEAN and kw["std"] == STD
    assert plan.random and "augment programs" in plan.describe()


def test_unfusables_say_why():
    crop = v2.RandomResizedCrop(32)
    cases = [
        (v2.Compose([crop, v2.ToDtype(torch.float32, scale=True), v2.RandAugment()]), "float image"),
        (v2.Compose([crop, v2.Grayscale(3), v2.RandomInvert()]), "after Grayscale"),
        (v2.Compose([crop, v2.RandomInvert(), v2.RandomHorizontalFlip()]), "flip after an augmentation"),
        (v2.Compose([crop, v2.RandomErasing()]), "before the conversion to float"),
        (v2.Compose([crop, v2.ToDtype(torch.float32, scale=True), v2.RandomErasing(), v2.Normalize(MEAN, STD)]),
         "after RandomErasing"),
        (v2.Compose([crop, v2.RandomAffine(5, scale=(0.9, 1.1))]), "scale"),
        (v2.Compose([crop, v2.AugMix(interpolation=v2.InterpolationMode.BICUBIC)]), "interpolation"),
        (v2.Compose([crop, v2.ToDtype(torch.float32, scale=True), v2.AugMix()]), "float image"),
    ]
    for t, why in cases:
        a = analyse(t)
        assert a.plan is not None and why in a.reason, (t, a.reason)


def test_colour_and_geometry_augmentations_fuse():
    # the contrastive-learning recipe and the single random transforms
    t = v2.Compose([v2.RandomResizedCrop(64), v2.RandomHorizontalFlip(),
                    v2.RandomApply([v2.ColorJitter(0.4, 0.4, 0.4, 0.1)], p=0.8), v2.RandomGrayscale(0.2),
                    v2.GaussianBlur(7), v2.RandomRotation(10), v2.RandomAffine(0, translate=(0.1, 0.1)),
                    v2.RandomSolarize(128), v2.RandomPosterize(4), v2.RandomAdjustSharpness(2),
                    v2.RandomAutocontrast(), v2.RandomEqualize(), v2.RandomInvert(),
                    v2.ToDtype(torch.float32, scale=True), v2.RandomErasing(value="random")])
    plan = fuse(t)
    assert plan.rest is None, plan
    assert plan.augment.max_rows == 4 + 10 and plan.augment.eraser is not None
    seeds = FusedPlan.sample_seeds(0, 0, range(64))
    built = plan.augment.build(seeds)
    for k, seed in enumerate(seeds.tolist()):
        ops = plan.sample_augmentation(seed)
        assert ops == plan.sample_augmentation(seed)
        rows = [op.row() for op in ops if op.op != "erase"]
        assert torch.equal(built["augment"][k, :len(rows)], torch.tensor(rows).view(-1, 8))
        assert not built["augment"][k, len(rows):].any()


def test_bad_arguments_fail_when_the_dataset_is_built(tmp_path):
    path = images.write(tmp_path / "a.png", images.noise((8, 8, 3)))
    bad = v2.Compose([v2.RandomResizedCrop(8), v2.RandAugment(magnitude=40)])
    with pytest.raises(ValueError, match="RandAugment: magnitude=40"):
        FileListDataset([str(path)], transform=bad)


def test_erasing_keeps_the_normalisation_in_the_op():
    from spdl_torch.dataloader._finish import split_plan

    plan = fuse(train_preset(v2, "tensor", "ta_wide"))
    assert split_plan(plan) == (plan, None)
    no_erase = fuse(train_preset(v2, "tensor", "ta_wide", re_prob=0))
    host, finish = split_plan(no_erase)
    assert finish is not None and "dtype" not in host.op_kwargs and host.augment is no_erase.augment


# ------------------------------------------------------------------------------------------ end to end

@pytest.fixture(scope="module")
def paths(tmp_path_factory):
    root = tmp_path_factory.mktemp("aug")
    return [str(images.write(root / f"{k}.png", images.upsampled_noise(60 + 7 * k, 90 - 3 * k, seed=k, cell=6)))
            for k in range(12)]


def _torchvision_ops(t, image, ops):
    """torchvision's own op for each policy op the sample got."""
    for op in ops:
        image = t._apply_image_or_video_transform(image, op.name, op.magnitude, interpolation=t.interpolation,
                                                  fill=t._fill)
    return image


@pytest.mark.parametrize("policy", ["ta_wide", "ra", "imagenet"])
def test_fused_preset_equals_torchvision_ops_end_to_end(paths, policy):
    preset = train_preset(v2, "tensor", policy, crop=48, re_prob=0.5)
    ds = FileListDataset(paths, transform=preset, seed=11, require_fused=True)
    got = collate(ds.__getitems__(range(len(paths))))[0]
    assert got.shape == (len(paths), 3, 48, 48) and got.dtype == torch.float32
    plan = ds.plan
    seeds = FusedPlan.sample_seeds(11, 0, range(len(paths)))
    geometry = {k: v for k, v in plan.op_kwargs.items() if k not in ("dtype", "mean", "std")}
    crops = _real_decode(paths, seeds, geometry)  # the same crops and flips, uint8
    t = preset.transforms[3]
    erased = 0
    for k, seed in enumerate(seeds.tolist()):
        ops = plan.sample_augmentation(seed)
        policy_ops = [op for op in ops if op.op != "erase"]
        want = _torchvision_ops(t, crops[k], policy_ops)
        want = v2.Normalize(MEAN, STD)(v2.ToDtype(torch.float32, scale=True)(want))
        for op in ops:
            if op.op == "erase":
                _, i, j, h, w = (int(x) for x in op.args[:5])
                want = F.erase(want, i, j, h, w, torch.zeros(3, 1, 1))
                erased += 1
        d = (got[k] - want).abs() * torch.tensor(STD).view(3, 1, 1) * 255  # in uint8 levels
        assert (d > 1.01).float().mean().item() <= 0.005, (k, ops)
    assert 0 < erased < len(paths)


def _real_decode(paths, seeds, geometry):
    from spdl_torch.io._batch import decode_images  # the op itself (the fixture replaces spdl_torch.io's name)

    return decode_images(paths, seeds=seeds, **geometry).data


def assert_same_batches_for_1_and_2_workers(transform, paths):
    batches = []
    for workers in (1, 2):
        ds = FileListDataset(paths, transform=transform, seed=5, require_fused=True)
        loader = spdl_torch.DataLoader(ds, batch_size=4, num_workers=workers, collate_fn=collate)
        batches.append([b[0] for b in loader])
    assert len(batches[0]) == 3
    for a, b in zip(*batches):
        assert torch.equal(a, b)


def test_programs_do_not_depend_on_the_thread_count(paths):
    assert_same_batches_for_1_and_2_workers(train_preset(v2, "tensor", "ra", crop=40, re_prob=0.3), paths)


def test_resumed_dataset_repeats_the_augmentations(paths):
    preset = train_preset(v2, "tensor", "imagenet", crop=40, re_prob=0.5)
    ds = FileListDataset(paths, transform=preset, require_fused=True)  # seed drawn
    ds.set_epoch(3)
    state = torch.get_rng_state()
    first = collate(ds.__getitems__([5, 1, 7]))[0]
    assert torch.equal(torch.get_rng_state(), state)  # drawn from the samples' seeds, not torch's RNG
    again = FileListDataset(paths, transform=preset, require_fused=True)
    again.load_state_dict(ds.state_dict())
    assert torch.equal(collate(again.__getitems__([5, 1, 7]))[0], first)
    again.set_epoch(4)
    assert not torch.equal(collate(again.__getitems__([5, 1, 7]))[0], first)


def _augmix_pipelines(size=64):
    """AugMix after a RandomResizedCrop: v2 on tensors (uint8 output) and v1 on PIL images (float output)."""
    return {
        "v2": v2.Compose([v2.RandomResizedCrop(size), v2.AugMix()]),
        "v1": T1.Compose([T1.RandomResizedCrop(size), T1.AugMix(severity=5, mixture_width=2, chain_depth=2),
                          T1.PILToTensor(), T1.ConvertImageDtype(torch.float32), T1.Normalize(MEAN, STD)]),
    }


@pytest.mark.parametrize("form", ["v2", "v1"])
@pytest.mark.parametrize("dataset", ["folder", "filelist"])
def test_augmix_fuses_and_equals_the_reference_end_to_end(paths, tmp_path, form, dataset):
    # The whole pipeline fuses; each sample = the reference executor (torchvision's functional ops and its
    # mix arithmetic) on the un-augmented crop with the rows the sample drew, then the conversion.
    from spdl_torch.datasets import ImageFolder

    from tests._utils.augment import apply_program

    t = _augmix_pipelines()[form]
    a = analyse(t)
    assert a.plan is not None and a.plan.rest is None, a.reason
    assert a.plan.augment.names() == ["AugMix"]
    if dataset == "folder":
        files = images.write_folder(tmp_path, ["a", "b"], 3, lambda rng, c, k: images.upsampled_noise(
            50 + 9 * k, 70 - 5 * k, seed=k + 10 * (c == "b"), cell=5), name="{k}.png")
        ds = ImageFolder(tmp_path, transform=t, seed=21, require_fused=True)
        files = [str(f) for f in files]
    else:
        files = paths
        ds = FileListDataset(files, transform=t, seed=21, require_fused=True)
    n = len(files)
    got = collate(ds.__getitems__(range(n)))[0]
    assert got.shape == (n, 3, 64, 64)
    plan = ds.plan
    seeds = FusedPlan.sample_seeds(21, 0, range(n))
    geometry = {k: v for k, v in plan.op_kwargs.items() if k not in ("dtype", "mean", "std")}
    crops = _real_decode(files, seeds, geometry)
    built = plan.augment.build(seeds)["augment"]
    assert built.shape[1] == plan.augment.max_rows == (14 if form == "v2" else 2 + 2 * 3)
    changed = 0
    for k, seed in enumerate(seeds.tolist()):
        ops = plan.sample_augmentation(seed)
        assert [op.op for op in ops][0] == "mix_begin" and ops[-1].op == "mix_end"
        assert sum(op.op == "mix_add" for op in ops) == (3 if form == "v2" else 2)
        rows = torch.tensor([op.row() for op in ops])
        assert torch.equal(built[k, :len(rows)], rows) and not built[k, len(rows):].any()
        want = apply_program(crops[k], rows)
        changed += not torch.equal(want, crops[k])
        if form == "v1":
            want = v2.Normalize(MEAN, STD)(v2.ToDtype(torch.float32, scale=True)(want))
            d = (got[k] - want).abs() * torch.tensor(STD).view(3, 1, 1) * 255  # in uint8 levels
            assert float(d.max()) <= 1.01 and (d > 0.01).float().mean().item() <= 0.01, (k, ops)
        else:
            d = (got[k].int() - want.int()).abs()
            assert int(d.max()) <= 1 and (d > 0).float().mean().item() <= 0.01, (k, ops)
    assert changed == n  # every sample was mixed
    # repeatable per seed (a fresh dataset), other seeds other programs
    again = (ImageFolder(tmp_path, transform=t, seed=21, require_fused=True) if dataset == "folder"
             else FileListDataset(files, transform=t, seed=21, require_fused=True))
    assert torch.equal(collate(again.__getitems__(range(n)))[0], got)
    assert not torch.equal(plan.augment.build(FusedPlan.sample_seeds(22, 0, range(n)))["augment"], built)


def test_augmix_does_not_depend_on_the_thread_count(paths):
    assert_same_batches_for_1_and_2_workers(_augmix_pipelines(40)["v2"], paths)


@pytest.mark.parametrize("make, arg", [
    (lambda: v2.AugMix(mixture_width=1.5), "mixture_width"),
    (lambda: T1.AugMix(alpha=0), "alpha"),
    (lambda: v2.AugMix(chain_depth=2.5), "chain_depth"),
])
def test_bad_augmix_arguments_fail_when_the_dataset_is_built(tmp_path, make, arg):
    path = images.write(tmp_path / "a.png", images.noise((8, 8, 3)))
    t = make()
    bad = (v2 if type(t).__module__.startswith("torchvision.transforms.v2") else T1).Compose(
        [v2.RandomResizedCrop(8), t])
    with pytest.raises(ValueError, match=f"AugMix: {arg}="):
        FileListDataset([str(path)], transform=bad)
