"""Image mode: ``(image, label)`` from ``.jpg``/``.png`` + ``.cls`` members, the same pixels and labels as
``ImageFolder`` over the same files (eval and random train transforms), one batch op per batch."""

import pytest
import torch
from torchvision.transforms import v2

import spdl_torch
from spdl_torch import DecodeError
from spdl_torch.datasets import ImageFolder, TarShardDataset, collate, write_shards
from spdl_torch.datasets._collate import _FUSED_BATCHES

from tests._utils import images

EVAL = v2.Compose([v2.Resize(20), v2.CenterCrop(16), v2.ToDtype(torch.float32, scale=True)])
TRAIN = v2.Compose([v2.RandomResizedCrop(16), v2.RandomHorizontalFlip()])


@pytest.fixture
def packed(image_folder, tmp_path):
    image_folder(["a", "b", "c"], 6, lambda rng, c, k: images.upsampled_noise(24 + 3 * k, 30, rng), root="tree")
    image_folder(["a"], 2, lambda rng, c, k: images.noise((17, 19, 3), rng), name="p{k}.png", root="tree")
    folder_root = tmp_path / "tree"
    write_shards(ImageFolder(folder_root), tmp_path / "shards", shard_size=16_384)
    return folder_root, str(tmp_path / "shards" / "index.json")


@pytest.mark.parametrize("transform", [EVAL, TRAIN])
def test_images_and_labels_equal_image_folder(packed, transform):
    root, index = packed
    folder = ImageFolder(root, transform=transform, seed=11)
    ds = TarShardDataset(index, transform=transform, seed=11, batch_size=4, shuffle=True, shuffle_buffer=5)
    ds.set_epoch(3)
    folder.set_epoch(3)
    got = list(ds)
    order = ds.global_order(3)
    assert len(got) == len(folder) == 20
    for (img, label), i in zip(got, order):  # the global index is the ImageFolder index (written in order)
        ref, ref_label = folder[i]
        assert label == ref_label
        torch.testing.assert_close(img, ref, rtol=0, atol=0)


def test_batches_are_one_fused_tensor_through_the_loader(packed):
    _, index = packed
    ds = TarShardDataset(index, transform=EVAL, batch_size=4, shuffle=False)
    loader = spdl_torch.DataLoader(ds, batch_size=4, num_workers=2, collate_fn=collate)
    batches = list(loader)
    assert sum(len(y) for _, y in batches) == 20
    for x, y in batches:
        assert x.shape[1:] == (3, 16, 16) and x.dtype == torch.float32
        assert _FUSED_BATCHES.get(id(x)) is x  # one decode_images call made this batch; collate did not copy


def test_resume_gives_the_same_augmentations(packed):
    _, index = packed

    def run(state=None, stop=None):
        ds = TarShardDataset(index, transform=TRAIN, batch_size=2, shuffle_buffer=4, seed=5, warn_unfused=False)
        loader = spdl_torch.DataLoader(ds, batch_size=2, num_workers=2, collate_fn=collate)
        if state is not None:
            loader.load_state_dict(state)
        out, it = [], iter(loader)
        for k, b in enumerate(it):
            out.append(b)
            if stop is not None and k + 1 == stop:
                return out, loader.state_dict()
        return out, None

    full, _ = run()
    head, state = run(stop=3)
    tail, _ = run(state=state)
    for (x, y), (rx, ry) in zip(head + tail, full):
        assert torch.equal(y, ry) and torch.equal(x, rx)
    assert len(head) + len(tail) == len(full)


def test_unfused_transform_runs_per_sample(packed):
    root, index = packed
    tf = v2.Compose([v2.Lambda(lambda t: t.flip(-1)), v2.Resize(12)])
    with pytest.warns(UserWarning, match="not fused"):
        ds = TarShardDataset(index, transform=tf, shuffle=False)
    folder = ImageFolder(root, transform=tf, warn_unfused=False)
    for (img, label), i in zip(ds, range(20)):
        ref, ref_label = folder[i]
        assert label == ref_label and torch.equal(img, ref)


def _shards(tmp_path, samples):
    write_shards(samples, tmp_path / "s", shard_size=1 << 20)
    return str(tmp_path / "s" / "index.json")


def test_corrupt_member_names_shard_key_and_member_and_skip_keeps_the_rest(tmp_path):
    good = images.encode(images.noise((16, 16, 3), 1), "JPEG")
    samples = [(f"k{i}", {"jpg": good if i != 2 else good[:200] + b"\0" * 10, "cls": b"1"}) for i in range(5)]
    index = _shards(tmp_path, samples)
    with pytest.raises(DecodeError, match=r"shard-000000.tar: sample 'k2', member 'k2.jpg'"):
        list(TarShardDataset(index, transform=EVAL, shuffle=False))
    ds = TarShardDataset(index, transform=EVAL, shuffle=False, on_error="skip")
    with pytest.warns(RuntimeWarning, match="k2"):
        out = list(ds)
    assert len(out) == 4 and len(ds.skipped) == 1


def test_missing_component_is_named(tmp_path):
    good = images.encode(images.noise((16, 16, 3), 1), "PNG")
    index = _shards(tmp_path, [("k0", {"png": good, "cls": b"0"}), ("k1", {"png": good}), ("k2", {"cls": b"3"})])
    with pytest.raises(DecodeError, match=r"sample 'k1': missing member .cls"):
        list(TarShardDataset(index, transform=EVAL, shuffle=False))
    ds = TarShardDataset(index, transform=EVAL, shuffle=False, on_error="skip")
    with pytest.warns(RuntimeWarning):
        out = list(ds)
    assert [y for _, y in out] == [0]
    assert any("k2': no image member" in s for s in ds.skipped)


def test_bad_label_and_bad_arguments(tmp_path):
    good = images.encode(images.noise((16, 16, 3), 1), "PNG")
    index = _shards(tmp_path, [("k0", {"png": good, "cls": b"cat"})])
    with pytest.raises(DecodeError, match="k0.cls': not an integer label"):
        list(TarShardDataset(index, transform=EVAL))
    with pytest.raises(ValueError, match="on_error"):
        TarShardDataset(index, on_error="ignore")
    with pytest.raises(ValueError, match="batch_size"):
        TarShardDataset(index, batch_size=0)
    with pytest.raises(ValueError, match="rank"):
        TarShardDataset(index, rank=2, world_size=2)
