"""decode_images(augment=...).data: the Pillow colour rows (``pil_enhance``, ``pil_hue``, ``pil_autocontrast``)
against Pillow itself on the same image, ``pil_affine_low`` (a double AFFINE matrix as float32 parts) against
Pillow's ``Image.transform`` with that double matrix, and their argument checks.

The images are PNGs decoded at their own size with ``interpolation="nearest"`` (an identity resample), so the
op's input is exactly the PIL image Pillow gets. Agreement: identical values (these rows follow Pillow's own
integer and float arithmetic, step for step).
"""

import math
import random

import numpy as np
import pytest
import torch
from PIL import Image, ImageEnhance, ImageOps

import spdl_torch
from spdl_torch.transforms import _augment_codes as codes
from spdl_torch.transforms._pil_rows import split_double

from tests._utils import images
from tests._utils.augment import program_rows

def _run(img: torch.Tensor, augment: torch.Tensor) -> torch.Tensor:
    h, w = img.shape[-2:]
    return spdl_torch.io.decode_images([images.png_tensor(img)], height=h, width=w, geometry="resize",
                                       interpolation="nearest", augment=augment).data[0]


ENHANCERS = (ImageEnhance.Brightness, ImageEnhance.Color, ImageEnhance.Contrast, ImageEnhance.Sharpness)
SIZES = [(1, 1), (2, 9), (9, 2), (3, 3), (37, 53)]


def _pil(img: torch.Tensor) -> Image.Image:
    return Image.fromarray(np.ascontiguousarray(img.permute(1, 2, 0).numpy()), "RGB")


def _tensor(pil: Image.Image) -> torch.Tensor:
    return torch.from_numpy(np.array(pil.convert("RGB"))).permute(2, 0, 1)


def _pillow_hue(pil: Image.Image, shift: int) -> Image.Image:
    """torchvision's adjust_hue of a PIL image with the shift int(hue_factor * 255) as uint8."""
    h, s, v = pil.convert("HSV").split()
    h = Image.fromarray((np.array(h, dtype=np.uint8) + np.uint8(shift)).astype(np.uint8), "L")
    return Image.merge("HSV", (h, s, v)).convert("RGB")


def _batch(img: torch.Tensor, programs: list[list[tuple]]) -> torch.Tensor:
    """The native op on ``img`` once per program (one batch)."""
    k = max(len(p) for p in programs)
    prog = torch.zeros(len(programs), k, codes.AUGMENT_COLUMNS)
    for n, rows in enumerate(programs):
        prog[n, :len(rows)] = program_rows(*rows)[0]
    h, w = img.shape[1:]
    return spdl_torch.io.decode_images([images.png_tensor(img)] * len(programs), height=h, width=w, geometry="resize",
                                       interpolation="nearest", augment=prog).data


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_pil_enhance_equals_image_enhance(size):
    img = images.photo(*size, seed=11)
    factors = [0.0, 0.1, 0.5, 0.77, 1.0, 1.3, 1.9, 3.7, 12.0]
    cases = [(e, f) for e in range(4) for f in factors]
    got = _batch(img, [[(codes.code("pil_enhance"), e, f)] for e, f in cases])
    pil = _pil(img)
    for (e, f), out in zip(cases, got):
        want = _tensor(ENHANCERS[e](pil).enhance(float(np.float32(f))))
        assert torch.equal(out, want), (ENHANCERS[e].__name__, f, size)


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_pil_hue_equals_pillows_hsv_shift(size):
    img = images.photo(*size, seed=12)
    shifts = [0, 1, 25, 127, 128, 142, 229, 255]
    got = _batch(img, [[(codes.code("pil_hue"), s)] for s in shifts])
    for s, out in zip(shifts, got):
        assert torch.equal(out, _tensor(_pillow_hue(_pil(img), s))), (s, size)


def test_pil_hue_of_every_colour():
    # All 2^24 colours are too many for the fast tier: every 4096th, and every grey (no saturation to turn)
    v = np.concatenate([np.arange(0, 1 << 24, 4093), np.arange(256) * 0x010101]).astype(np.uint32)
    rgb = np.stack([(v >> 16) & 255, (v >> 8) & 255, v & 255], -1).astype(np.uint8)
    img = torch.from_numpy(rgb.reshape(1, -1, 3)).permute(2, 0, 1).contiguous()
    for s in (0, 142, 255):
        assert torch.equal(_run(img, program_rows((codes.code("pil_hue"), s))), _tensor(_pillow_hue(_pil(img), s))), s


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_pil_autocontrast_equals_image_ops(size):
    img = images.photo(*size, seed=13)
    low = (img.int() // 5 + 90).to(torch.uint8)  # squeezed into 90..141: stretched
    one_channel_flat = img.clone()
    one_channel_flat[1] = 77
    for x in (img, low, one_channel_flat):
        assert torch.equal(_run(x, program_rows((codes.code("pil_autocontrast"),))), _tensor(ImageOps.autocontrast(_pil(x))))


def test_pil_autocontrast_of_every_range():
    # Each (lo, hi) a channel can span, in one batch of 1 x 256 images (channel 0 spans lo..hi, channel 2 is flat)
    rng = random.Random(5)
    pairs = [(0, 255), (0, 1), (254, 255), (3, 3)] + [tuple(sorted(rng.sample(range(256), 2))) for _ in range(60)]
    imgs = []
    for lo, hi in pairs:
        vals = np.arange(256)
        a = np.stack([np.clip(vals, lo, hi), np.clip(255 - vals, lo, hi), np.full(256, lo)], -1).astype(np.uint8)
        imgs.append(torch.from_numpy(a[None]).permute(2, 0, 1).contiguous())
    prog = torch.zeros(len(imgs), 1, codes.AUGMENT_COLUMNS)
    prog[:, 0, 0] = codes.code("pil_autocontrast")
    got = spdl_torch.io.decode_images([images.png_tensor(x) for x in imgs], height=1, width=256, geometry="resize",
                                      interpolation="nearest", augment=prog).data
    for (lo, hi), x, out in zip(pairs, imgs, got):
        assert torch.equal(out, _tensor(ImageOps.autocontrast(_pil(x)))), (lo, hi)


def _double_matrices(rng: random.Random, h: int, w: int) -> list[list[float]]:
    """Pillow AFFINE data whose coefficients no float32 holds: rotations about the centre or another point
    (Image.rotate's arithmetic), shears and scales by irrational factors."""
    out = []
    for _ in range(12):
        a = -math.radians(rng.uniform(-180, 180))
        cx, cy = rng.choice([(w / 2, h / 2), (rng.uniform(0, w), rng.uniform(0, h))])
        m = [round(math.cos(a), 15), round(math.sin(a), 15), 0.0, round(-math.sin(a), 15), round(math.cos(a), 15), 0.0]
        m[2], m[5] = m[0] * -cx + m[1] * -cy + cx, m[3] * -cx + m[4] * -cy + cy
        out.append(m)
    out.append([1.0, math.tan(0.3), -1.0 / 3.0, 0.0, 1.0, 0.0])
    out.append([1 / 1.1, 0.0, w * (1 - 1 / 1.1) / 2, 0.0, 1 / 1.1, h * (1 - 1 / 1.1) / 2])
    return out


@pytest.mark.parametrize("size", [(1, 7), (17, 17), (37, 53)], ids=lambda s: f"{s[0]}x{s[1]}")
def test_pil_affine_low_carries_the_double_matrix(size):
    # fill + pil_affine_low (mid) + pil_affine_low (lo) + pil_affine (hi): Pillow's transform with the double
    # matrix itself, for each filter; the parts are float32 and sum to the double exactly
    rng = random.Random(size[0] * 7 + size[1])
    img = images.photo(*size, seed=14)
    cases, programs = [], []
    for m in _double_matrices(rng, *size):
        parts = [split_double(v) for v in m]
        assert all(hi + (mid + lo) == v for v, (hi, mid, lo) in zip(m, parts))
        assert all(float(np.float32(x)) == x for p in parts for x in p)
        for resample in range(3):
            fill = (rng.randrange(256), rng.randrange(256), rng.randrange(256))
            cases.append((m, resample, fill))
            programs.append([(codes.code("fill"), *fill), (codes.code("pil_affine_low"), *(p[1] for p in parts)),
                             (codes.code("pil_affine_low"), *(p[2] for p in parts)),
                             (codes.code("pil_affine"), *(p[0] for p in parts), resample)])
    got = _batch(img, programs)
    filters = (Image.Resampling.NEAREST, Image.Resampling.BILINEAR, Image.Resampling.BICUBIC)
    pil = _pil(img)
    for (m, resample, fill), out in zip(cases, got):
        want = _tensor(pil.transform(pil.size, Image.Transform.AFFINE, m, resample=filters[resample], fillcolor=fill))
        assert torch.equal(out, want), (m, resample, size)


def test_split_double_is_exact():
    rng = random.Random(3)
    values = [0.0, -0.0, 1.0, 0.5, 12.5, math.pi, -1e-17, 6.123233995736766e-17, 2.0 ** -90, 3e38]
    values += [rng.choice((-1, 1)) * rng.uniform(1, 2) * 2.0 ** rng.randint(-90, 100) for _ in range(2000)]
    for v in values:
        hi, mid, lo = split_double(v)
        assert hi + (mid + lo) == v and all(float(np.float32(x)) == x for x in (hi, mid, lo)), v


@pytest.mark.parametrize("row, match", [
    ([codes.code("pil_affine_low"), 0, 0, math.inf, 0, 0, 0], r"augment\[0, 0\]: pil_affine_low data\[2\]: expected a finite number, got inf"),
    ([codes.code("pil_enhance"), 4, 1.0], r"augment\[0, 0\]: pil_enhance enhancer: expected 0 \(Brightness\), 1 \(Color\), 2 \(Contrast\) or 3 \(Sharpness\), got 4"),
    ([codes.code("pil_enhance"), 1, -0.5], r"augment\[0, 0\]: pil_enhance factor: expected a finite number >= 0, got -0.5"),
    ([codes.code("pil_enhance"), 2, math.nan], r"augment\[0, 0\]: pil_enhance factor: expected a finite number >= 0, got nan"),
    ([codes.code("pil_hue"), 256], r"augment\[0, 0\]: pil_hue shift: expected an integer in \[0, 255\], got 256"),
    ([codes.code("pil_hue"), 3.5], r"augment\[0, 0\]: pil_hue shift: expected an integer in \[0, 255\], got 3.5"),
    ([24], r"augment\[0, 0\]: augment code 24 not supported \(expected an integer 0..23\)"),
])
def test_bad_pil_rows_raise_value_error_naming_the_row(row, match):
    prog = torch.zeros(1, 1, codes.AUGMENT_COLUMNS)
    prog[0, 0, :len(row)] = torch.tensor([float(v) for v in row])
    with pytest.raises(ValueError, match=match):
        spdl_torch.io.decode_images([images.png_tensor(images.photo(4, 4))], height=4, width=4, augment=prog)
