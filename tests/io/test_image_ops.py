"""``decode_image``'s registration contract: schemas, fake kernels and dispatch, checked by
torch.library.opcheck, and the layout of its output against the fake's."""

import pytest
import torch

import spdl_torch  # noqa: F401  (registers the ops)

from tests._utils import images


def _encoded(fmt: str, mode: str = "RGB", size=(24, 16)) -> torch.Tensor:
    channels = {"RGB": (3,), "RGBA": (4,), "L": ()}[mode]
    return images.encode_tensor(images.noise((size[1], size[0], *channels)), fmt)


@pytest.mark.parametrize(
    "fmt,mode,kwargs",
    [
        ("JPEG", "RGB", {}),
        ("JPEG", "L", {"mode": "UNCHANGED", "dtype": torch.uint8}),  # dtype=None: the file's depth, no fake
        ("PNG", "RGBA", {"mode": "RGBA"}),
        ("PNG", "RGB", {"mode": "GRAY", "apply_exif_orientation": False}),
        ("WEBP", "RGB", {"max_pixels": 10_000}),
    ],
)
def test_opcheck_decode_image(fmt, mode, kwargs):
    torch.library.opcheck(torch.ops.spdl_torch.decode_image.default, (_encoded(fmt, mode),), kwargs)


def test_decode_image_output_layout_matches_fake():
    data = _encoded("PNG", "RGB", size=(5, 3))
    real = torch.ops.spdl_torch.decode_image(data)
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.symbolic_shapes import ShapeEnv

    with FakeTensorMode(shape_env=ShapeEnv()) as mode:
        fake = torch.ops.spdl_torch.decode_image(mode.from_tensor(data))
    assert real.shape == (3, 3, 5) and real.dtype == fake.dtype == torch.uint8
    assert fake.shape[0] == 3 and fake.dim() == 3
    assert real.stride() == (1, 15, 3)  # channels-last view of an [H, W, C] buffer
