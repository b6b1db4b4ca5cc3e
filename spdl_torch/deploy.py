"""Preprocessing modules for compiled and deployed models: encoded bytes in, a normalized batch out.

The modules call ``torch.ops.spdl_torch.*`` directly (never the Python wrappers), so one definition works
eagerly, under ``torch.compile``, with ``torch.export`` / AOTInductor, and with ``torch.jit.script``; a saved
program then runs wherever the ops library ``spdl_torch/_C*.so`` is loaded -- in C++ too
(``examples/cpp_inference``).

Two shapes of op:

* :class:`BatchDecode` calls ``decode_images``, whose output shape ``[N, 3, height, width]`` follows from its
  arguments: ``torch.compile(fullgraph=True)`` and ``torch.export`` need no configuration.
* :class:`DecodeResize` calls ``decode_image``, whose height and width depend on the data (unbacked
  symbols in the fake kernel). ``torch.export`` and ``torch.compile(fullgraph=True)`` keep it in the graph
  as is (torch >= 2.6; older versions raise ``torch._dynamo.exc.Unsupported`` under ``fullgraph=True``);
  plain ``torch.compile`` graph-breaks at the op (it runs eagerly between two graphs) unless
  ``torch._dynamo.config.capture_dynamic_output_shape_ops = True``. The resize after it sees symbolic H, W,
  so new image sizes do not recompile.

Errors: the modules raise what the ops raise, a ``RuntimeError`` whose message starts with a tag,
``[<Kind>( <key>=<value>)*] <reason>`` (``[DecodeError sample=2] JPEG: ...``, ``[DecodeError] PNG: ...``);
:func:`from_op_error` converts one into the :class:`~spdl_torch.DecodeError` (with ``sample_index``), ``OSError``
or ``RuntimeError`` (spdl_torch's ``InternalError``: a bug) that ``spdl_torch.io`` raises.
Invalid arguments raise ``ValueError``.
"""

from __future__ import annotations

from typing import List, Sequence

import torch
import torch.nn.functional as F
from torch import nn

from . import _library  # noqa: F401  (registers torch.ops.spdl_torch.*)
from ._errors import from_op_error

__all__ = ["BatchDecode", "DecodeResize", "from_op_error"]

# ImageNet's per-channel normalisation (RGB, of values in [0, 1]): the modules' defaults
_IMAGENET_MEAN = (0.485, 0.456, 0.406)
_IMAGENET_STD = (0.229, 0.224, 0.225)


class DecodeResize(nn.Module):
    """One encoded image -> ``Tensor[1, 3, height, width]`` float32: ``decode_image`` (RGB, EXIF-oriented),
    antialiased bilinear resize of the whole image (``F.interpolate(..., antialias=True)``), ``x / 255``,
    then ``(x - mean) / std``.

    ``forward(data)`` takes a 1-D uint8 CPU tensor of the encoded bytes (``torch.ops.spdl_torch.read_file``,
    ``torch.frombuffer``, or a C++ ``at::Tensor``). TorchScript-scriptable.

    Args:
        height, width: the output size (positive).
        mean, std: 3 values each, per RGB channel, of pixels in [0, 1]; default ImageNet's,
            ``(0.485, 0.456, 0.406)`` and ``(0.229, 0.224, 0.225)``.

    Raises:
        ValueError: a size below 1, not 3 means and 3 stds, or a std of 0 or less.
    """

    def __init__(
        self,
        height: int = 224,
        width: int = 224,
        mean: Sequence[float] = _IMAGENET_MEAN,
        std: Sequence[float] = _IMAGENET_STD,
    ) -> None:
        super().__init__()
        if height < 1 or width < 1:
            raise ValueError(f"DecodeResize: expected a positive size, got {height=} {width=}")
        if len(mean) != 3 or len(std) != 3 or min(std) <= 0:
            raise ValueError(f"DecodeResize: expected 3 means and 3 positive stds, got {mean=} {std=}")
        self.height = int(height)
        self.width = int(width)
        self.register_buffer("mean", torch.tensor(mean, dtype=torch.float32).view(1, 3, 1, 1), persistent=False)
        self.register_buffer("std", torch.tensor(std, dtype=torch.float32).view(1, 3, 1, 1), persistent=False)

    def forward(self, data: torch.Tensor) -> torch.Tensor:
        image = torch.ops.spdl_torch.decode_image(data, mode="RGB")  # uint8 [3, H, W], data-dependent H, W
        if not torch.jit.is_scripting():
            # decode_image's fake gives H and W unbacked sizes >= 0; the op never returns an empty image
            torch._check(image.size(1) > 0)
            torch._check(image.size(2) > 0)
        x = image.unsqueeze(0).to(torch.float32)
        x = F.interpolate(x, size=[self.height, self.width], mode="bilinear", align_corners=False, antialias=True)
        return (x / 255.0 - self.mean) / self.std


class BatchDecode(nn.Module):
    """N encoded images -> ``Tensor[N, 3, height, width]`` float32 in one ``decode_images`` call (decode,
    resize, normalize fused in native threads). ``geometry="resize"`` resizes the whole image (as
    :class:`DecodeResize`; JPEGs may be decoded at a reduced DCT scale first, so values differ slightly from
    it); ``geometry="eval"`` with ``resize_shorter`` is ``Resize(S) + CenterCrop``.

    ``forward(data)`` takes a list of 1-D uint8 CPU tensors. The output shape is fixed by the arguments, so
    ``torch.compile(fullgraph=True)`` compiles it without graph breaks. TorchScript-scriptable.

    Args:
        height, width: the output size (positive).
        mean, std: per RGB channel, of pixels in [0, 1], as ``decode_images`` takes them; default ImageNet's,
            ``(0.485, 0.456, 0.406)`` and ``(0.229, 0.224, 0.225)``.
        geometry: ``"resize"`` or ``"eval"``; resize_shorter: ``"eval"``'s shorter side before the crop.

    Raises:
        ValueError: a size below 1, another ``geometry``.
    """

    def __init__(
        self,
        height: int = 224,
        width: int = 224,
        mean: Sequence[float] = _IMAGENET_MEAN,
        std: Sequence[float] = _IMAGENET_STD,
        *,
        geometry: str = "resize",
        resize_shorter: int = 0,
    ) -> None:
        super().__init__()
        if height < 1 or width < 1:
            raise ValueError(f"BatchDecode: expected a positive size, got {height=} {width=}")
        if geometry not in ("resize", "eval"):
            raise ValueError(f"BatchDecode: {geometry=} is not supported; expected 'resize' or 'eval'")
        self.height = int(height)
        self.width = int(width)
        self.geometry = geometry
        self.resize_shorter = int(resize_shorter)
        self.mean: List[float] = [float(m) for m in mean]
        self.std: List[float] = [float(s) for s in std]

    def forward(self, data: List[torch.Tensor]) -> torch.Tensor:
        batch, _ = torch.ops.spdl_torch.decode_images(
            data,
            height=self.height,
            width=self.width,
            geometry=self.geometry,
            resize_shorter=self.resize_shorter,
            dtype=torch.float32,
            mean=self.mean,
            std=self.std,
        )
        return batch
