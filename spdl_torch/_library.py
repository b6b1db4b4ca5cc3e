"""Loads the native ops library (``spdl_torch/_C*.so``), which registers ``torch.ops.spdl_torch.*``."""

import glob
import os

import torch

__all__ = ["library_path"]


def _find_library() -> str:
    here = os.path.dirname(os.path.abspath(__file__))
    candidates = sorted(glob.glob(os.path.join(here, "_C*.so")))
    if not candidates:
        raise ImportError(
            f"spdl_torch: the native library _C*.so is missing from {here}; build it with "
            "`pip install --no-build-isolation -e .` (or `make build`)"
        )
    return candidates[0]


library_path = _find_library()
torch.ops.load_library(library_path)
