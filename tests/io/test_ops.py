"""The ops' registration contract: schemas, fake kernels and dispatch, checked by torch.library.opcheck."""

import io

import numpy as np
import pytest
import torch
from PIL import Image

import spdl_torch  # noqa: F401  (registers the ops)


def _encoded(fmt: str, mode: str = "RGB", size=(24, 16)) -> torch.Tensor:
    rng = np.random.default_rng(0)
    channels = {"RGB": 3, "RGBA": 4, "L": 1}[mode]
    pixels = rng.integers(0, 256, (size[1], size[0], channels), dtype=np.uint8).squeeze(-1 if channels == 1 else ())
    buf = io.BytesIO()
    Image.fromarray(pixels, mode).save(buf, fmt)
    return torch.frombuffer(bytearray(buf.getvalue()), dtype=torch.uint8)


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
