"""The lenient error policy: on_error="skip" drops failing samples, counted and warned, and keeps every
good sample exactly once."""

import io
import warnings

import numpy as np
import pytest
import torch
from PIL import Image
from torchvision.transforms import v2

import spdl_torch
from spdl_torch import DataLoader

BAD = {3, 4, 5, 13}  # 3, 4, 5 fill a whole batch of 3


class Flaky(torch.utils.data.Dataset):
    def __len__(self):
        return 20

    def __getitem__(self, i):
        if i in BAD:
            raise ValueError(f"sample {i} is broken")
        return i


@pytest.mark.parametrize("num_workers", [0, 2])
@pytest.mark.parametrize("in_order", [True, False])
def test_skip_keeps_every_good_sample_once(num_workers, in_order):
    if not in_order and num_workers == 0:
        pytest.skip("in_order applies to workers")
    loader = DataLoader(Flaky(), batch_size=3, num_workers=num_workers, on_error="skip", in_order=in_order)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        batches = [b.tolist() for b in loader]
    got = sorted(x for b in batches for x in b)
    assert got == [i for i in range(20) if i not in BAD]
    assert all(batches)  # the all-bad batch [3, 4, 5] is skipped, never yielded empty
    assert sorted(i for i, _ in loader.skipped_samples) == sorted(BAD)
    assert all(reason == f"ValueError: sample {i} is broken" for i, reason in loader.skipped_samples)
    messages = [str(w.message) for w in caught if "skipped sample" in str(w.message)]
    assert sorted(messages) == sorted(f"DataLoader skipped sample index {i}: ValueError: sample {i} is broken"
                                      for i in BAD)
    if in_order:
        assert batches == [[0, 1, 2], [6, 7, 8], [9, 10, 11], [12, 14], [15, 16, 17], [18, 19]]


# With workers, torch's own iterator takes 5 s per worker process to shut down after a worker's error.
@pytest.mark.parametrize("num_workers", [0, pytest.param(2, marks=pytest.mark.slow)])
def test_raise_is_the_default_and_names_the_sample(num_workers):
    with pytest.raises(ValueError, match="sample 3 is broken"):
        list(DataLoader(Flaky(), batch_size=3, num_workers=num_workers))
    with pytest.raises(ValueError, match="on_error should be 'raise' or 'skip'"):
        DataLoader(Flaky(), on_error="ignore")


@pytest.mark.slow
def test_skip_with_the_fused_image_folder_and_a_truncated_file(tmp_path):
    rng = np.random.default_rng(0)
    for c in ("a", "b"):
        (tmp_path / c).mkdir()
        for k in range(5):
            buf = io.BytesIO()
            Image.fromarray(rng.integers(0, 256, (40, 50, 3), dtype=np.uint8)).save(buf, "JPEG")
            data = buf.getvalue()
            (tmp_path / c / f"{k}.jpg").write_bytes(data[: len(data) // 2] if (c, k) == ("b", 2) else data)
    transform = v2.Compose([v2.Resize(32, antialias=True), v2.CenterCrop(24)])
    dataset = spdl_torch.datasets.ImageFolder(str(tmp_path), transform=transform)
    loader = DataLoader(dataset, batch_size=4, num_workers=2, on_error="skip")
    with pytest.warns(UserWarning, match=r"skipped sample index 7: DecodeError: .*b/2\.jpg: .*JPEG"):
        batches = list(loader)
    labels = torch.cat([labels for _, labels in batches]).tolist()
    assert labels == [0] * 5 + [1] * 4
    assert sum(images.shape[0] for images, _ in batches) == 9
    assert [i for i, _ in loader.skipped_samples] == [7]
