"""The fused datasets' batches (spdl_torch/datasets/_fused.py: ``FusedBatchMixin``, ``FileListDataset``):
loud partial fusion (warning, repr, require_fused), size limits (max_pixels, max_bytes and their module-level
defaults), random transforms repeatable per (seed, epoch, index), the unfused per-sample path, a bad file
named in the error, and fused batches through both DataLoaders."""

import errno
import os
import warnings

import pytest
import torch
import torch.utils.data
from torchvision.transforms import v2

import spdl_torch
import spdl_torch.datasets
import spdl_torch.io
from spdl_torch import DecodeError
from spdl_torch.datasets import FileListDataset, ImageFolder, collate
from spdl_torch.io import decode_image

from tests._utils.images import IMAGENET_MEAN, IMAGENET_STD

MEAN, STD = list(IMAGENET_MEAN), list(IMAGENET_STD)
EVAL = v2.Compose([v2.Resize(40), v2.CenterCrop(32), v2.ToDtype(torch.float32, scale=True), v2.Normalize(MEAN, STD)])
PARTLY_FUSED = v2.Compose([v2.RandomResizedCrop(24), v2.RandomPerspective(p=1.0), v2.ToDtype(torch.float32, scale=True)])


@pytest.fixture
def root(mixed_folder):
    return mixed_folder


def _paths(root):
    return sorted(str(p) for p in root.glob("*/*.*") if p.suffix != ".txt")


# --- loud partial fusion ---------------------------------------------------------------------------


@pytest.mark.parametrize("cls", ["ImageFolder", "FileListDataset"])
def test_partial_fusion_warns_once_naming_the_first_unfused(root, cls):
    make = (lambda **kw: ImageFolder(root, **kw)) if cls == "ImageFolder" else (lambda **kw: FileListDataset(_paths(root), **kw))
    with pytest.warns(UserWarning, match=rf"{cls}: the transform is only partly fused: RandomPerspective\(.*\) and the 1 "
                                         r"transform after it run per sample in Python") as record:
        ds = make(transform=PARTLY_FUSED)
    assert len([w for w in record if issubclass(w.category, UserWarning)]) == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ds.__getitems__([0, 1])  # no warning per fetch
        make(transform=PARTLY_FUSED, warn_unfused=False)  # silenced
        make(transform=EVAL)  # fully fused: nothing to say
        make(transform=None)
    with pytest.raises(ValueError, match=rf"{cls}: require_fused=True, but RandomPerspective\(.*\) is not fused"):
        make(transform=PARTLY_FUSED, require_fused=True)
    make(transform=EVAL, require_fused=True)
    with pytest.warns(UserWarning, match=r"the transform is not fused: Resize\(size=\[20\].*no fixed output size"):
        make(transform=v2.Resize(20))
    with pytest.raises(ValueError, match=r"require_fused=True, but Resize\(size=\[20\]"):
        make(transform=v2.Resize(20), require_fused=True)


def test_batched_remainder_warning_says_once_per_batch(root):
    t = v2.Compose([v2.CenterCrop(24), v2.ToDtype(torch.float32), v2.Normalize([120.0] * 3, [60.0] * 3)])
    with pytest.warns(UserWarning, match=r"ToDtype\(.*\) and the 1 transform after it run once per batch in Python"):
        ImageFolder(root, transform=t)


def test_custom_loader_and_require_fused(root):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ds = ImageFolder(root, transform=EVAL, loader=lambda p: spdl_torch.io.decode_image(p))
    assert ds.plan is None and "custom loader" in repr(ds)
    with pytest.raises(ValueError, match="a custom loader rules out fusion"):
        ImageFolder(root, transform=EVAL, loader=lambda p: p, require_fused=True)


def test_repr_shows_the_plan_and_the_remainder(root):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        text = repr(ImageFolder(root, transform=PARTLY_FUSED, seed=0))
    assert text.startswith(f"ImageFolder(root={str(root)!r}, num_classes=3, num_samples=9,")
    assert "fused into decode_images(geometry='train', height=24, width=24" in text and "RandomResizedCrop(size=(24, 24)" in text
    assert "then per sample in Python (on tensors): [RandomPerspective(p=1.0, distortion_scale=0.5, interpolation=bilinear, fill=0), ToDtype(scale=True)]" in text
    text = repr(FileListDataset(_paths(root), transform=EVAL))
    assert "fused=True" in text and "Normalize(mean=" in text and "per sample" not in text
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        text = repr(FileListDataset(_paths(root), transform=v2.Resize(20)))
    assert "fused=False" in text and "not fused (Resize(size=[20]" in text


# --- size limits -------------------------------------------------------------------------------------


@pytest.mark.parametrize("transform", [EVAL, None], ids=["fused", "unfused"])
def test_max_pixels(root, transform, monkeypatch):
    ds = ImageFolder(root, transform=transform, max_pixels=40 * 50 - 1)
    with pytest.raises(DecodeError):
        ds[0]
    assert ImageFolder(root, transform=transform, max_pixels=0)[0][0].shape[-1] in (32, 50)
    ds = FileListDataset(_paths(root), transform=transform)
    ds[0]
    monkeypatch.setattr(spdl_torch.io.limits, "image_pixels", 100)  # the global default, read at each fetch
    with pytest.raises(DecodeError):
        ds[0]
    FileListDataset(_paths(root), transform=transform, max_pixels=10**6)[0]  # the argument wins


@pytest.mark.parametrize("transform", [EVAL, None], ids=["fused", "unfused"])
def test_max_bytes(root, transform, monkeypatch):
    path = _paths(root)[0]
    size = os.path.getsize(path)
    ds = FileListDataset([path], transform=transform, max_bytes=size - 1)
    with pytest.raises(OSError) as info:
        ds[0]
    assert info.value.errno == errno.EFBIG
    FileListDataset([path], transform=transform, max_bytes=size)[0]
    assert spdl_torch.io.limits.image_bytes == 0
    monkeypatch.setattr(spdl_torch.io.limits, "image_bytes", size - 1)
    with pytest.raises(OSError, match=os.path.basename(path)):
        ImageFolder(root, transform=transform)[0]
    with pytest.raises(OSError) as info:  # the one default limit: decode_image of a path reads it too
        spdl_torch.io.decode_image(path)
    assert info.value.errno == errno.EFBIG
    assert spdl_torch.io.decode_image(path, max_bytes=0).shape[0] == 3  # 0: no limit, whatever the default


def test_bad_limits_raise(root):
    with pytest.raises(TypeError, match="expected an int or None max_pixels"):
        ImageFolder(root, max_pixels=1.5)
    with pytest.raises(TypeError, match="expected an int or None max_bytes"):
        FileListDataset([], max_bytes="1")


# --- torchvision's signature --------------------------------------------------------------------------


@pytest.mark.parametrize("loader_cls", [torch.utils.data.DataLoader, spdl_torch.DataLoader])
def test_v1_train_recipe_through_the_loaders(root, loader_cls):
    import torchvision.transforms as T

    t = T.Compose([T.RandomResizedCrop(24), T.RandomHorizontalFlip(), T.ToTensor(), T.Normalize(MEAN, STD)])
    ds = ImageFolder(root, transform=t, seed=1, require_fused=True)
    batches = list(loader_cls(ds, batch_size=4, collate_fn=spdl_torch.datasets.collate))
    assert [b[0].shape for b in batches] == [(4, 3, 24, 24), (4, 3, 24, 24), (1, 3, 24, 24)]
    assert torch.cat([b[1] for b in batches]).tolist() == ds.targets
    again = list(loader_cls(ds, batch_size=4, collate_fn=spdl_torch.datasets.collate))
    assert all(torch.equal(a[0], b[0]) for a, b in zip(batches, again))  # per-sample seeds: repeatable


TRAIN = v2.Compose([v2.RandomResizedCrop(24), v2.RandomHorizontalFlip(), v2.ToDtype(torch.float32, scale=True)])


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
