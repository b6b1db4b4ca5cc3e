"""decode_images: strict=False covers unreadable paths as it covers undecodable data; mean/std values that
cannot normalize (NaN, infinite, a zero std) are refused with a ValueError, in the op and the fused
transform."""

import math

import pytest
import torch

from spdl_torch.io import decode_image, decode_images

from tests._utils import images


def _files(tmp_path, n=3):
    paths = []
    for i in range(n):
        paths.append(images.write(tmp_path / f"{i}.png", images.upsampled_noise(20, 24, seed=i)))
    return paths


def test_unreadable_paths_are_bad_samples_with_strict_false(tmp_path):
    paths = _files(tmp_path)
    good = decode_images(paths, height=16, width=16, resize_shorter=16).data
    srcs = [paths[0], tmp_path / "missing.png", paths[1], tmp_path, paths[2]]  # a missing file, a directory
    result = decode_images(srcs, height=16, width=16, resize_shorter=16, strict=False)
    batch, ok = result.data, result.ok
    assert ok.tolist() == [True, False, True, False, True]
    assert batch[1].eq(0).all() and batch[3].eq(0).all()
    assert torch.equal(batch[ok], good)
    # each good slot equals the sample decoded on its own
    for i, p in zip((0, 2, 4), paths):
        assert torch.equal(batch[i], decode_images([p], height=16, width=16, resize_shorter=16).data[0])


def test_unreadable_paths_still_raise_with_strict_true(tmp_path):
    paths = _files(tmp_path, 1)
    with pytest.raises(FileNotFoundError, match="missing.png"):
        decode_images([paths[0], tmp_path / "missing.png"], height=8, width=8)
    with pytest.raises(IsADirectoryError):
        decode_images([tmp_path], height=8, width=8)


def test_strict_false_does_not_hide_programming_errors(tmp_path):
    with pytest.raises(TypeError, match="expected paths, bytes or 1-D uint8 tensors, got int"):
        decode_images([_files(tmp_path, 1)[0], 3], height=8, width=8, strict=False)


@pytest.mark.parametrize("std", [[0.0], [0.5, 0.0, 0.5], [math.nan], [0.5, 0.5, math.nan], [math.inf]])
def test_std_that_cannot_normalize_is_refused(std):
    data = [images.encode(images.noise((8, 8, 3)), "PNG")]
    with pytest.raises(ValueError, match=r"expected finite std values != 0, got std\[\d\]="):
        decode_images(data, height=8, width=8, dtype=torch.float32, mean=[0.5], std=std)


@pytest.mark.parametrize("mean", [[math.nan], [0.5, math.inf, 0.5]])
def test_mean_that_is_not_finite_is_refused(mean):
    data = [images.encode(images.noise((8, 8, 3)), "PNG")]
    with pytest.raises(ValueError, match=r"expected finite mean values, got mean\[\d\]="):
        decode_images(data, height=8, width=8, dtype=torch.float32, mean=mean, std=[0.5])


@pytest.mark.parametrize("std", [[0.0, 0.2, 0.2], [math.nan, 0.2, 0.2]])
def test_fused_normalize_with_bad_std_is_refused(std):
    from torchvision.transforms import v2

    from spdl_torch.transforms import fuse

    plan = fuse(v2.Compose([v2.ToImage(), v2.Resize(8), v2.CenterCrop(8), v2.ToDtype(torch.float32, scale=True),
                            v2.Normalize(mean=[0.5, 0.5, 0.5], std=std)]))
    assert plan is not None and plan.op_kwargs.get("std") is not None  # Normalize was fused
    data = [images.encode(images.noise((8, 8, 3)), "PNG")]
    with pytest.raises(ValueError, match="expected finite std values != 0"):
        plan(data)
    # the good std still works and matches the unfused reference
    good = fuse(v2.Compose([v2.ToImage(), v2.Resize(8), v2.CenterCrop(8), v2.ToDtype(torch.float32, scale=True),
                            v2.Normalize(mean=[0.5, 0.5, 0.5], std=[0.2, 0.2, 0.2])]))
    expected = (decode_image(data[0]).float() / 255 - 0.5) / 0.2
    torch.testing.assert_close(good(data)[0], expected, atol=1e-5, rtol=0)
