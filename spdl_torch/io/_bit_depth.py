"""The sample depth (8 or 16 bit) of an encoded image, read from its header: what ``decode_image`` returns
in ``UNCHANGED`` mode when no ``dtype`` is given (eager only; the op itself needs the dtype as an argument so
that ``torch.compile`` knows it)."""

from __future__ import annotations

import struct

import torch

__all__ = ["source_bit_depth"]

_PNG = b"\x89PNG\r\n\x1a\n"
_WHITESPACE = b" \t\r\n"


def source_bit_depth(data: torch.Tensor) -> int:
    """16 for the files whose samples the decoders keep at 16 bit (16-bit PNG; PGM/PPM with a maximum value
    above 255; TIFF with 16-bit unsigned integer samples), else 8. Malformed headers read as 8 (the decoder
    then reports what is wrong)."""
    if data.dim() != 1 or data.dtype != torch.uint8 or data.device.type != "cpu" or data.numel() < 8:
        return 8
    buf = memoryview(data.contiguous().numpy())
    head = bytes(buf[:32])
    if head.startswith(_PNG):
        return 16 if len(head) > 24 and head[12:16] == b"IHDR" and head[24] == 16 else 8
    if head[:1] == b"P" and head[1:2] in (b"5", b"6"):
        return 16 if _netpbm_maxval(bytes(buf[:1024])) > 255 else 8
    if head[:4] in (b"II*\0", b"MM\0*"):
        return _tiff_bit_depth(buf)
    return 8


def _netpbm_maxval(head: bytes) -> int:
    """The maximum value of a binary PGM/PPM header (``P5 width height maxval``, with ``#`` comments)."""
    tokens, pos = [], 2
    while len(tokens) < 3 and pos < len(head):
        c = head[pos:pos + 1]
        if c in (b"#",):
            end = head.find(b"\n", pos)
            pos = len(head) if end < 0 else end + 1
        elif c in (b" ", b"\t", b"\r", b"\n"):
            pos += 1
        else:
            start = pos
            while pos < len(head) and head[pos] not in _WHITESPACE:
                pos += 1
            tokens.append(head[start:pos])
    try:
        return int(tokens[2])
    except (IndexError, ValueError):
        return 0


def _tiff_bit_depth(buf: memoryview) -> int:
    """16 when IFD0 says BitsPerSample 16 and SampleFormat unsigned integer (1, or absent)."""
    order = "<" if bytes(buf[:2]) == b"II" else ">"
    try:
        (ifd,) = struct.unpack_from(order + "I", buf, 4)
        (count,) = struct.unpack_from(order + "H", buf, ifd)
        values = {}
        for i in range(count):
            tag, typ, n, _ = struct.unpack_from(order + "HHII", buf, ifd + 2 + 12 * i)
            if tag in (0x0102, 0x0153) and typ == 3:  # BitsPerSample, SampleFormat: SHORT
                offset = ifd + 2 + 12 * i + 8 if n <= 2 else struct.unpack_from(order + "I", buf, ifd + 10 + 12 * i)[0]
                values[tag] = struct.unpack_from(order + "H", buf, offset)[0]
    except struct.error:
        return 8
    return 16 if values.get(0x0102) == 16 and values.get(0x0153, 1) == 1 else 8
