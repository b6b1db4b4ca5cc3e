"""What this build of the native library holds: the CUDA or the CPU variant, nvJPEG, FFmpeg and the decoders."""

from __future__ import annotations

import functools

import torch

__all__ = ["build_info"]


@functools.cache
def build_info() -> dict[str, str]:
    """The build's features, from the op ``spdl_torch::build_info``, as a dict of strings:

    * ``"variant"``: ``"cuda"`` or ``"cpu"`` (see :mod:`spdl_torch.cuda`);
    * ``"nvjpeg"``: ``"1"`` when ``decode_images(device="cuda")`` decodes with nvJPEG, else ``"0"``;
    * ``"ffmpeg"``: ``"1"``, or ``"0"`` for a build without FFmpeg (``SPDL_TORCH_FFMPEG=0``), which decodes
      JPEG images only: video, audio and the other image formats raise an error naming the missing FFmpeg;
    * ``"decoders"``: what decodes, comma-separated: ``"jpeg,png,gif,webp,bmp,tiff,pnm,video,audio"`` or
      ``"jpeg"``.
    """
    from . import _library  # noqa: F401  (loads the ops)

    return dict(item.split("=", 1) for item in torch.ops.spdl_torch.build_info())
