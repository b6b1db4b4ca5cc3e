"""What this build of the native library holds (the CUDA or the CPU variant, nvJPEG, FFmpeg and the decoders), and
the clear errors for a CUDA feature that the build, torch or the machine lacks (:func:`check_cuda`)."""

from __future__ import annotations

import functools

import torch

__all__ = ["build_info", "check_cuda", "cuda_build", "nvjpeg_build"]


@functools.cache
def build_info() -> dict[str, str]:
    """The build's features, from the op ``spdl_torch::build_info``, as a dict of strings:

    * ``"variant"``: ``"cuda"`` (the CUDA kernels: ``normalize(impl="kernel")``) or ``"cpu"`` (see
      :mod:`spdl_torch.cuda`);
    * ``"nvjpeg"``: ``"1"`` when ``decode_images(device="cuda")`` decodes with nvJPEG, else ``"0"``;
    * ``"ffmpeg"``: ``"1"``, or ``"0"`` for a build without FFmpeg (``SPDL_TORCH_FFMPEG=0``), which decodes
      JPEG images only: video, audio and the other image formats raise an error naming the missing FFmpeg;
    * ``"decoders"``: what decodes, comma-separated: ``"jpeg,png,gif,webp,bmp,tiff,pnm,video,audio"`` or
      ``"jpeg"``.
    """
    from . import _library  # noqa: F401  (loads the ops)

    return dict(item.split("=", 1) for item in torch.ops.spdl_torch.build_info())


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
