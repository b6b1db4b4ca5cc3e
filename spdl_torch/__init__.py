"""spdl_torch: fast, thread-based data loading for PyTorch.

Native ops (``torch.ops.spdl_torch.*``) decode and transform media without the GIL; the Python package
provides datasets and a thread-based :class:`DataLoader` that mirrors ``torch.utils.data.DataLoader``.
"""

from . import _library  # noqa: F401  (registers torch.ops.spdl_torch.*)
from ._build_info import build_info
from . import cuda, datasets, distributed, io, pipeline, transforms
from .dataloader import DataLoader, get_worker_info
from .errors import DecodeError

__all__ = ["DataLoader", "DecodeError", "build_info", "cuda", "datasets", "distributed", "get_worker_info", "io", "pipeline", "transforms"]
__version__ = "0.2.0"
