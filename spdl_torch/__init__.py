"""spdl_torch: fast, thread-based data loading for PyTorch.

Native ops (``torch.ops.spdl_torch.*``) decode and transform media without the GIL; the Python package
provides datasets and a thread-based :class:`DataLoader` that mirrors ``torch.utils.data.DataLoader``.

Here: :class:`DataLoader`, :func:`get_worker_info`, :class:`DecodeError` (what a bad sample raises) and
:func:`build_info` (what this build holds). The namespaces: :mod:`spdl_torch.io` (decoding),
:mod:`spdl_torch.transforms` (torchvision pipelines fused into the decode), :mod:`spdl_torch.datasets`,
:mod:`spdl_torch.pipeline` (the threaded engine), :mod:`spdl_torch.dataloader` (the loader's protocols),
:mod:`spdl_torch.cuda` (the device copy), :mod:`spdl_torch.distributed`; :mod:`spdl_torch.deploy` (modules for
compiled and deployed models) is imported on its own.
"""

from . import _library  # noqa: F401  (registers torch.ops.spdl_torch.*)
from ._build_info import build_info
from ._errors import DecodeError
from . import cuda, dataloader, datasets, distributed, io, pipeline, transforms
from .dataloader._loader import DataLoader
from .dataloader._worker import get_worker_info

__all__ = ["DataLoader", "DecodeError", "build_info", "cuda", "dataloader", "datasets", "distributed",
           "get_worker_info", "io", "pipeline", "transforms"]
__version__ = "0.2.0"
