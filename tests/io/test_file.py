"""``read_file`` (spdl_torch/io/_file.py): the op's registration (opcheck), an empty file, and ``max_bytes``
(an ``OSError`` with ``errno.EFBIG``, also through ``decode_image``)."""

import pytest
import torch

import spdl_torch  # noqa: F401  (registers the ops)


def test_opcheck_read_file(tmp_path):
    path = tmp_path / "blob.bin"
    path.write_bytes(bytes(range(256)) * 3)
    torch.library.opcheck(torch.ops.spdl_torch.read_file.default, (str(path),))
    out = torch.ops.spdl_torch.read_file(str(path))
    assert out.dtype == torch.uint8 and out.tolist() == list(range(256)) * 3


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
