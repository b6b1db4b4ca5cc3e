"""What this build of spdl_torch holds (the CUDA or the CPU variant, nvJPEG or not) and the clear errors for a
CUDA feature that the build, torch or the machine lacks."""

from __future__ import annotations

import torch

from .._build_info import build_info

__all__ = ["build_info", "check_cuda", "cuda_build", "nvjpeg_build"]


def cuda_build() -> bool:
    """Whether spdl_torch was built as the CUDA variant (its CUDA kernels: ``normalize_batch``)."""
    return build_info().get("variant") == "cuda"


def nvjpeg_build() -> bool:
    """Whether the CUDA variant was built with nvJPEG (``decode_images(device="cuda")``)."""
    return cuda_build() and build_info().get("nvjpeg") == "1"


def check_cuda(feature: str, device: torch.device | None = None, *, needs_build: bool = False,
               needs_nvjpeg: bool = False) -> None:
    """Raises ``RuntimeError`` naming ``feature`` and the first missing piece: torch without CUDA, no CUDA
    device visible, a device index out of range, spdl_torch's CPU variant (``needs_build``), or a build without
    nvJPEG (``needs_nvjpeg``)."""
    if torch.version.cuda is None:
        raise RuntimeError(f"{feature}: this torch ({torch.__version__}) was built without CUDA")
    if needs_build and not cuda_build():
        raise RuntimeError(f"{feature}: spdl_torch was built without CUDA (the CPU variant: no CUDA toolkit matching "
                           f"torch's CUDA {torch.version.cuda} at build time); rebuild with nvcc present")
    if needs_nvjpeg and not nvjpeg_build():
        raise RuntimeError(f"{feature}: spdl_torch was built without nvJPEG; pip install nvidia-nvjpeg "
                           f"(CUDA {torch.version.cuda.split('.')[0]}.x) and rebuild")
    if not torch.cuda.is_available():
        raise RuntimeError(f"{feature}: no CUDA device is available (torch.cuda.is_available() is False: no GPU "
                           "or no driver on this machine)")
    if device is not None and device.index is not None and device.index >= torch.cuda.device_count():
        raise RuntimeError(f"{feature}: {device} does not exist ({torch.cuda.device_count()} CUDA devices visible)")
