"""``decode_images(..., device="cuda")``: nvJPEG decodes the batch on the GPU (op ``decode_images_cuda``,
``csrc/cuda/decode_images_cuda_op.cpp``), and the crop, resize, flip and normalisation run there; its fake."""

from __future__ import annotations

import os
from collections.abc import Sequence

import torch

from .._errors import name_sample, translate
from .._limits import DEFAULTS

__all__ = ["decode_images_cuda"]

# Options of the CPU op that the GPU path does not have (they tune libjpeg-turbo's decoding).
_CPU_ONLY = ("pin_memory", "dct_min_ratio", "partial_decode")


@torch.library.register_fake("spdl_torch::decode_images_cuda")
def _decode_images_cuda_fake(data, *, device_index, seeds=None, apply_exif_orientation=True, max_pixels=DEFAULTS["image_pixels"],
                             height, width, geometry="eval", resize_shorter=0, scale=(0.08, 1.0),
                             ratio=(0.75, 4.0 / 3.0), interpolation="bilinear", hflip_prob=0.0, dtype=None, mean=None,
                             std=None, dimension_order="NCHW", strict=True):
    n = len(data)
    shape = (n, height, width, 3) if dimension_order == "NHWC" else (n, 3, height, width)
    batch = torch.empty(shape, dtype=torch.uint8 if dtype is None else dtype, device=torch.device("cuda", device_index))
    return batch, torch.empty((n,), dtype=torch.bool)


def decode_images_cuda(data: Sequence[torch.Tensor], srcs: Sequence, device: torch.device, kwargs: dict) -> tuple:
    """The device path of :func:`spdl_torch.io.decode_images` (arguments already checked there): ``(batch,
    ok)`` with ``batch`` a Tensor[N, 3, H, W] (``dimension_order="NHWC"``: [N, H, W, 3]) on ``device``, ``ok`` a
    bool CPU Tensor[N].

    Raises:
        RuntimeError: no CUDA, the CPU variant of spdl_torch, or a build without nvJPEG (the message says
            which); a CUDA-only call with ``pin_memory=True`` (the batch is on the device).
        spdl_torch.DecodeError: ``strict`` and a sample is not a JPEG nvJPEG decodes (other formats, CMYK), is
            corrupt, or is over ``max_pixels``.
    """
    from .._build_info import check_cuda

    check_cuda("decode_images(device='cuda')", device, needs_build=True, needs_nvjpeg=True)
    if kwargs.pop("pin_memory", False):
        raise ValueError("decode_images: pin_memory=True with device='cuda': the batch is allocated on the device")
    for name in _CPU_ONLY:
        kwargs.pop(name, None)
    index = device.index if device.index is not None else torch.cuda.current_device()
    try:
        return torch.ops.spdl_torch.decode_images_cuda(data, device_index=index, **kwargs)
    except RuntimeError as e:
        paths = [os.fspath(s) if isinstance(s, (str, os.PathLike)) else None for s in srcs]
        raise name_sample(translate(e, None), paths) from None
