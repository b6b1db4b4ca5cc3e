"""JPEG streams with libjpeg warnings: a harmless warning decodes to the clean file's pixels; a harmless
warning followed by a fatal error is a DecodeError (TurboJPEG 2.1 reports that error as a warning and writes no
pixels); a stream without its own tables is decoded with none of an earlier stream's."""

import pytest
import torch

from spdl_torch import DecodeError
from spdl_torch.io import decode_image, decode_images

from tests._utils import images

SOS = b"\xff\xda"


def _progressive_jpeg() -> bytes:
    return images.encode(images.upsampled_noise(120, 160, seed=3, cell=10), "JPEG", quality=90, progressive=True)


def _nth(data: bytes, marker: bytes, n: int) -> int:
    pos = -1
    for _ in range(n):
        pos = data.index(marker, pos + 1)
    return pos


def _with_junk_before_second_scan(data: bytes) -> bytes:
    """Two bytes between the first scan's data and the second SOS: libjpeg's "Corrupt JPEG data: 2
    extraneous bytes before marker 0xda" warning, which loses no pixels."""
    pos = _nth(data, SOS, 2)
    return data[:pos] + b"\x12\x34" + data[pos:]


_tensor = images.as_tensor


def test_harmless_warning_decodes_to_the_clean_pixels():
    clean = _progressive_jpeg()
    warned = _with_junk_before_second_scan(clean)
    assert torch.equal(decode_image(_tensor(warned)), decode_image(_tensor(clean)))
    for partial in (True, False):
        kwargs = dict(height=64, width=64, geometry="train", seeds=[5], partial_decode=partial)
        assert torch.equal(decode_images([_tensor(warned)], **kwargs).data, decode_images([_tensor(clean)], **kwargs).data)


def test_fatal_error_after_a_harmless_warning_is_a_decode_error():
    """Junk bytes before a scan (a harmless warning), then an unknown marker (fatal). TurboJPEG 2.1 answers
    TJERR_WARNING for any failure once a warning was seen and keeps only the last message, so this stream once
    "decoded" with no pixel written: the caller got uninitialized memory (the corpus's ``CVE-2017-2862.jpg`` was
    one; the differential fuzz target ``fuzz_decode_batch`` found it as stale pixels). TurboJPEG now stops at the
    first warning, and a harmless one sends the stream through libjpeg's own API, which sees every message."""
    warned = _with_junk_before_second_scan(_progressive_jpeg())
    third = _nth(warned, SOS, 3)
    broken = warned[: third + 1] + b"\x80" + warned[third + 2 :]  # an unknown marker type: fatal in libjpeg
    with pytest.raises(DecodeError, match="Unsupported marker type 0x80"):
        decode_image(_tensor(broken))
    for partial in (True, False):
        with pytest.raises(DecodeError, match=r"^sample 0: JPEG: Unsupported marker type 0x80"):
            decode_images([_tensor(broken)], height=32, width=32, partial_decode=partial)


def _without_huffman_tables(data: bytes) -> bytes:
    """The stream with its DHT segments cut out (an "abbreviated" stream that relies on tables from
    elsewhere)."""
    out, pos = bytearray(data[:2]), 2
    while pos + 4 <= len(data) and data[pos] == 0xFF and data[pos + 1] != 0xDA:
        length = int.from_bytes(data[pos + 2 : pos + 4], "big")
        if data[pos + 1] != 0xC4:
            out += data[pos : pos + 2 + length]
        pos += 2 + length
    return bytes(out + data[pos:])


def test_no_tables_carry_over_from_the_previous_image_on_the_thread():
    """A reused libjpeg decompression object keeps earlier streams' Huffman and quantization tables and decodes
    a stream without tables of its own ("abbreviated") with them: such a file once decoded (to garbage) or
    failed depending on the image decoded before it on the thread (found by ``fuzz_decode_batch``). Every
    stream now gets a fresh decompressor; the result must not depend on what the thread decoded before."""
    clean = _progressive_jpeg()
    stripped = _tensor(_without_huffman_tables(clean))
    for before in (None, clean):
        if before is not None:
            decode_image(_tensor(before))  # same (calling) thread
            decode_images([_tensor(before)], height=32, width=32)  # one sample: decoded on the calling thread
        with pytest.raises(DecodeError, match="Huffman table"):
            decode_image(stripped)
        for partial in (True, False):
            if before is not None:
                decode_images([_tensor(before)], height=32, width=32, partial_decode=partial)
            with pytest.raises(DecodeError, match=r"^sample 0: JPEG: .*Huffman table"):
                decode_images([stripped], height=32, width=32, partial_decode=partial)
