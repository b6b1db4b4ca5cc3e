"""``read_file``: a file's bytes as a uint8 tensor (op ``read_file``), and its fake kernel."""

import os

import torch

from .._errors import translate

__all__ = ["read_file"]


@torch.library.register_fake("spdl_torch::read_file")
def _read_file_fake(path: str, *, max_bytes: int = 0) -> torch.Tensor:
    size = torch.library.get_ctx().new_dynamic_size()
    return torch.empty((size,), dtype=torch.uint8)


def read_file(path: str | os.PathLike, *, max_bytes: int = 0) -> torch.Tensor:
    """Reads a whole file without holding the GIL.

    Args:
        path: the file to read.
        max_bytes: refuse files larger than this many bytes (checked before anything is read or
            allocated); 0 or less: no limit.

    Returns:
        Tensor[N] of dtype uint8 holding the file's N bytes.

    Raises:
        FileNotFoundError, PermissionError, IsADirectoryError, OSError: the file cannot be opened or read,
            or is not a regular file (FIFOs and devices are refused without blocking); the message names the
            path and the system's reason. A file over ``max_bytes`` raises ``OSError`` with errno ``EFBIG``.
        ValueError: the path contains a NUL byte.
    """
    path = os.fspath(path)
    if "\0" in path:
        raise ValueError(f"read_file: embedded null byte in path {path!r}")
    try:
        return torch.ops.spdl_torch.read_file(path, max_bytes=int(max_bytes))
    except RuntimeError as e:
        raise translate(e, None) from None
