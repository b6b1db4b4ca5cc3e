"""spdl_torch.transforms (fused plans from torchvision v2 pipelines) and the datasets' fused __getitems__."""

import math

import pytest
import torch
import torch.utils.data
from torchvision.transforms import v2

import spdl_torch
from spdl_torch.datasets import FileListDataset, ImageFolder, collate
from spdl_torch.io import decode_image
from spdl_torch.transforms import fuse, sample_seeds

from .. import images

MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
EVAL = v2.Compose([v2.Resize(40), v2.CenterCrop(32), v2.ToDtype(torch.float32, scale=True), v2.Normalize(MEAN, STD)])
TRAIN = v2.Compose([v2.RandomResizedCrop(24), v2.RandomHorizontalFlip(), v2.ToDtype(torch.float32, scale=True)])


def psnr(a, b, peak=255.0):
    mse = (a.double() - b.double()).pow(2).mean().item()
    return math.inf if mse == 0 else 10 * math.log10(peak**2 / mse)


@pytest.fixture(scope="module")
def image_tree(tmp_path_factory):
    root = tmp_path_factory.mktemp("tree")
    paths = images.write_folder(
        root, ("a", "b"), 5, lambda rng, c, k: images.upsampled_noise(50 + 7 * k, 70 - 3 * k, rng), quality=95
    )
    return root, [str(p) for p in paths]


# --- fuse() ----------------------------------------------------------------------------------------


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
    # max_size and NEAREST map (their pixels: tests/datasets/test_fusion_geometry.py).
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


def test_plan_matches_torchvision_eval(image_tree):
    _, paths = image_tree
    batch = fuse(EVAL)([spdl_torch.io.read_file(p) for p in paths])
    ref = torch.stack([EVAL(decode_image(p)) for p in paths])
    assert batch.shape == (len(paths), 3, 32, 32) and batch.dtype == torch.float32
    # Normalized values: compare on the 0..255 scale.
    scale = 255 * torch.tensor(STD).view(1, 3, 1, 1)
    assert psnr(batch * scale, ref * scale) >= 40


def test_plan_rest_runs_per_sample(image_tree):
    _, paths = image_tree
    t = v2.Compose([v2.CenterCrop(16), v2.Lambda(lambda x: x.float().mean())])
    out = fuse(t)(paths[:3])
    assert isinstance(out, list) and len(out) == 3 and out[0].dim() == 0


def test_sample_seeds():
    a = sample_seeds(1, 0, [0, 1, 2])
    assert a.dtype == torch.int64 and len(set(a.tolist())) == 3
    assert torch.equal(a, sample_seeds(1, 0, [0, 1, 2]))
    assert torch.equal(sample_seeds(1, 0, [2, 0])[0], a[2])
    assert not torch.equal(a, sample_seeds(1, 1, [0, 1, 2])) and not torch.equal(a, sample_seeds(2, 0, [0, 1, 2]))


# --- datasets ----------------------------------------------------------------------------------------


def test_getitems_views_and_zero_copy_collate(image_tree):
    root, _ = image_tree
    ds = ImageFolder(root, transform=EVAL, seed=0)
    items = ds.__getitems__([0, 3, 7])
    assert [t for _, t in items] == [ds.targets[0], ds.targets[3], ds.targets[7]]
    images, labels = collate(items)
    assert images.shape == (3, 3, 32, 32)
    assert images.data_ptr() == items[0][0].data_ptr()  # no copy
    assert labels.tolist() == [ds.targets[0], ds.targets[3], ds.targets[7]]
    stacked, _ = torch.utils.data.default_collate(items)  # also fine, with one copy
    assert torch.equal(stacked, images)
    assert torch.equal(ds[3][0], images[1])  # a single fetch gives the same image


def test_collate_falls_back_to_default():
    items = [(torch.zeros(2), 1), (torch.ones(2), 2)]
    images, labels = collate(items)
    assert torch.equal(images, torch.stack([torch.zeros(2), torch.ones(2)])) and labels.tolist() == [1, 2]
    batch = torch.zeros(3, 2)
    assert collate([(batch[0], 0), (batch[2], 1)])[0].shape == (2, 2)  # not the whole base: stacked
    whole = collate([(batch[0], 0), (batch[1], 1), (batch[2], 2)])[0]
    assert torch.equal(whole, batch) and whole.data_ptr() != batch.data_ptr()  # not ours: copied


def test_random_transforms_repeatable_with_seed_and_epoch(image_tree):
    _, paths = image_tree
    ds = FileListDataset(paths, labels=list(range(len(paths))), transform=TRAIN, seed=123)
    a = collate(ds.__getitems__([1, 2, 3]))[0]
    b = collate(ds.__getitems__([3, 1, 2]))[0]
    assert torch.equal(a, b[[1, 2, 0]])  # a sample's crop depends on its index, not on the batch
    assert torch.equal(ds[2][0], a[1])
    ds.set_epoch(1)
    c = collate(ds.__getitems__([1, 2, 3]))[0]
    assert not torch.equal(a, c)
    ds.set_epoch(0)
    assert torch.equal(collate(ds.__getitems__([1, 2, 3]))[0], a)
    other = FileListDataset(paths, transform=TRAIN, seed=124)
    assert not torch.equal(collate(other.__getitems__([1, 2, 3]))[0], a)


def test_unfused_dataset_keeps_per_sample_path(image_tree):
    _, paths = image_tree
    t = v2.Compose([v2.Resize(20)])  # variable size: not fused
    with pytest.warns(UserWarning, match=r"the transform is not fused: Resize\(size=\[20\]"):
        ds = FileListDataset(paths, transform=t)
    assert ds.plan is None
    items = ds.__getitems__([0, 1])
    assert torch.equal(items[0][0], t(decode_image(paths[0]))) and items[1][1] == 1


def test_bad_file_names_the_path(image_tree, tmp_path):
    _, paths = image_tree
    bad = tmp_path / "bad.jpg"
    bad.write_bytes(open(paths[0], "rb").read()[:200])
    ds = FileListDataset([paths[0], str(bad)], transform=EVAL)
    with pytest.raises(spdl_torch.DecodeError, match=r"bad\.jpg: JPEG: "):
        ds.__getitems__([0, 1])


@pytest.mark.parametrize("loader_cls", [torch.utils.data.DataLoader, spdl_torch.DataLoader])
def test_dataloaders_fetch_fused_batches(image_tree, loader_cls):
    root, _ = image_tree
    ds = ImageFolder(root, transform=EVAL, seed=0)
    loader = loader_cls(ds, batch_size=4, collate_fn=collate)
    batches = list(loader)
    assert [b[0].shape[0] for b in batches] == [4, 4, 2]
    assert all(b[0].shape[1:] == (3, 32, 32) and b[0].dtype == torch.float32 for b in batches)
    assert torch.cat([b[1] for b in batches]).tolist() == ds.targets
    default = list(loader_cls(ds, batch_size=4))  # the loader's default collate: same values
    assert all(torch.equal(x[0], y[0]) for x, y in zip(batches, default))

