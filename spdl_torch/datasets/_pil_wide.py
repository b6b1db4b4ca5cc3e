"""Images of more than 8 bits per sample, decoded for a converted torchvision dataset as its ``pil_loader`` does.

Pillow opens a 16-bit grey PNG, a PGM/PPM whose maxval is above 255 and a TIFF of more than 8 bits per sample in an
integer or float mode (``"I;16"``, ``"I"``, ``"F"``), and ``convert("RGB")`` clamps those values to 0..255. The
native decoder keeps the high byte of a 16-bit sample (Pillow's rule for 16-bit colour PNGs, libpng's
``png_set_strip_16``), so for such a file the two disagree. For a converted torchvision dataset, whose reference
is torch's DataLoader running ``pil_loader``, :func:`as_pillow_decodes` hands such a file to the fused batch as
the 8-bit RGB pixels Pillow makes of it (a binary PPM, which the native decoder reads exactly); every other file
is passed on untouched, after a look at its first bytes. ``HFImageDataset`` does the same, as Hugging Face's
``Image(mode="RGB")`` decodes such a file (``convert("RGB")`` after its EXIF turn).
"""

from __future__ import annotations

import io
import struct

import torch

__all__ = ["as_pillow_decodes", "is_wide"]

_PNG = b"\x89PNG\r\n\x1a\n"
_HEAD = 64  # bytes read to recognise a PNG or a PNM; a TIFF's first IFD is read where it lies


def _png_wide(head: bytes) -> bool:
    # IHDR is the first chunk: width, height (4 bytes each), then the bit depth
    return head[12:16] == b"IHDR" and len(head) > 24 and head[24] == 16


def _pnm_wide(head: bytes) -> bool:
    """A P2/P3/P5/P6 header (comments skipped) whose maxval is above 255."""
    fields, k = [], 2
    while len(fields) < 3 and k < len(head):
        c = head[k : k + 1]
        if c == b"#":
            end = head.find(b"\n", k)
            if end < 0:
                return False
            k = end + 1
        elif c.isspace():
            k += 1
        else:
            start = k
            while k < len(head) and head[k : k + 1].isdigit():
                k += 1
            if k == start:
                return False
            fields.append(int(head[start:k]))
    return len(fields) == 3 and fields[2] > 255


def _tiff_wide(data: memoryview) -> bool:
    """A TIFF whose first image has more than 8 bits per sample or floating-point samples."""
    order = "<" if bytes(data[:2]) == b"II" else ">"
    try:
        (ifd,) = struct.unpack_from(order + "I", data, 4)
        (count,) = struct.unpack_from(order + "H", data, ifd)
        for e in range(count):
            tag, kind, n, value = struct.unpack_from(order + "HHI4s", data, ifd + 2 + 12 * e)
            if tag not in (258, 339) or kind != 3:  # BitsPerSample, SampleFormat; SHORT values
                continue
            raw = value if n <= 2 else bytes(data[struct.unpack(order + "I", value)[0] :][: 2 * n])
            values = struct.unpack(order + f"{n}H", raw[: 2 * n]) if len(raw) >= 2 * n else ()
            if (tag == 258 and any(v > 8 for v in values)) or (tag == 339 and 3 in values):
                return True
    except struct.error:  # a truncated file: the decoder names the sample
        return False
    return False


def is_wide(data: torch.Tensor) -> bool:
    """Whether the encoded image ``data`` (Tensor[B] uint8) is one Pillow opens in an integer or float mode (see the
    module's docstring): a 16-bit PNG, a PGM/PPM of maxval > 255, a TIFF of more than 8 bits per sample."""
    head = data[:_HEAD].numpy().tobytes()
    if head.startswith(_PNG):
        return _png_wide(head)
    if head[:1] == b"P" and head[1:2] in (b"2", b"3", b"5", b"6"):
        return _pnm_wide(head)
    if head[:4] in (b"II*\x00", b"MM\x00*"):
        return _tiff_wide(memoryview(data.numpy()))  # no copy of the file
    return False


def as_pillow_decodes(data: torch.Tensor, exif_transpose: bool = False) -> torch.Tensor:
    """``data`` (Tensor[B] uint8, an encoded image), or for a file :func:`is_wide` names, a binary PPM of
    ``Image.open(...).convert("RGB")``: what torchvision's ``pil_loader`` gives (``exif_transpose=True``: turned
    upright first, as Hugging Face's ``Image(mode="RGB")`` gives it). A file Pillow cannot open is returned as it
    is (the native decoder then raises the error that names the sample)."""
    if not is_wide(data):
        return data
    from PIL import Image, ImageOps

    try:
        with Image.open(io.BytesIO(data.numpy().tobytes())) as image:
            rgb = (ImageOps.exif_transpose(image) if exif_transpose else image).convert("RGB")
    except Exception:  # noqa: BLE001 -- the native decoder reports the file as every other bad file
        return data
    ppm = b"P6\n%d %d\n255\n" % rgb.size + rgb.tobytes()
    return torch.frombuffer(bytearray(ppm), dtype=torch.uint8)
