"""Loads the native ops library (``spdl_torch/_C*.so``), which registers ``torch.ops.spdl_torch.*``.

``SPDL_TORCH_LIBRARY=/path/to/_C*.so`` loads that build instead (a variant built out of the tree, e.g. the
build without FFmpeg of ``make test-no-ffmpeg``); it must come from the same sources as the package."""

import glob
import os

import torch

__all__ = ["library_path"]


def _find_library() -> str:
    chosen = os.environ.get("SPDL_TORCH_LIBRARY")
    if chosen:
        if not os.path.isfile(chosen):
            raise ImportError(f"spdl_torch: SPDL_TORCH_LIBRARY={chosen!r} is not a file")
        return os.path.abspath(chosen)
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
