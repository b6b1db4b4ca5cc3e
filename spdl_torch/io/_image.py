"""``decode_image``: one image file's bytes to a tensor (op ``decode_image``), its colour modes, the pixel limit,
and the fake kernel."""

from __future__ import annotations

import os
import warnings
from typing import TYPE_CHECKING

import torch

from .._errors import translate
from .._limits import DEFAULTS, default

if TYPE_CHECKING:
    from torchvision.io import ImageReadMode

__all__ = ["decode_image", "default_max_pixels"]


def default_max_pixels() -> int:
    """The limit of ``max_pixels=None``: ``spdl_torch.io.limits.image_pixels`` as the user set it, read at each
    call."""
    return default("image_pixels")


_CHANNELS = {"RGB": 3, "RGBA": 4, "GRAY": 1, "GRAY_ALPHA": 2}
_MODES = ("RGB", "RGBA", "GRAY", "GRAY_ALPHA", "UNCHANGED")
_DTYPES = (torch.uint8, torch.uint16)

_UNCHANGED_NEEDS_DTYPE = ("decode_image: mode=UNCHANGED with dtype=None returns the file's bit depth, which is not "
                          "known while tracing (torch.compile, torch.export); pass dtype=torch.uint8 or "
                          "dtype=torch.uint16")

# torch.frombuffer warns for read-only buffers such as bytes; the ops never write to their input.
warnings.filterwarnings("ignore", message="The given buffer is not writable", module=__name__)


@torch.library.register_fake("spdl_torch::decode_image")
def _decode_image_fake(data, *, mode="RGB", apply_exif_orientation=True, max_pixels=DEFAULTS["image_pixels"],
                       dtype=None):
    torch._check(data.dtype == torch.uint8, lambda: f"decode_image: expected uint8 data, got {data.dtype}")
    torch._check(data.dim() == 1, lambda: f"decode_image: expected 1-D data, got {data.dim()} dimensions")
    if dtype is None and mode == "UNCHANGED":
        raise ValueError(_UNCHANGED_NEEDS_DTYPE)
    ctx = torch.library.get_ctx()
    height, width = ctx.new_dynamic_size(), ctx.new_dynamic_size()
    channels = ctx.new_dynamic_size(min=1, max=4) if mode == "UNCHANGED" else _CHANNELS[mode]
    out_dtype = torch.uint8 if dtype is None else dtype
    torch._check(out_dtype in _DTYPES, lambda: f"decode_image: expected dtype uint8 or uint16, got {out_dtype}")
    return data.new_empty((height, width, channels), dtype=out_dtype).permute(2, 0, 1)


def _mode_name(mode) -> str:
    # a string (any case), or torchvision.io.ImageReadMode (an int enum: its name)
    name = mode.upper() if isinstance(mode, str) else str(getattr(mode, "name", mode)).upper()
    if name == "RGB_ALPHA":
        name = "RGBA"
    if name not in _MODES:
        raise ValueError(f"{mode=} is not supported; expected one of {', '.join(_MODES)}")
    return name


def decode_image(
    src: str | os.PathLike | bytes | bytearray | memoryview | torch.Tensor,
    mode: str | ImageReadMode = "RGB",
    *,
    apply_exif_orientation: bool = True,
    max_pixels: int | None = None,
    max_bytes: int | None = None,
    dtype: torch.dtype | None = None,
) -> torch.Tensor:
    """Decodes a JPEG, PNG, GIF (first frame), BMP, WebP, TIFF or binary PBM/PGM/PPM image, without the GIL.

    Defaults that differ from ``torchvision.io.decode_image``: ``mode="RGB"`` (torchvision: ``UNCHANGED``)
    and ``apply_exif_orientation=True`` (torchvision: False). They give what Pillow-based loading gives
    (``ImageFolder``: ``Image.open(f).convert("RGB")``, with ``ImageOps.exif_transpose``), so a model trained
    on torchvision's Pillow pipeline sees the same images; pass ``mode="UNCHANGED",
    apply_exif_orientation=False`` for torchvision's behaviour.

    The format is detected from the data, never from a file name. JPEG is decoded by libjpeg-turbo
    (accurate integer IDCT and fancy upsampling, as Pillow; CMYK/YCCK converted to RGB); the other formats
    by FFmpeg's libavcodec.

    Args:
        src: a file path, the encoded bytes, or a 1-D uint8 CPU tensor of them (used without a copy; bytes
            are wrapped zero-copy with ``torch.frombuffer``).
        mode: the output's colour mode, torchvision's names, as a string (any case) or a
            ``torchvision.io.ImageReadMode``: ``"RGB"`` (default): 3 channels, alpha dropped; ``"RGBA"`` (or
            ``"RGB_ALPHA"``): 4 channels, an opaque alpha (the dtype's maximum) added where the file has none;
            ``"GRAY"``: 1 channel, ITU-R 601-2 luma (the Y plane for JPEG); ``"GRAY_ALPHA"``: 2 channels, the
            luma and the alpha (opaque where absent), Pillow's ``"LA"``; ``"UNCHANGED"``: the file's own
            channels (1, 2, 3 or 4) and depth, as Pillow opens it: palette images (GIF, PNG, BMP) give RGB, or
            RGBA when they carry transparency (a GIF: when its first frame has a transparency index);
            lossless WebP gives RGBA only when the file has alpha.
        apply_exif_orientation: rotate/mirror the image by its EXIF orientation tag (0x0112), as
            ``PIL.ImageOps.exif_transpose``: JPEG (APP1), PNG (``eXIf`` chunk) and WebP (``EXIF`` chunk).
        max_pixels: raise instead of decoding images with more than this many pixels (width * height);
            ``None`` uses :data:`spdl_torch.io.limits.image_pixels`, 0 or less disables the limit.
        max_bytes: when ``src`` is a path, refuse files larger than this many bytes before reading them
            (``OSError`` with errno ``EFBIG``); ``None``: :data:`spdl_torch.io.limits.image_bytes` (0 by default: no
            limit); 0 or less: no limit.
        dtype: ``torch.uint8`` (values 0..255) or ``torch.uint16`` (0..65535), in every mode: 16-bit samples
            keep their high byte in uint8, 8-bit samples are replicated into uint16 (``v * 257``, so 255 ->
            65535). ``None`` (default): uint8, except UNCHANGED, which keeps a 16-bit file's 16 bits (16-bit
            PNG, PGM/PPM with a maximum value above 255, 16-bit TIFF) -- a dtype that depends on the data, so
            under ``torch.compile`` / ``torch.export`` UNCHANGED needs an explicit ``dtype`` (a ``ValueError``
            naming ``dtype=`` otherwise). The op, ``torch.ops.spdl_torch.decode_image`` (TorchScript, C++),
            follows the same rule.

    Returns:
        Tensor[C, H, W] with C = 3 (RGB), 4 (RGBA), 1 (GRAY), 2 (GRAY_ALPHA) or the file's own channel count
        (UNCHANGED), of ``dtype`` (see above). The tensor is a channels-last view (strides of an [H, W, C]
        buffer), as torchvision's decoders return.

    Raises:
        spdl_torch.DecodeError: the data is empty, truncated, corrupt, of an unknown format, or larger than
            ``max_pixels``; the message names the path (when given), the format and the decoder's reason.
            Its ``path`` is the path (``None`` for bytes and tensors), its ``sample_index`` ``None``.
        FileNotFoundError, IsADirectoryError, OSError: ``src`` is a path that cannot be read, or is not a
            regular file (a FIFO is refused, never waited on).
        ValueError: ``mode`` is not one of the supported modes, ``dtype`` not uint8 or uint16, or UNCHANGED
            without ``dtype`` under ``torch.compile``.
        RuntimeError (spdl_torch's ``InternalError``): a bug in spdl_torch (never the data's fault).
    """
    name = _mode_name(mode)
    if dtype is not None and dtype not in _DTYPES:
        raise ValueError(f"decode_image: {dtype=} is not supported; expected torch.uint8 or torch.uint16")
    limit = default_max_pixels() if max_pixels is None else int(max_pixels)
    sample = path = None
    if isinstance(src, (str, os.PathLike)):
        sample = path = os.fspath(src)
        if "\0" in sample:
            raise ValueError(f"decode_image: embedded null byte in path {sample!r}")
        data = _read(sample, default("image_bytes") if max_bytes is None else max_bytes)
    elif isinstance(src, torch.Tensor):
        data = src
    elif isinstance(src, (bytes, bytearray, memoryview)):
        sample = "<bytes>"
        data = torch.frombuffer(src, dtype=torch.uint8) if len(src) else torch.empty(0, dtype=torch.uint8)
    else:
        raise TypeError(f"decode_image: expected a path, bytes or a uint8 tensor, got {type(src).__name__}")
    if dtype is None and name == "UNCHANGED" and torch.compiler.is_compiling():
        raise ValueError(_UNCHANGED_NEEDS_DTYPE)
    try:
        return torch.ops.spdl_torch.decode_image(
            data, mode=name, apply_exif_orientation=apply_exif_orientation, max_pixels=limit, dtype=dtype
        )
    except RuntimeError as e:
        raise translate(e, sample, path=path) from None


def _read(path: str, max_bytes: int) -> torch.Tensor:
    try:
        return torch.ops.spdl_torch.read_file(path, max_bytes=int(max_bytes))
    except RuntimeError as e:
        raise translate(e, None) from None
