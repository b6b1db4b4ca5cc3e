"""Which encoded images Pillow opens in a 16-bit or float mode (spdl_torch/datasets/_pil_wide.py), told from their
first bytes, and the PPM of Pillow's ``convert("RGB")`` handed to the fused batch in their place."""

import io
import subprocess

import numpy as np
import pytest
from PIL import Image

from spdl_torch.datasets._pil_wide import as_pillow_decodes, is_wide
from spdl_torch.io import decode_image
from tests._utils.images import as_tensor, encode, pgm

GREY16 = (np.arange(12 * 10, dtype=np.uint16).reshape(12, 10) * 547)  # 0..65,0xx: most values above 255


def _rgb48_png(tmp_path):
    path = tmp_path / "rgb48.png"
    subprocess.run(["ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", "gradients=s=10x12", "-frames:v", "1",
                    "-pix_fmt", "rgb48be", str(path)], check=True)
    return path.read_bytes()


def _wide_files(tmp_path):
    return {
        "grey16.png": encode(GREY16, "PNG"),
        "grey16.tif": encode(GREY16, "TIFF"),
        "float.tif": encode(GREY16.astype(np.float32) / 300, "TIFF"),
        "grey16.pgm": pgm(GREY16, comment=True),
        "grey12.pgm": pgm(GREY16 >> 4, maxval=4095, comment=True),
        "rgb48.png": _rgb48_png(tmp_path),
    }


def _narrow_files():
    rgb = np.random.default_rng(0).integers(0, 256, (12, 10, 3), dtype=np.uint8)
    return {
        "rgb.png": encode(rgb, "PNG"),
        "grey.png": encode(rgb[..., 0], "PNG"),
        "rgb.tif": encode(rgb, "TIFF"),
        "grey.pgm": pgm(rgb[..., 0], maxval=255),
        "rgb.jpg": encode(rgb, "JPEG"),
        "rgb.webp": encode(rgb, "WEBP", lossless=True),
    }


def test_files_pillow_opens_in_a_wide_mode_are_recognised(tmp_path):
    for name, data in _wide_files(tmp_path).items():
        assert Image.open(io.BytesIO(data)).mode in ("I;16", "I;16B", "I", "F", "RGB"), name  # rgb48: Pillow's RGB
        assert is_wide(as_tensor(data)), name
    for name, data in _narrow_files().items():
        assert not is_wide(as_tensor(data)), name
        assert as_pillow_decodes(as_tensor(data)).numpy().tobytes() == data, name  # untouched


def test_a_wide_file_becomes_what_pil_loader_gives(tmp_path):
    for name, data in _wide_files(tmp_path).items():
        expected = np.asarray(Image.open(io.BytesIO(data)).convert("RGB"))  # torchvision's pil_loader
        got = decode_image(as_pillow_decodes(as_tensor(data)), mode="rgb")  # Tensor[3, H, W] uint8
        assert np.array_equal(got.permute(1, 2, 0).numpy(), expected), name
    grey = decode_image(as_pillow_decodes(as_tensor(_wide_files(tmp_path)["grey16.png"])), mode="rgb")
    assert grey[0].flatten().tolist() == np.minimum(GREY16, 255).flatten().tolist()  # Pillow clamps, no high byte


@pytest.mark.filterwarnings("ignore:Corrupt EXIF data")  # Pillow's, on the cut TIFF
@pytest.mark.parametrize("cut", [8, 10, 30, 60])
def test_a_truncated_file_is_left_to_the_decoder(tmp_path, cut):
    for name in ("grey16.tif", "grey16.png", "grey16.pgm"):
        data = _wide_files(tmp_path)[name][:cut]
        out = as_pillow_decodes(as_tensor(data))  # no exception here: the native decoder names the sample
        assert out.numpy().tobytes() == data, name
