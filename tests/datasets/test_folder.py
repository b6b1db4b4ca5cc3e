"""Tests of spdl_torch.datasets.ImageFolder against torchvision.datasets.ImageFolder."""

import inspect
import os

import numpy as np
import pytest
import torch
import torchvision
from PIL import Image

from spdl_torch.datasets import ImageFolder

from tests._utils import images


def _noise_image(size, mode, seed) -> Image.Image:
    w, h = size
    channels = {"RGB": (3,), "RGBA": (4,), "L": (), "P": (3,)}[mode]
    img = Image.fromarray(images.noise((h, w, *channels), seed))
    return img.quantize(16) if mode == "P" else img


@pytest.fixture
def tree(tmp_path, image_file):
    """root/{bird,cat,dog}/... PNGs (RGB, RGBA, L, P; nested dir; upper-case extension), plus a
    non-image file, a file directly under root, and an empty class directory ``empty``."""
    root = tmp_path / "root"
    files = [
        ("cat/c0.png", (8, 6), "RGB"),
        ("cat/c1.png", (5, 7), "RGBA"),
        ("cat/sub/c2.png", (4, 4), "L"),
        ("dog/d0.PNG", (9, 3), "P"),
        ("dog/d1.png", (6, 6), "RGB"),
        ("bird/b0.png", (3, 5), "RGB"),
    ]
    for i, (rel, size, mode) in enumerate(files):
        image_file(f"root/{rel}", _noise_image(size, mode, seed=i))
    (root / "dog" / "notes.txt").write_text("not an image")
    (root / "stray.png").write_bytes((root / "bird" / "b0.png").read_bytes())
    (root / "empty").mkdir()
    return root


def _assert_same_listing(ours, ref):
    assert ours.classes == ref.classes
    assert ours.class_to_idx == ref.class_to_idx
    assert ours.samples == ref.samples
    assert ours.targets == ref.targets
    assert len(ours) == len(ref)


def test_listing_matches_torchvision_allow_empty(tree):
    ours = ImageFolder(tree, allow_empty=True)
    ref = torchvision.datasets.ImageFolder(tree, allow_empty=True)
    _assert_same_listing(ours, ref)
    assert ours.classes == ["bird", "cat", "dog", "empty"]
    assert len(ours) == 6  # notes.txt and stray.png are not samples
    assert all(not p.endswith(".txt") for p, _ in ours.samples)


def test_empty_class_raises_like_torchvision(tree):
    with pytest.raises(FileNotFoundError, match="empty"):
        torchvision.datasets.ImageFolder(tree)
    with pytest.raises(FileNotFoundError, match="empty"):
        ImageFolder(tree)


def test_listing_matches_torchvision_str_root_and_is_valid_file(tree):
    os.rmdir(tree / "empty")
    _assert_same_listing(ImageFolder(str(tree)), torchvision.datasets.ImageFolder(str(tree)))

    def only_png_lowercase(path):
        return path.endswith(".png")

    ours = ImageFolder(tree, is_valid_file=only_png_lowercase)
    ref = torchvision.datasets.ImageFolder(tree, is_valid_file=only_png_lowercase)
    _assert_same_listing(ours, ref)
    assert not any(p.endswith(".PNG") for p, _ in ours.samples)


def test_no_class_dir_raises(tmp_path):
    with pytest.raises(FileNotFoundError):
        ImageFolder(tmp_path)


def test_custom_loader_and_transforms(tree):
    ds = ImageFolder(
        tree,
        loader=lambda path: os.path.basename(path),
        transform=str.upper,
        target_transform=lambda t: t * 10,
        allow_empty=True,
    )
    assert ds[0] == ("B0.PNG", 0)
    assert [ds[i] for i in range(len(ds))] == [
        (os.path.basename(p).upper(), t * 10) for p, t in ds.samples
    ]


def test_default_loader_pixels_match_pillow(tree):
    ds = ImageFolder(tree, allow_empty=True)
    for i, (path, target) in enumerate(ds.samples):
        image, label = ds[i]
        expected = np.asarray(Image.open(path).convert("RGB")).transpose(2, 0, 1)
        assert isinstance(image, torch.Tensor) and image.dtype == torch.uint8
        assert tuple(image.shape) == expected.shape
        assert label == target
        np.testing.assert_array_equal(image.numpy(), expected, err_msg=path)


def test_with_thread_dataloader(tree):
    from spdl_torch import DataLoader

    ds = ImageFolder(tree, allow_empty=True, transform=lambda img: img.float().mean((1, 2)), warn_unfused=False)
    batches = list(DataLoader(ds, batch_size=4, num_workers=2))
    means = torch.cat([b[0] for b in batches])
    targets = torch.cat([b[1] for b in batches])
    assert targets.tolist() == ds.targets
    for (path, _), m in zip(ds.samples, means):
        expected = np.asarray(Image.open(path).convert("RGB"), dtype=np.float32).mean((0, 1))
        np.testing.assert_allclose(m.numpy(), expected, rtol=1e-5)


@pytest.fixture
def root(mixed_folder):
    return mixed_folder


def test_signature_starts_with_torchvisions():
    ours = list(inspect.signature(ImageFolder).parameters.values())
    theirs = list(inspect.signature(torchvision.datasets.ImageFolder).parameters.values())
    assert [p.name for p in ours[: len(theirs)]] == [p.name for p in theirs]
    for a, b in zip(ours, theirs):
        if a.name != "loader":  # ours: None (the native decoder), theirs: their PIL loader
            assert a.default == b.default and a.kind == b.kind, a.name


def test_full_signature_matches_torchvision(root):
    kw = dict(target_transform=lambda t: 10 * t, is_valid_file=lambda p: not p.endswith(("2.png", ".txt")),
              allow_empty=True)
    ours, ref = ImageFolder(root, **kw), torchvision.datasets.ImageFolder(root, **kw)
    assert ours.classes == ref.classes and ours.class_to_idx == ref.class_to_idx
    assert ours.samples == ref.samples and ours.targets == ref.targets and len(ours) == 6
    assert [ours[i][1] for i in range(len(ours))] == [ref[i][1] for i in range(len(ref))]
    def loader(p):
        return os.path.basename(p)

    ours = ImageFolder(root, transform=str.upper, loader=loader, **kw)
    ref = torchvision.datasets.ImageFolder(root, transform=str.upper, loader=loader, **kw)
    assert [ours[i] for i in range(len(ours))] == [ref[i] for i in range(len(ref))]


def test_find_classes_is_overridable_as_in_torchvision(root):
    class Two:
        def find_classes(self, directory):
            return ["x", "z"], {"x": 0, "z": 1}

    ours = type("Ours", (Two, ImageFolder), {})(root)
    ref = type("Ref", (Two, torchvision.datasets.ImageFolder), {})(root)
    assert ours.classes == ref.classes == ["x", "z"] and ours.samples == ref.samples and len(ours) == 6
