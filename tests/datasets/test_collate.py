"""The zero-copy collate of fused batches (spdl_torch/datasets/_collate.py): ``__getitems__`` returns views of
one batch tensor that ``collate`` hands back without a copy; anything else is stacked, as torch's
``default_collate`` does."""

import torch
import torch.utils.data
from torchvision.transforms import v2

from spdl_torch.datasets import ImageFolder, collate

from tests._utils.images import IMAGENET_MEAN, IMAGENET_STD


MEAN, STD = list(IMAGENET_MEAN), list(IMAGENET_STD)


EVAL = v2.Compose([v2.Resize(40), v2.CenterCrop(32), v2.ToDtype(torch.float32, scale=True), v2.Normalize(MEAN, STD)])


def test_getitems_views_and_zero_copy_collate(image_tree):
    root, _ = image_tree
    ds = ImageFolder(root, transform=EVAL, seed=0)
    items = ds.__getitems__([0, 3, 7])
    assert [t for _, t in items] == [ds.targets[0], ds.targets[3], ds.targets[7]]
    images, labels = collate(items)
    assert images.shape == (3, 3, 32, 32)
    assert images.data_ptr() == items[0][0].data_ptr()  # no copy
    assert labels.tolist() == [ds.targets[0], ds.targets[3], ds.targets[7]]
    same, _ = torch.utils.data.default_collate(items)  # torch's tensor rule, extended with the first fused batch
    assert same is images
    assert torch.utils.data.default_collate(items[:2])[0].data_ptr() != images.data_ptr()  # not all rows: stacked
    assert torch.equal(torch.utils.data.default_collate(items[:2])[0], images[:2])
    assert torch.equal(ds[3][0], images[1])  # a single fetch gives the same image


def test_fused_batch_targets_collate_as_torchs(image_tree):
    """The targets of a fused batch collate as torch's ``default_collate`` collates them beside images it stacks:
    strings (a ``target_transform`` naming the class) a tuple of str, tuples transposed, dicts by key."""
    root, _ = image_tree
    for target_transform in (lambda t: f"class{t}", lambda t: (t, f"c{t}"), lambda t: {"y": t, "name": f"c{t}"}):
        ds = ImageFolder(root, transform=EVAL, seed=0, target_transform=target_transform)
        items = ds.__getitems__([0, 6, 2])
        images, targets = collate(items)
        assert images.data_ptr() == items[0][0].data_ptr()  # still the fused batch, no copy
        stacked = [(x.clone(), t) for x, t in items]  # torch's path: nothing fused
        _, expected = torch.utils.data.default_collate(stacked)
        assert type(targets) is type(expected), (targets, expected)
        assert repr(targets) == repr(expected)


def test_collate_falls_back_to_default():
    items = [(torch.zeros(2), 1), (torch.ones(2), 2)]
    images, labels = collate(items)
    assert torch.equal(images, torch.stack([torch.zeros(2), torch.ones(2)])) and labels.tolist() == [1, 2]
    batch = torch.zeros(3, 2)
    assert collate([(batch[0], 0), (batch[2], 1)])[0].shape == (2, 2)  # not the whole base: stacked
    whole = collate([(batch[0], 0), (batch[1], 1), (batch[2], 2)])[0]
    assert torch.equal(whole, batch) and whole.data_ptr() != batch.data_ptr()  # not ours: copied
