"""The geometry of ``decode_images``: its options (random crop padding, ``max_size``, flips, grey output,
nearest filters) through opcheck, their defaults changing nothing, their ``ValueError`` messages, and the op
``sample_geometry`` (spdl_torch/transforms/_sample_geometry.py): its errors."""

import pytest
import torch

import spdl_torch  # noqa: F401  (registers the ops)

from tests._utils import images


def _encoded(fmt: str, mode: str = "RGB", size=(24, 16)) -> torch.Tensor:
    channels = {"RGB": (3,), "RGBA": (4,), "L": ()}[mode]
    return images.encode_tensor(images.noise((size[1], size[0], *channels)), fmt)


_GEOMETRY_CASES = [
    dict(height=20, width=18, geometry="random_crop", resize_shorter=24, padding=[1, 2, 3, 4], pad_if_needed=True,
         vflip_prob=0.5, hflip_prob=0.5),
    dict(height=16, width=16, geometry="eval", resize_shorter=20, max_size=24, color="gray", num_output_channels=1,
         dtype=torch.float32, mean=[0.5], std=[0.25]),
    dict(height=12, width=30, geometry="resize", interpolation="nearest", color="gray_pil", dimension_order="NHWC"),
    dict(height=14, width=14, geometry="train", interpolation="nearest_exact", vflip_prob=1.0, strict=False),
]


@pytest.mark.parametrize("kwargs", _GEOMETRY_CASES, ids=["random_crop", "gray1_max_size", "nearest_gray3", "train_vflip"])
def test_opcheck_decode_images_geometry(kwargs):
    data = [_encoded("JPEG", size=(24, 16)), _encoded("PNG", size=(17, 29))]
    kwargs = dict(kwargs)
    if kwargs["geometry"] in ("random_crop", "train") or kwargs.get("vflip_prob") or kwargs.get("hflip_prob"):
        kwargs["seeds"] = torch.tensor([3, 4], dtype=torch.int64)
    torch.library.opcheck(torch.ops.spdl_torch.decode_images.default, (data,), kwargs)
    batch, _ = torch.ops.spdl_torch.decode_images(data, **kwargs)
    c, h, w = kwargs.get("num_output_channels", 3), kwargs["height"], kwargs["width"]
    assert batch.shape == ((2, h, w, c) if kwargs.get("dimension_order") == "NHWC" else (2, c, h, w))
    assert batch.is_contiguous()


def test_default_geometry_options_change_nothing():
    # The new keyword arguments at their defaults give the bytes the op gave without them.
    data = [_encoded("JPEG", size=(40, 30)), _encoded("PNG", size=(33, 21))]
    seeds = torch.tensor([5, 6], dtype=torch.int64)
    base = dict(height=16, width=20, geometry="train", seeds=seeds, hflip_prob=0.5)
    new = dict(vflip_prob=0.0, max_size=0, padding=[], pad_if_needed=False, color="rgb", num_output_channels=3)
    a, _ = torch.ops.spdl_torch.decode_images(data, **base)
    b, _ = torch.ops.spdl_torch.decode_images(data, **base, **new)
    assert torch.equal(a, b)


@pytest.mark.parametrize("kwargs,match", [
    (dict(vflip_prob=1.5), "expected 0 <= vflip_prob <= 1, got 1.5"),
    (dict(max_size=10, resize_shorter=10), "expected max_size > resize_shorter"),
    (dict(geometry="random_crop", padding=[1, 2]), "expected padding with 4 values"),
    (dict(padding=[1, 1, 1, 1]), "padding and pad_if_needed need geometry random_crop"),
    (dict(num_output_channels=2, color="gray"), "expected num_output_channels 1 or 3, got 2"),
    (dict(num_output_channels=1), "num_output_channels=1 needs a grey color"),
    (dict(color="gray", num_output_channels=1, dtype=torch.float32, mean=[0.1, 0.2, 0.3]),
     "expected 1 mean and std value for 1 output channel"),
    (dict(color="cmyk"), 'expected color "rgb", "gray" or "gray_pil", got "cmyk"'),
    (dict(interpolation="lanczos"), 'expected interpolation "bilinear", "bicubic", "nearest" or "nearest_exact"'),
])
def test_geometry_option_errors(kwargs, match):
    data = [_encoded("JPEG")]
    with pytest.raises(ValueError, match=match):
        spdl_torch.io.decode_images(data, height=8, width=8, seeds=[1], **kwargs)


def test_sample_geometry_errors():
    with pytest.raises(ValueError, match="RandomCrop: the crop 50x50 is larger than the image"):
        spdl_torch.transforms._sample_geometry.sample_geometry(1, 40, 60, out_size=(50, 50), geometry="random_crop")
