"""The ops' registration contract: schemas, fake kernels and dispatch, checked by torch.library.opcheck."""

import pytest
import torch

import spdl_torch  # noqa: F401  (registers the ops)

from .. import images


def _encoded(fmt: str, mode: str = "RGB", size=(24, 16)) -> torch.Tensor:
    channels = {"RGB": (3,), "RGBA": (4,), "L": ()}[mode]
    return images.encode_tensor(images.noise((size[1], size[0], *channels)), fmt)


@pytest.mark.parametrize(
    "fmt,mode,kwargs",
    [
        ("JPEG", "RGB", {}),
        ("JPEG", "L", {"mode": "UNCHANGED"}),
        ("PNG", "RGBA", {"mode": "RGBA"}),
        ("PNG", "RGB", {"mode": "GRAY", "apply_exif_orientation": False}),
        ("WEBP", "RGB", {"max_pixels": 10_000}),
    ],
)
def test_opcheck_decode_image(fmt, mode, kwargs):
    torch.library.opcheck(torch.ops.spdl_torch.decode_image.default, (_encoded(fmt, mode),), kwargs)


def test_opcheck_read_file(tmp_path):
    path = tmp_path / "blob.bin"
    path.write_bytes(bytes(range(256)) * 3)
    torch.library.opcheck(torch.ops.spdl_torch.read_file.default, (str(path),))
    out = torch.ops.spdl_torch.read_file(str(path))
    assert out.dtype == torch.uint8 and out.tolist() == list(range(256)) * 3


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


def test_empty_file_reads_as_empty_tensor(tmp_path):
    path = tmp_path / "empty"
    path.write_bytes(b"")
    assert torch.ops.spdl_torch.read_file(str(path)).shape == (0,)


def test_read_file_max_bytes(tmp_path):
    import errno

    path = tmp_path / "blob.bin"
    path.write_bytes(bytes(1000))
    assert spdl_torch.io.read_file(path, max_bytes=1000).shape == (1000,)
    with pytest.raises(OSError, match="its 1000 bytes exceed the limit of 999 bytes") as info:
        spdl_torch.io.read_file(path, max_bytes=999)
    assert info.value.errno == errno.EFBIG
    with pytest.raises(OSError, match="exceed the limit of 10 bytes"):
        spdl_torch.io.decode_image(path, max_bytes=10)
    torch.library.opcheck(torch.ops.spdl_torch.read_file.default, (str(path),), {"max_bytes": 5000})
