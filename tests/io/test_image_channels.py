"""decode_image's channels against Pillow: GIF palettes and transparency (the first frame as Pillow shows
it), the file's own channels in UNCHANGED mode (GIF, lossless WebP), and the GRAY_ALPHA mode ("LA")."""

import io

import numpy as np
import pytest
import torch
from PIL import Image

from spdl_torch.io import decode_image

from tests._utils import images
from tests._utils.corpus import files, params, short_name
from tests._utils.images import pillow_reads


GIFS = [p for p in files("gif_suite", ".gif") + files("webp_tiff_bmp_gif", ".gif") if pillow_reads(p)]
# Where the first frame lies (partly) outside the logical screen: FFmpeg crops it to the screen or rejects
# it, Pillow grows the image to hold it.
GIF_DEVIATIONS = {
    "image-overlap-bg.gif": "FFmpeg crops the frame to the screen; Pillow grows the image",
    "image-outside-bg.gif": "FFmpeg rejects a frame outside the logical screen",
}


def _ours(src, mode, **kw) -> np.ndarray:
    out = decode_image(src, mode=mode, **kw)
    assert out.dim() == 3
    return out.permute(1, 2, 0).numpy()


def _pillow_gif(path, mode: str) -> np.ndarray:
    im = Image.open(path)
    im.load()
    if mode == "UNCHANGED":  # the file's own channels: a transparency index means RGBA
        mode = "RGBA" if "transparency" in im.info else "RGB"
    return np.asarray(im.convert(mode))


def test_transparent_index_keeps_its_palette_colour(tmp_path):
    """A 4x4 GIF whose transparent palette index 0 is red and index 1 blue (pixel (0, 0)): the transparent pixels
    are red in RGB, as Pillow's ``convert("RGB")`` gives them (FFmpeg's RGBA canvas whitens them), and red with
    alpha 0 in UNCHANGED."""
    path = tmp_path / "transparent_index0.gif"
    im = Image.new("P", (4, 4), 0)
    im.putpalette([255, 0, 0, 0, 0, 255])
    im.putpixel((0, 0), 1)
    im.save(path, transparency=0, background=1, optimize=False)
    expected = np.asarray(Image.open(path).convert("RGB"))
    rgb = _ours(path, "RGB")
    np.testing.assert_array_equal(rgb, expected)
    assert rgb[1, 1].tolist() == [255, 0, 0] and rgb[0, 0].tolist() == [0, 0, 255]
    rgba = _ours(path, "UNCHANGED")
    np.testing.assert_array_equal(rgba, np.asarray(Image.open(path).convert("RGBA")))
    assert rgba[1, 1].tolist() == [255, 0, 0, 0]


@pytest.mark.parametrize("mode", ["RGB", "RGBA", "UNCHANGED"])
@pytest.mark.parametrize("path", params(GIFS))
def test_gif_first_frame_equals_pillow(path, mode, request):
    name = short_name(path)
    if name in GIF_DEVIATIONS:
        request.applymarker(pytest.mark.xfail(reason=GIF_DEVIATIONS[name], strict=True))
    expected = _pillow_gif(path, mode)
    actual = _ours(path, mode)
    assert actual.shape == expected.shape
    np.testing.assert_array_equal(actual, expected)


def _gif(transparency=None, **save) -> bytes:
    # index 0 red, 1 blue, 2 green; a 6x5 frame of all three
    im = Image.fromarray(np.array([[0, 1, 2, 1, 0, 2]] * 5, dtype=np.uint8), mode="P")
    im.putpalette([255, 0, 0, 0, 0, 255, 0, 255, 0])
    if transparency is not None:
        save["transparency"] = transparency
    return images.encode(im, "GIF", **save)


@pytest.mark.parametrize("transparency", [None, 0, 1, 2])
def test_gif_transparency_index_of_each_colour(transparency):
    data = _gif(transparency)
    im = Image.open(io.BytesIO(data))
    assert ("transparency" in im.info) == (transparency is not None)
    for mode in ("RGB", "RGBA", "UNCHANGED", "GRAY", "GRAY_ALPHA"):
        pil_mode = {"UNCHANGED": "RGBA" if transparency is not None else "RGB", "GRAY": "L",
                    "GRAY_ALPHA": "LA"}.get(mode, mode)
        expected = np.asarray(Image.open(io.BytesIO(data)).convert(pil_mode))
        expected = expected[..., None] if expected.ndim == 2 else expected
        np.testing.assert_array_equal(_ours(data, mode), expected, err_msg=mode)


def _webp(channels: int, lossless: bool) -> bytes:
    pixels = images.upsampled_noise(12, 16, seed=channels)
    if channels == 4:
        pixels = np.concatenate([pixels, images.noise((12, 16, 1), seed=7)], -1)
    return images.encode(pixels, "WEBP", lossless=lossless, quality=90)


@pytest.mark.parametrize("channels", [3, 4])
def test_lossless_webp_unchanged_keeps_the_files_channels(channels):
    data = _webp(channels, lossless=True)
    im = Image.open(io.BytesIO(data))
    assert im.mode == ("RGBA" if channels == 4 else "RGB")
    actual = _ours(data, "UNCHANGED")
    np.testing.assert_array_equal(actual, np.asarray(im))
    if channels == 3:
        np.testing.assert_array_equal(_ours(data, "RGBA")[..., 3], 255)


@pytest.mark.parametrize("channels", [3, 4])
def test_lossy_webp_unchanged_has_the_files_channels(channels):
    data = _webp(channels, lossless=False)
    im = Image.open(io.BytesIO(data))
    assert decode_image(data, mode="UNCHANGED").shape == (len(im.getbands()), 12, 16)


WEBPS = [p for p in files("webp_tiff_bmp_gif", ".webp") if pillow_reads(p)]


@pytest.mark.parametrize("path", params(WEBPS))
def test_webp_corpus_unchanged_channels_equal_pillow(path):
    im = Image.open(path)
    assert decode_image(path, mode="UNCHANGED").shape[0] == len(im.getbands())


# ---- GRAY_ALPHA ------------------------------------------------------------------------------------


def _pillow_la(path) -> np.ndarray:
    """Pillow's "LA" with our 16-bit rule (the high byte; Pillow clips 16-bit grey instead)."""
    im = Image.open(path)
    im.load()
    if im.mode.startswith("I"):
        a = np.asarray(im).astype(np.uint32)
        key = im.info.get("transparency")
        alpha = np.where(a == key, 0, 255) if key is not None else np.full(a.shape, 255)
        return np.stack([a >> 8, alpha], -1).astype(np.uint8)
    if im.mode == "P" or "transparency" in im.info:
        im = im.convert("RGBA")  # a palette's or a tRNS key's transparency becomes alpha first
    return np.asarray(im.convert("LA"))


PNGS = [p for p in files("pngsuite", ".png") + files("png_other", ".png") if pillow_reads(p)]
PNG_DEVIATIONS = {  # the same files as in test_decode_image.KNOWN_DEVIATIONS: damaged data we refuse
    "xcsn0g01.png": "wrong IDAT checksum, which we verify (Pillow does not)",
    "invalid-noend.png": "no IEND chunk: refused as truncated",
    "invalid-trunc.png": "truncated: refused",
}


@pytest.mark.parametrize("path", params(PNGS + GIFS))
def test_gray_alpha_equals_pillow_la(path, request):
    name = short_name(path)
    if name in {**PNG_DEVIATIONS, **GIF_DEVIATIONS}:
        request.applymarker(pytest.mark.xfail(reason={**PNG_DEVIATIONS, **GIF_DEVIATIONS}[name], strict=True))
    expected = _pillow_la(path)
    actual = _ours(path, "GRAY_ALPHA")
    assert actual.dtype == np.uint8
    np.testing.assert_array_equal(actual, expected)


def test_gray_alpha_of_jpeg_is_gray_with_opaque_alpha():
    data = images.encode(images.upsampled_noise(16, 24), "JPEG", quality=90)
    la = decode_image(data, mode="GRAY_ALPHA")
    assert la.shape == (2, 16, 24) and la.dtype == torch.uint8
    assert torch.equal(la[:1], decode_image(data, mode="GRAY"))
    assert bool((la[1] == 255).all())


def test_torchvision_gray_alpha_mode_is_accepted():
    from torchvision.io import ImageReadMode as TV

    rgba = images.noise((6, 5, 4), seed=4)
    data = images.encode(rgba, "PNG")
    ours = decode_image(data, mode=TV.GRAY_ALPHA)
    np.testing.assert_array_equal(ours.permute(1, 2, 0).numpy(), np.asarray(Image.fromarray(rgba).convert("LA")))
