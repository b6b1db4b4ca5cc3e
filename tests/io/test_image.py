"""decode_image against Pillow on real files, in every mode; bad input; the EXIF orientation."""

import io

import numpy as np
import pytest
import torch
from PIL import Image, ImageOps

import spdl_torch
from spdl_torch import DecodeError
from spdl_torch.io import decode_image

from tests._utils import images
from tests._utils.corpus import files, params, short_name
from tests._utils.images import pillow_reads


# Lossless formats (and lossy WebP, skipped below) of the corpus, split by whether Pillow can read them.
_STILLS = (
    files("pngsuite", ".png")
    + files("png_other", ".png")
    + files("photos_png", ".png")
    + files("gif_suite", ".gif")
    + files("webp_tiff_bmp_gif", ".png", ".gif", ".bmp", ".tif", ".tiff", ".webp")
)
LOSSLESS = [p for p in _STILLS if pillow_reads(p)]
PILLOW_REJECTS = [p for p in _STILLS if p not in LOSSLESS]
# Expected differences from Pillow, each with its cause. Strict xfail: a change in behaviour shows up.
KNOWN_DEVIATIONS = {
    # GIF first frames that lie (partly) outside the logical screen: FFmpeg crops the frame to the screen
    # or rejects it, Pillow grows the image to hold it. (Transparent pixels and the uncovered screen take
    # their palette colours as in Pillow: csrc/core/detail/parse/gif_frame.h, tests/io/test_image_channels.py.)
    "image-overlap-bg.gif": "FFmpeg crops the frame to the screen; Pillow grows the image",
    "image-outside-bg.gif": "FFmpeg rejects a frame outside the logical screen",
    # Pillow reads these damaged files; we refuse them (they are missing data or fail a checksum).
    "xcsn0g01.png": "PngSuite corrupted: wrong IDAT checksum, which we verify (Pillow does not)",
    "invalid-noend.png": "no IEND chunk: refused as truncated",
    "invalid-trunc.png": "truncated: refused",
    # FFmpeg's TIFF decoder reads strips only; tiled TIFF is refused with a DecodeError.
    "video-001-tile-64x64.tiff": "tiled TIFF is refused (FFmpeg returns black for it)",
}
JPEGS = files("jpeg_variants", ".jpg", ".jpeg") + files("jpeg_exif_orientation", ".jpg")


def _is_lossy_webp(path) -> bool:
    head = path.read_bytes()[:64]
    return head[8:12] == b"WEBP" and b"VP8L" not in head


def _pillow(path, mode: str) -> np.ndarray:
    """Pillow's decode of `path` in our mode's terms, as HWC. 16-bit samples keep their high byte except
    in UNCHANGED (Pillow's own convert() clips 16-bit grey instead, which no decoder should copy)."""
    im = Image.open(path)
    im.load()
    if im.format in ("JPEG", "PNG", "WEBP") and im.getexif().get(0x0112, 1) != 1:
        im = ImageOps.exif_transpose(im)  # decode_image applies the EXIF orientation of these formats
    if im.mode.startswith("I"):  # 16-bit grey
        a = np.asarray(im).astype(np.uint32)
        key = im.info.get("transparency")  # a tRNS grey key becomes alpha
        alpha = np.where(a == key, 0, 0xFFFF).astype(np.uint32)
        if mode == "UNCHANGED":
            return np.stack([a, alpha], -1).astype(np.uint16) if key is not None else a.astype(np.uint16)[..., None]
        g, a8 = (a >> 8).astype(np.uint8), (alpha >> 8).astype(np.uint8)
        return {"GRAY": g[..., None], "RGB": np.stack([g] * 3, -1), "RGBA": np.stack([g, g, g, a8], -1)}[mode]
    if mode == "UNCHANGED":
        if "transparency" in im.info and im.mode in ("L", "RGB"):
            im = im.convert(im.mode[0] + "A" if im.mode == "L" else "RGBA")  # a tRNS key becomes alpha
        if im.mode == "P":
            im = im.convert("RGBA" if "transparency" in im.info or im.palette.mode == "RGBA" else "RGB")
        elif im.mode in ("1", "CMYK", "PA"):
            im = im.convert({"1": "L", "CMYK": "RGB", "PA": "RGBA"}[im.mode])
        a = np.asarray(im)
        return a[..., None] if a.ndim == 2 else a
    a = np.asarray(im.convert({"GRAY": "L", "RGB": "RGB", "RGBA": "RGBA"}[mode]))
    return a[..., None] if a.ndim == 2 else a


def _ours(path, mode: str) -> np.ndarray:
    out = decode_image(path, mode=mode)
    assert out.dim() == 3
    return out.permute(1, 2, 0).numpy()


# Pillow's advice while it converts its own reference of a palette PNG with a tRNS chunk (its business, not ours)
PILLOW_PALETTE_ADVICE = pytest.mark.filterwarnings("ignore:Palette images with Transparency expressed in bytes:UserWarning")


@PILLOW_PALETTE_ADVICE
@pytest.mark.parametrize("path", params(LOSSLESS))
def test_lossless_formats_equal_pillow(path, request):
    name = short_name(path)
    if name in KNOWN_DEVIATIONS:
        request.applymarker(pytest.mark.xfail(reason=KNOWN_DEVIATIONS[name], strict=True))
    if _is_lossy_webp(path):
        pytest.skip("lossy WebP: covered by test_lossy_webp_close_to_pillow")
    expected = _pillow(path, "RGB")
    actual = _ours(path, "RGB")
    assert actual.dtype == np.uint8
    np.testing.assert_array_equal(actual, expected)


@PILLOW_PALETTE_ADVICE
@pytest.mark.parametrize("mode", ["GRAY", "RGBA", "UNCHANGED"])
@pytest.mark.parametrize("path", params([p for p in LOSSLESS if p.suffix == ".png"]))
def test_png_modes_equal_pillow(path, mode, request):
    name = short_name(path)
    if name in KNOWN_DEVIATIONS:
        request.applymarker(pytest.mark.xfail(reason=KNOWN_DEVIATIONS[name], strict=True))
    expected = _pillow(path, mode)
    actual = _ours(path, mode)
    im = Image.open(path)
    if mode == "UNCHANGED" and im.mode in ("RGB", "RGBA", "LA") and actual.dtype == np.uint16:
        # Pillow reads 16-bit colour as 8-bit (the high byte): compare at that precision, and check the
        # channel count and that the full 16-bit values were kept.
        if actual.shape[-1] == 2 and expected.shape[-1] == 4:  # Pillow opens 16-bit grey+alpha as RGBA
            expected = expected[..., [0, 3]]
        assert actual.shape == expected.shape
        np.testing.assert_array_equal((actual >> 8).astype(np.uint8), expected)
        return
    assert actual.dtype == expected.dtype
    np.testing.assert_array_equal(actual, expected)


@pytest.mark.ffmpeg  # FFmpeg's own verdicts: without it every one of these is a DecodeError naming FFmpeg
@pytest.mark.parametrize("path", params(PILLOW_REJECTS))
def test_files_pillow_rejects_raise_decode_error(path, request):
    if short_name(path) == "invalid-code.gif":
        request.applymarker(pytest.mark.xfail(reason="FFmpeg decodes an invalid LZW code that Pillow rejects", strict=True))
    with pytest.raises(DecodeError):
        decode_image(path)


def test_unchanged_16bit_png_keeps_16_bits():
    im = Image.fromarray(np.arange(0, 65536, 257, dtype=np.uint16)[:256].reshape(16, 16))
    data = images.encode(im, "PNG")
    out = decode_image(data, mode="UNCHANGED")
    assert out.dtype == torch.uint16 and out.shape == (1, 16, 16)
    np.testing.assert_array_equal(out[0].numpy(), np.asarray(im))
    rgb = decode_image(data, mode="RGB")
    np.testing.assert_array_equal(rgb[0].numpy(), (np.asarray(im) >> 8).astype(np.uint8))


@pytest.mark.parametrize("path", params([p for p in LOSSLESS if _is_lossy_webp(p)]))
def test_lossy_webp_close_to_pillow(path):
    # libwebp (Pillow) and FFmpeg (libswscale's BT.601 conversion) upsample chroma differently: not bit-exact.
    expected = _pillow(path, "RGB").astype(np.float64)
    actual = _ours(path, "RGB").astype(np.float64)
    mse = np.mean((actual - expected) ** 2)
    assert 10 * np.log10(255**2 / mse) >= 30  # PSNR in dB


@pytest.mark.parametrize("path", params(JPEGS))
@pytest.mark.parametrize("mode", ["RGB", "GRAY", "RGBA", "UNCHANGED"])
def test_jpeg_within_one_of_pillow(path, mode):
    # Both use libjpeg-turbo with its defaults: accurate integer IDCT (JDCT_ISLOW) and fancy upsampling.
    # Pillow's wheel bundles libjpeg-turbo 3.x, we link Debian's 2.1: rounding may differ by one level.
    if mode == "GRAY":
        # libjpeg's grey output is the Y plane, as Pillow's draft("L") decode.
        im = Image.open(path)
        if im.mode == "CMYK":
            pytest.skip("CMYK has no Y plane: GRAY goes through RGB")
        im.draft("L", im.size)
        im = ImageOps.exif_transpose(im)
        expected = np.asarray(im.convert("L"))[..., None]
    else:
        expected = _pillow(path, mode)
    actual = _ours(path, mode)
    assert actual.shape == expected.shape
    diff = np.abs(actual.astype(np.int16) - expected.astype(np.int16))
    assert diff.max() <= 1, f"max abs difference {diff.max()}"


def _jpeg_bytes(width=64, height=48, exif_orientation=None, **kw) -> bytes:
    rng = np.random.default_rng(0)
    # smooth content so that JPEG keeps it recognisable; corners differ so that flips are visible
    y, x = np.mgrid[0:height, 0:width]
    rgb = np.stack([x * 255 // width, y * 255 // height, (x + y) % 256], -1).astype(np.uint8)
    rgb[:8, :8] = (255, 0, 0)
    rgb = (rgb.astype(int) + rng.integers(0, 2, rgb.shape)).clip(0, 255).astype(np.uint8)
    if exif_orientation is not None:
        exif = Image.Exif()
        exif[0x0112] = exif_orientation
        kw["exif"] = exif
    return images.encode(rgb, "JPEG", quality=95, **kw)


@pytest.mark.parametrize("orientation", range(1, 9))
def test_exif_orientation_matches_pillow_exif_transpose(orientation):
    data = _jpeg_bytes(exif_orientation=orientation)
    expected = np.asarray(ImageOps.exif_transpose(Image.open(io.BytesIO(data))).convert("RGB"))
    actual = decode_image(data).permute(1, 2, 0).numpy()
    assert actual.shape == expected.shape
    assert np.abs(actual.astype(int) - expected).max() <= 1
    upright = decode_image(data, apply_exif_orientation=False)
    assert upright.shape == (3, 48, 64)


def test_sources_path_bytes_tensor_agree(tmp_path):
    data = _jpeg_bytes()
    path = tmp_path / "a.jpg"
    path.write_bytes(data)
    from_path = decode_image(path)
    assert torch.equal(from_path, decode_image(str(path)))
    assert torch.equal(from_path, decode_image(data))
    assert torch.equal(from_path, decode_image(bytearray(data)))
    assert torch.equal(from_path, decode_image(torch.frombuffer(bytearray(data), dtype=torch.uint8)))
    assert torch.equal(from_path, torch.ops.spdl_torch.decode_image(spdl_torch.io.read_file(path)))
    assert from_path.shape == (3, 48, 64) and from_path.dtype == torch.uint8


# ---- bad input -------------------------------------------------------------------------------------


def _png_bytes(width=8, height=8) -> bytes:
    return images.encode(Image.new("RGB", (width, height), (1, 2, 3)), "PNG")


def _with_jpeg_size(data: bytes, width: int, height: int) -> bytes:
    """The same JPEG with its SOF0 frame header declaring another size."""
    sof = data.index(b"\xff\xc0")
    return data[: sof + 5] + height.to_bytes(2, "big") + width.to_bytes(2, "big") + data[sof + 9 :]


def _with_png_size(data: bytes, width: int, height: int) -> bytes:
    import zlib

    ihdr = b"IHDR" + width.to_bytes(4, "big") + height.to_bytes(4, "big") + data[24:29]
    return data[:12] + ihdr + zlib.crc32(ihdr).to_bytes(4, "big") + data[33:]


BAD_INPUTS = {
    "zero bytes": (b"", "empty data"),
    "random bytes": (np.random.default_rng(1).integers(0, 256, 4096, dtype=np.uint8).tobytes(), "unknown image format"),
    "unsupported format (QOI)": (b"qoif\x00\x00\x00\x02\x00\x00\x00\x02\x03\x00" + bytes(16), "unknown image format"),
    "truncated JPEG": (_jpeg_bytes(640, 480)[:3000], "JPEG: .*[Pp]remature end"),
    "JPEG header only": (_jpeg_bytes()[:200], "JPEG"),
    "JPEG declaring 60000x60000": (_with_jpeg_size(_jpeg_bytes(), 60000, 60000), "exceeds the limit of 178956970"),
    "JPEG declaring 65535x65535": (_with_jpeg_size(_jpeg_bytes(), 65535, 65535), "Maximum supported image dimension"),
    "truncated PNG": (_png_bytes(300, 300)[:-40], "PNG: truncated"),
    "PNG declaring 2^31 pixels": (_with_png_size(_png_bytes(), 65536, 32768), "exceeds the limit"),
    "PNG with a bad CRC": (_png_bytes()[:-5] + b"\x00" + _png_bytes()[-4:], "PNG"),
    "GIF header only": (b"GIF89a\x02\x00\x02\x00\x00\x00\x00", "GIF"),
}


@pytest.mark.parametrize("kind", list(BAD_INPUTS))
def test_bad_input_raises_decode_error(kind):
    data, pattern = BAD_INPUTS[kind]
    with pytest.raises(DecodeError, match=pattern) as info:
        decode_image(data)
    assert isinstance(info.value, RuntimeError)
    assert str(info.value).startswith("<bytes>: ")


def test_decode_error_names_the_path(tmp_path):
    path = tmp_path / "broken.jpg"
    path.write_bytes(_jpeg_bytes(640, 480)[:2000])
    with pytest.raises(DecodeError, match=f"^{path}: JPEG: "):
        decode_image(path)


def test_truncated_real_photo_is_an_error_not_a_grey_fill(tmp_path):
    data = _jpeg_bytes(640, 480)
    for cut in (len(data) // 4, len(data) // 2, len(data) - 3):
        with pytest.raises(DecodeError, match="Premature end of JPEG file"):
            decode_image(data[:cut])
    assert decode_image(data).shape == (3, 480, 640)  # the thread's decoder is still usable afterwards


def test_pixel_limit_is_configurable():
    data = _jpeg_bytes(64, 48)
    with pytest.raises(DecodeError, match="64x48 = 3072 pixels exceeds the limit of 3071"):
        decode_image(data, max_pixels=3071)
    assert decode_image(data, max_pixels=3072).shape == (3, 48, 64)
    png = _png_bytes(10, 10)
    with pytest.raises(DecodeError, match="PNG: image of 10x10 = 100 pixels exceeds the limit of 99"):
        decode_image(png, max_pixels=99)
    assert decode_image(png, max_pixels=0).shape == (3, 10, 10)


def test_missing_file_and_bad_arguments(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.jpg"):
        decode_image(tmp_path / "nope.jpg")
    with pytest.raises(IsADirectoryError):
        decode_image(tmp_path)
    with pytest.raises(ValueError, match="mode="):
        decode_image(_png_bytes(), mode="CMYK")
    with pytest.raises(TypeError, match="expected a path, bytes or a uint8 tensor"):
        decode_image(12)
    with pytest.raises(RuntimeError, match="expected the encoded data as a uint8 tensor, got dtype Float"):
        decode_image(torch.zeros(10))
    with pytest.raises(RuntimeError, match="expected the encoded data as a 1-D tensor, got 2 dimensions"):
        decode_image(torch.zeros(2, 5, dtype=torch.uint8))


@pytest.mark.parametrize("mode,pil_mode", [("P6", "RGB"), ("P5", "L"), ("P4", "1")])
def test_binary_netpbm_equals_pillow(image_file, mode, pil_mode):
    # torchvision's ImageFolder lists .ppm/.pgm files, so the loader must decode them.
    im = Image.fromarray(images.noise((7, 9, 3), seed=3)).convert(pil_mode)
    path = image_file(f"a.{ {'P6': 'ppm', 'P5': 'pgm', 'P4': 'pbm'}[mode] }", im)
    assert path.read_bytes()[:2] == mode.encode()
    np.testing.assert_array_equal(_ours(path, "RGB"), np.asarray(im.convert("RGB")))


def test_torchvision_read_modes_are_accepted():
    from torchvision.io import ImageReadMode as TV

    data = _png_bytes()
    assert decode_image(data, mode=TV.GRAY).shape == (1, 8, 8)
    assert decode_image(data, mode=TV.RGB_ALPHA).shape == (4, 8, 8)
    assert decode_image(data, mode=TV.UNCHANGED).shape == (3, 8, 8)
    for member in TV:  # every torchvision mode is one of the strings, by name (RGB_ALPHA: RGBA)
        assert torch.equal(decode_image(data, mode=member), decode_image(data, mode=member.name))
    assert torch.equal(decode_image(data, mode="gray_alpha"), decode_image(data, mode="GRAY_ALPHA"))  # any case
    assert not hasattr(spdl_torch.io, "ImageReadMode")  # torchvision's enum or the strings, no enum of ours
    with pytest.raises(ValueError, match=r"mode='BGR' is not supported; expected one of RGB, RGBA, GRAY, "
                                         r"GRAY_ALPHA, UNCHANGED"):
        decode_image(data, mode="BGR")


def test_fifo_and_special_paths_are_refused_without_blocking(tmp_path):
    import os

    fifo = tmp_path / "fifo.jpg"
    os.mkfifo(fifo)
    with pytest.raises(OSError, match="not a regular file"):
        decode_image(fifo)  # must return, not wait for a writer
    with pytest.raises(OSError, match="not a regular file"):
        decode_image("/dev/zero")
    with pytest.raises(ValueError, match="embedded null byte"):
        decode_image(str(tmp_path / "a.jpg") + "\0x")
    with pytest.raises(ValueError, match="embedded null byte"):
        spdl_torch.io.read_file("a\0b")


def test_setting_max_image_pixels_on_the_package_is_the_default_of_every_call(monkeypatch):
    import io as _io

    from PIL import Image

    import spdl_torch.io

    buf = _io.BytesIO()
    Image.new("RGB", (64, 10), (1, 2, 3)).save(buf, format="PNG")  # 64 wide: FFmpeg's own check pads rows
    data = buf.getvalue()
    assert spdl_torch.io.decode_image(data).shape == (3, 10, 64)
    monkeypatch.setattr(spdl_torch.io.limits, "image_pixels", 639)  # 640 pixels: one too many
    with pytest.raises(spdl_torch.DecodeError, match="pixel"):
        spdl_torch.io.decode_image(data)
    with pytest.raises(spdl_torch.DecodeError, match="pixel"):
        spdl_torch.io.decode_images([data], height=8, width=8)
    assert spdl_torch.io.decode_image(data, max_pixels=640).shape == (3, 10, 64)  # an explicit limit wins
