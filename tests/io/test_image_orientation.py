"""EXIF orientation of PNG (eXIf chunk) and WebP (EXIF chunk) against PIL.ImageOps.exif_transpose, in
decode_image and in the batch op decode_images."""

import io

import numpy as np
import pytest
import torch
from PIL import Image, ImageOps

from spdl_torch.io import decode_image, decode_images

from tests._utils import images


def _encoded(fmt: str, orientation: int | None, channels: int = 3, prefix: bool = False, **save) -> bytes:
    pixels = images.noise((6, 10, channels), seed=orientation or 0)  # 10 wide, 6 high: 5..8 swap the axes
    if orientation is not None:
        exif = Image.Exif()
        exif[0x0112] = orientation
        raw = exif.tobytes()
        save["exif"] = raw if prefix else raw[6:] if raw.startswith(b"Exif\0\0") else raw
    if fmt == "WEBP":
        save.setdefault("lossless", True)
    return images.encode(pixels if channels > 1 else pixels[..., 0], fmt, **save)


def _transposed(data: bytes, mode: str) -> np.ndarray:
    im = ImageOps.exif_transpose(Image.open(io.BytesIO(data)))
    a = np.asarray(im.convert(mode))
    return a[..., None] if a.ndim == 2 else a


@pytest.mark.parametrize("fmt", ["PNG", "WEBP"])
@pytest.mark.parametrize("orientation", range(1, 9))
def test_orientation_equals_pillow_exif_transpose(fmt, orientation):
    data = _encoded(fmt, orientation)
    assert Image.open(io.BytesIO(data)).getexif().get(0x0112) == orientation  # the file carries it
    actual = decode_image(data).permute(1, 2, 0).numpy()
    expected = _transposed(data, "RGB")
    assert actual.shape == expected.shape
    np.testing.assert_array_equal(actual, expected)
    upright = decode_image(data, apply_exif_orientation=False).permute(1, 2, 0).numpy()
    np.testing.assert_array_equal(upright, np.asarray(Image.open(io.BytesIO(data)).convert("RGB")))


@pytest.mark.parametrize("orientation", [3, 6, 8])
@pytest.mark.parametrize("mode,pil_mode,channels", [("GRAY", "L", 1), ("UNCHANGED", "RGBA", 4),
                                                    ("GRAY_ALPHA", "LA", 4)])
def test_orientation_in_other_modes(orientation, mode, pil_mode, channels):
    data = _encoded("PNG", orientation, channels=channels)
    np.testing.assert_array_equal(decode_image(data, mode=mode).permute(1, 2, 0).numpy(),
                                  _transposed(data, pil_mode))


def test_orientation_of_16bit_png():
    gray = (np.arange(60, dtype=np.uint32).reshape(6, 10) * 1031 % 65536).astype(np.uint16)
    exif = Image.Exif()
    exif[0x0112] = 6
    data = images.encode(Image.fromarray(gray), "PNG", exif=exif)
    expected = np.asarray(ImageOps.exif_transpose(Image.open(io.BytesIO(data))))
    out = decode_image(data, mode="UNCHANGED")
    assert out.dtype == torch.uint16
    np.testing.assert_array_equal(out[0].numpy(), expected)


@pytest.mark.parametrize("fmt", ["PNG", "WEBP"])
def test_exif_with_the_jpeg_app1_prefix(fmt):
    data = _encoded(fmt, 8, prefix=True)
    np.testing.assert_array_equal(decode_image(data).permute(1, 2, 0).numpy(), _transposed(data, "RGB"))


def test_malformed_exif_is_ignored():
    # an eXIf chunk that is not a TIFF structure: no orientation (Pillow reads none either)
    exif = b"XX\0*garbage"
    data = images.encode(images.noise((6, 10, 3)), "PNG", exif=exif)
    np.testing.assert_array_equal(decode_image(data).permute(1, 2, 0).numpy(),
                                  np.asarray(Image.open(io.BytesIO(data)).convert("RGB")))


@pytest.mark.parametrize("fmt", ["PNG", "WEBP", "JPEG"])
def test_batch_op_applies_the_orientation(fmt):
    # decode_images of the oriented file == decode_images of Pillow's exif_transpose'd image without EXIF
    oriented = [_encoded(fmt, o, quality=95) if fmt == "JPEG" else _encoded(fmt, o) for o in (1, 3, 6, 8)]
    references = [images.encode(_transposed(d, "RGB"), "PNG") for d in oriented]
    if fmt == "JPEG":  # a lossy file: its reference is its own decode, transposed
        references = [images.encode(decode_image(d).permute(1, 2, 0).numpy(), "PNG") for d in oriented]
        np.testing.assert_allclose(decode_image(oriented[2]).permute(1, 2, 0).numpy().astype(int),
                                   _transposed(oriented[2], "RGB").astype(int), atol=1)
    kw = {"height": 8, "width": 8, "resize_shorter": 8}
    np.testing.assert_array_equal(decode_images(oriented, **kw).data.numpy(),
                                  decode_images(references, **kw).data.numpy())
    # and with apply_exif_orientation=False, the stored image
    stored = [images.encode(np.asarray(Image.open(io.BytesIO(d)).convert("RGB")), "PNG") for d in oriented]
    if fmt != "JPEG":
        np.testing.assert_array_equal(decode_images(oriented, apply_exif_orientation=False, **kw).data.numpy(),
                                      decode_images(stored, **kw).data.numpy())
