"""decode_images(augment=..., erase=...).data: each native op against torchvision.transforms.v2.functional on the
same uint8 image, the erase rows against v2.functional.erase, the codes table against the C++ one, and the
argument checks.

The images are PNGs (lossless) decoded at their own size with ``interpolation="nearest"`` (an identity
resample), so the op's input is exactly the tensor torchvision gets. Agreement: max abs difference <= 1
level, or PSNR >= 40 dB where a 1-ulp float difference can move a pixel across a rounding boundary and
the kernels then pick another source pixel (nearest affine) or a neighbouring level.
"""

import math
import random
import re
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image
from torchvision.transforms import InterpolationMode
from torchvision.transforms.v2 import functional as F

import spdl_torch
from spdl_torch.transforms import _augment_codes as codes

from tests._utils import images
from tests._utils.augment import program_rows
from tests._utils.images import IMAGENET_MEAN, IMAGENET_STD

_REPO = Path(__file__).resolve().parents[2]


def _run(img: torch.Tensor, augment: torch.Tensor | None, **kwargs) -> torch.Tensor:
    h, w = img.shape[-2:]
    return spdl_torch.io.decode_images([images.png_tensor(img)], height=h, width=w, geometry="resize", interpolation="nearest",
                                       augment=augment, **kwargs).data[0]


def _assert_close(got: torch.Tensor, want: torch.Tensor, what: str) -> None:
    assert got.shape == want.shape and got.dtype == want.dtype == torch.uint8, what
    diff = (got.int() - want.int()).abs()
    if int(diff.max()) <= 1:
        return
    mse = float((diff.double() ** 2).mean())
    psnr = 10 * math.log10(255.0**2 / mse)
    assert psnr >= 40.0, f"{what}: max diff {int(diff.max())}, PSNR {psnr:.1f} dB"


SIZES = [(1, 1), (1, 9), (9, 1), (2, 3), (37, 53), (64, 64)]

# (code, args, reference on a uint8 [3, H, W] tensor)
COLOR_CASES = [
    (codes.code("adjust_brightness"), [0.0], lambda x: F.adjust_brightness(x, 0.0)),
    (codes.code("adjust_brightness"), [0.37], lambda x: F.adjust_brightness(x, 0.37)),
    (codes.code("adjust_brightness"), [1.9], lambda x: F.adjust_brightness(x, 1.9)),
    (codes.code("adjust_contrast"), [0.1], lambda x: F.adjust_contrast(x, 0.1)),
    (codes.code("adjust_contrast"), [1.55], lambda x: F.adjust_contrast(x, 1.55)),
    (codes.code("adjust_saturation"), [0.0], lambda x: F.adjust_saturation(x, 0.0)),
    (codes.code("adjust_saturation"), [0.6], lambda x: F.adjust_saturation(x, 0.6)),
    (codes.code("adjust_saturation"), [1.8], lambda x: F.adjust_saturation(x, 1.8)),
    (codes.code("adjust_hue"), [-0.5], lambda x: F.adjust_hue(x, -0.5)),
    (codes.code("adjust_hue"), [-0.12], lambda x: F.adjust_hue(x, -0.12)),
    (codes.code("adjust_hue"), [0.0], lambda x: F.adjust_hue(x, 0.0)),
    (codes.code("adjust_hue"), [0.33], lambda x: F.adjust_hue(x, 0.33)),
    (codes.code("posterize"), [0], lambda x: F.posterize(x, 0)),
    (codes.code("posterize"), [3], lambda x: F.posterize(x, 3)),
    (codes.code("posterize"), [8], lambda x: F.posterize(x, 8)),
    (codes.code("solarize"), [0.0], lambda x: F.solarize(x, 0.0)),
    (codes.code("solarize"), [127.5], lambda x: F.solarize(x, 127.5)),
    (codes.code("solarize"), [255.0], lambda x: F.solarize(x, 255.0)),
    (codes.code("invert"), [], F.invert),
    (codes.code("rgb_to_grayscale"), [], lambda x: F.rgb_to_grayscale(x, num_output_channels=3)),
    (codes.code("autocontrast"), [], F.autocontrast),
    (codes.code("equalize"), [], F.equalize),
    (codes.code("adjust_sharpness"), [0.0], lambda x: F.adjust_sharpness(x, 0.0)),
    (codes.code("adjust_sharpness"), [0.5], lambda x: F.adjust_sharpness(x, 0.5)),
    (codes.code("adjust_sharpness"), [2.7], lambda x: F.adjust_sharpness(x, 2.7)),
]


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize("case", COLOR_CASES, ids=lambda c: f"code{c[0]}-{c[1]}")
def test_point_and_histogram_ops_match_torchvision(case, size):
    code, args, reference = case
    img = images.photo(*size)
    _assert_close(_run(img, program_rows((code, *args))), reference(img), f"code {code} {args} on {size}")


def test_equalize_and_autocontrast_on_low_contrast_image():
    # Values squeezed into 90..140: both ops stretch them; equalize's LUT rule is PIL's.
    img = (images.photo(40, 30).int() // 5 + 90).to(torch.uint8)
    for code, reference in ((codes.code("equalize"), F.equalize), (codes.code("autocontrast"), F.autocontrast)):
        got = _run(img, program_rows((code,)))
        assert torch.equal(got, reference(img)), code


AFFINE_CASES = [
    # angle, translate, shear
    (0.0, (0, 0), (0, 0)),
    (90.0, (0, 0), (0, 0)),
    (180.0, (0, 0), (0, 0)),
    (-90.0, (0, 0), (0, 0)),
    (30.0, (0, 0), (0, 0)),
    (-17.5, (3.0, -2.0), (0, 0)),
    (0.0, (5.0, 0.0), (0, 0)),
    (0.0, (0.0, -7.0), (0, 0)),
    (0.0, (0, 0), (20.0, 0.0)),
    (0.0, (0, 0), (0.0, -16.0)),
    (12.0, (1.5, 2.25), (8.0, -5.0)),
]


@pytest.mark.parametrize("size", [(1, 1), (1, 9), (9, 1), (31, 31), (37, 52)], ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize("interp", [0, 1], ids=["nearest", "bilinear"])
@pytest.mark.parametrize("fill", [None, 0.0, 128.0, 255.0], ids=lambda f: f"fill{f}")
@pytest.mark.parametrize("case", AFFINE_CASES, ids=lambda c: f"a{c[0]}-t{c[1]}-s{c[2]}")
def test_affine_matches_torchvision(case, fill, interp, size):
    angle, translate, shear = case
    img = images.photo(*size, seed=3)
    a6 = codes.NO_FILL if fill is None else fill
    got = _run(img, program_rows((codes.code("affine"), angle, *translate, *shear, interp, a6)))
    mode = InterpolationMode.BILINEAR if interp else InterpolationMode.NEAREST
    want = F.affine(img, angle=angle, translate=list(translate), scale=1.0, shear=list(shear), interpolation=mode,
                    fill=fill)
    if interp == 0 and angle % 180 == 90 and (size[0] - size[1]) % 2 and translate == (0, 0) and shear == (0, 0):
        # A quarter turn of an odd-by-even image about its centre puts every source coordinate on a .5 tie.
        # Which neighbour torchvision takes then rests on float32 rounding in its grid (it differs between CPUs:
        # AVX-512 and AVX2 machines give different pictures); ours is round half to even on exact coordinates.
        # Each pixel must be one of the tie's candidates: torchvision's answers with the ties broken either way.
        candidates = [F.affine(img, angle=angle, translate=[dx, dy], scale=1.0, shear=[0.0, 0.0],
                               interpolation=mode, fill=fill) for dx in (-1e-3, 1e-3) for dy in (-1e-3, 1e-3)]
        hit = torch.zeros(size, dtype=torch.bool)
        for c in candidates:
            hit |= (got == c).all(dim=0)
        assert bool(hit.all()), f"affine {case} fill={fill} {size}: {int((~hit).sum())} pixels are no tie candidate"
        return
    _assert_close(got, want, f"affine {case} fill={fill} interp={interp} {size}")


@pytest.mark.parametrize("angle", [90.0, 180.0, 270.0])
def test_rotation_by_right_angles_is_exact(angle):
    img = images.photo(33, 33, seed=5)  # square: 90 / 270 stay inside
    got = _run(img, program_rows((codes.code("affine"), -angle, 0, 0, 0, 0, 0, 0)))  # rotate(angle) == affine(-angle)
    assert torch.equal(got, torch.rot90(img, k=int(angle) // 90, dims=(-2, -1)))
    assert torch.equal(got, F.rotate(img, angle))


@pytest.mark.parametrize("size", [(1, 1), (2, 7), (7, 2), (37, 53)], ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize("kernel, sigma", [((3, 3), (1.0, 1.0)), ((5, 1), (1.5, 0.5)), ((1, 9), (0.3, 3.0)),
                                           ((23, 23), (3.5, 3.5))])
def test_gaussian_blur_matches_torchvision(kernel, sigma, size):
    img = images.photo(*size, seed=7)
    got = _run(img, program_rows((codes.code("gaussian_blur"), *kernel, *sigma)))
    if kernel[0] // 2 >= size[1] or kernel[1] // 2 >= size[0]:
        # torch's reflect padding refuses a pad as large as the side; the kernel folds the reflection again.
        # Reference: the same folded indices, gathered by hand.
        def fold(n, r):
            i = np.arange(-r, n + r)
            period = max(2 * (n - 1), 1)
            i = np.mod(i, period)
            return torch.from_numpy(np.where(i < n, i, period - i) if n > 1 else np.zeros_like(i))
        padded = img[:, fold(size[0], kernel[1] // 2)][:, :, fold(size[1], kernel[0] // 2)]
        want = F.gaussian_blur(padded, list(kernel), list(sigma))
        want = want[:, kernel[1] // 2:kernel[1] // 2 + size[0], kernel[0] // 2:kernel[0] // 2 + size[1]]
        if min(padded.shape[-2:]) > max(kernel) // 2:
            _assert_close(got, want.contiguous(), f"blur {kernel} {sigma} {size} (folded)")
        return
    _assert_close(got, F.gaussian_blur(img, list(kernel), list(sigma)), f"blur {kernel} {sigma} {size}")


def _pillow_affine(img: torch.Tensor, data, resample: int, fill) -> torch.Tensor:
    pil = Image.fromarray(np.ascontiguousarray(img.permute(1, 2, 0).numpy()), "RGB")
    out = pil.transform(pil.size, Image.Transform.AFFINE, [float(v) for v in data],
                        resample=(Image.Resampling.NEAREST, Image.Resampling.BILINEAR, Image.Resampling.BICUBIC)[resample],
                        fillcolor=tuple(fill))
    return torch.from_numpy(np.array(out)).permute(2, 0, 1)


def _random_matrix(rng: random.Random, h: int, w: int) -> list[float]:
    """Pillow AFFINE data of timm's kinds (shear, translate, rotate about the centre) and arbitrary ones,
    as float32 values (the row's)."""
    kind = rng.randrange(5)
    f = rng.uniform(-0.3, 0.3)
    if kind == 0:
        m = [1.0, f, 0.0, 0.0, 1.0, 0.0] if rng.random() < 0.5 else [1.0, 0.0, 0.0, f, 1.0, 0.0]
    elif kind == 1:
        m = [1.0, 0.0, f * 1.5 * w, 0.0, 1.0, 0.0] if rng.random() < 0.5 else [1.0, 0.0, 0.0, 0.0, 1.0, f * 1.5 * h]
    elif kind == 2:
        a = -math.radians(rng.choice([rng.uniform(-30, 30), 30.0, -30.0, 90.0, 180.0]))
        m = [round(math.cos(a), 15), round(math.sin(a), 15), 0.0, round(-math.sin(a), 15), round(math.cos(a), 15), 0.0]
        m[2], m[5] = m[0] * -w / 2 + m[1] * -h / 2 + w / 2, m[3] * -w / 2 + m[4] * -h / 2 + h / 2
    elif kind == 3:
        m = [1.0, 0.0, 0.0, 0.0, 1.0, 0.0]  # the identity (and its engines: scale for nearest)
    else:
        m = [rng.uniform(-2, 2) for _ in range(6)]
    return [float(np.float32(v)) for v in m]


@pytest.mark.parametrize("size", [(1, 1), (1, 9), (9, 1), (2, 3), (31, 31), (37, 53)], ids=lambda s: f"{s[0]}x{s[1]}")
def test_pil_affine_equals_pillow(size):
    # Random matrices of timm's kinds, the three filters and random fills, 60 samples of one batch: exact.
    rng = random.Random(size[0] * 100 + size[1])
    img = images.photo(*size, seed=9)
    n = 60
    prog = torch.zeros(n, 2, codes.AUGMENT_COLUMNS)
    wants = []
    for k in range(n):
        m, resample = _random_matrix(rng, *size), k % 3
        fill = [rng.randrange(256) for _ in range(3)] if k % 4 else [0, 0, 0]
        if k % 4:
            prog[k, 0, :4] = torch.tensor([codes.code("fill"), *fill])
        prog[k, 1, :8] = torch.tensor([codes.code("pil_affine"), *m, resample])
        wants.append(_pillow_affine(img, m, resample, fill))
    got = spdl_torch.io.decode_images([images.png_tensor(img)] * n, height=size[0], width=size[1], geometry="resize",
                                      interpolation="nearest", augment=prog).data
    for k in range(n):
        assert torch.equal(got[k], wants[k]), (k, prog[k].tolist())


def test_fill_is_per_sample_and_black_by_default():
    img = images.photo(12, 10, seed=4)
    shift = [codes.code("pil_affine"), 1, 0, 5, 0, 1, 0, 0]  # translate by 5 px: the right half is fill
    prog = torch.zeros(3, 3, codes.AUGMENT_COLUMNS)
    prog[0, 0, :4] = torch.tensor([codes.code("fill"), 10, 20, 30])
    prog[0, 1] = torch.tensor(shift)
    prog[0, 2, :4] = torch.tensor([codes.code("fill"), 200, 100, 50])  # after the last pil_affine: no effect
    prog[1, 0] = torch.tensor(shift)  # another sample: Pillow's default black, not sample 0's fill
    prog[2, 0, :4] = torch.tensor([codes.code("fill"), 1, 2, 3])
    prog[2, 1] = torch.tensor(shift)
    prog[2, 2, :4] = torch.tensor([codes.code("fill"), 7, 8, 9])
    got = spdl_torch.io.decode_images([images.png_tensor(img)] * 3, height=12, width=10, geometry="resize",
                                      interpolation="nearest", augment=prog).data
    for k, fill in enumerate([(10, 20, 30), (0, 0, 0), (1, 2, 3)]):
        assert torch.equal(got[k], _pillow_affine(img, shift[1:7], 0, fill)), k
        assert got[k][:, :, 5:].reshape(3, -1).unique(dim=1).flatten().tolist() == list(fill)


@pytest.mark.parametrize("size", [(1, 1), (1, 9), (37, 53)], ids=lambda s: f"{s[0]}x{s[1]}")
def test_solarize_add_equals_timms(size):
    img = images.photo(*size, seed=6)
    for add, threshold in [(0, 128), (30, 128), (110, 128), (128, 256), (255, 0), (17, 99.5), (255, 256)]:
        want = torch.tensor([min(255, v + add) if v < threshold else v for v in range(256)], dtype=torch.uint8)
        got = _run(img, program_rows((codes.code("solarize_add"), add, threshold)))
        assert torch.equal(got, want[img.long()]), (add, threshold)


def test_program_runs_in_order_and_before_the_grey_rule_and_normalisation():
    img = images.photo(29, 41, seed=11)
    program = program_rows((codes.code("affine"), 15.0, 2, 1, 0, 0, 1, 64), (codes.code("adjust_contrast"), 1.4), (codes.code("adjust_hue"), 0.2),
                       (codes.code("posterize"), 5), (codes.code("adjust_sharpness"), 1.8), (codes.code("equalize"),))
    want = F.affine(img, 15.0, [2.0, 1.0], 1.0, [0.0, 0.0], InterpolationMode.BILINEAR, fill=64.0)
    want = F.equalize(F.adjust_sharpness(F.posterize(F.adjust_hue(F.adjust_contrast(want, 1.4), 0.2), 5), 1.8))
    got = _run(img, program)
    _assert_close(got, want, "program")
    # Grey after the program (the slot's colour rule), float output normalised from the program's values.
    grey = _run(img, program, color="gray", num_output_channels=1)
    assert torch.equal(grey, F.rgb_to_grayscale(got))
    norm = _run(img, program, dtype=torch.float32, mean=[0.5, 0.4, 0.3], std=[0.2, 0.25, 0.3])
    want_norm = F.normalize(F.to_dtype(got, torch.float32, scale=True), [0.5, 0.4, 0.3], [0.2, 0.25, 0.3])
    torch.testing.assert_close(norm, want_norm, atol=1e-5, rtol=1e-5)


def test_no_op_programs_leave_the_batch_byte_identical(tmp_path):
    files = [images.encode_tensor(np.ascontiguousarray(images.photo(48 + 7 * i, 40 + 5 * i, seed=i).permute(1, 2, 0).numpy()), fmt)
             for i, fmt in enumerate(["PNG", "JPEG", "JPEG", "PNG"])]
    kw = dict(height=24, width=20, geometry="train", seeds=[5, 6, 7, 8], hflip_prob=0.5, dtype=torch.float32,
              mean=[0.5], std=[0.25])
    plain = spdl_torch.io.decode_images(files, **kw).data
    zeros = torch.zeros(4, 3, codes.AUGMENT_COLUMNS)
    assert torch.equal(spdl_torch.io.decode_images(files, augment=zeros, **kw).data, plain)
    off = torch.zeros(4, codes.ERASE_COLUMNS)
    assert torch.equal(spdl_torch.io.decode_images(files, erase=off, **kw).data, plain)
    # A program on sample 1 only: the others unchanged, sample 1 = the op on its plain uint8 crop.
    one = zeros.clone()
    one[1, 2, 0] = codes.code("invert")
    got = spdl_torch.io.decode_images(files, augment=one, **kw).data
    for i in (0, 2, 3):
        assert torch.equal(got[i], plain[i])
    u8 = spdl_torch.io.decode_images(files, **{**kw, "dtype": torch.uint8, "mean": None, "std": None}).data
    want1 = F.normalize(F.to_dtype(F.invert(u8[1]), torch.float32, scale=True), [0.5], [0.25])
    torch.testing.assert_close(got[1], want1, atol=1e-6, rtol=1e-6)


@pytest.mark.parametrize("dtype", [torch.uint8, torch.float32, torch.bfloat16])
@pytest.mark.parametrize("channels_last", [False, True])
def test_erase_value_is_exact(dtype, channels_last):
    files = [images.png_tensor(images.photo(30, 34, seed=i)) for i in range(3)]
    norm = {} if dtype == torch.uint8 else dict(mean=list(IMAGENET_MEAN), std=list(IMAGENET_STD))
    kw = dict(height=30, width=34, geometry="resize", dtype=dtype, dimension_order="NHWC" if channels_last else "NCHW",
              **norm)
    nchw = (lambda b: b.permute(0, 3, 1, 2)) if channels_last else (lambda b: b)
    plain = nchw(spdl_torch.io.decode_images(files, **kw).data)
    erase = torch.tensor([[1, 3, 4, 10, 12, 7.25, -1.5, 0.0],   # inside
                          [0, 0, 0, 30, 34, 9, 9, 9],            # off
                          [1, 25, 30, 20, 20, 200.9, 3.0, 0.5]])  # clipped at the corner, like a slice
    got = nchw(spdl_torch.io.decode_images(files, erase=erase, **kw).data)
    for i in range(3):
        a, top, left, h, w, *v = erase[i].tolist()
        want = plain[i]
        if a:
            value = torch.tensor(v).to(torch.float32)
            value = value.clamp(0, 255) if dtype == torch.uint8 else value
            want = F.erase(plain[i], int(top), int(left), int(h), int(w), value.to(dtype)[:, None, None])
        assert torch.equal(got[i], want), i


def test_erase_random_is_seeded_and_normal():
    files = [images.png_tensor(images.photo(64, 64, seed=i)) for i in range(2)]
    kw = dict(height=64, width=64, geometry="resize", dtype=torch.float32, mean=[0.5], std=[0.5])
    erase = torch.tensor([[2, 8, 4, 40, 50, 0, 0, 0]] * 2, dtype=torch.float32)
    plain = spdl_torch.io.decode_images(files, **kw).data
    a = spdl_torch.io.decode_images(files, erase=erase, seeds=[1, 2], **kw).data
    b = spdl_torch.io.decode_images(files, erase=erase, seeds=[1, 2], **kw).data
    c = spdl_torch.io.decode_images(files, erase=erase, seeds=[3, 2], **kw).data
    assert torch.equal(a, b)
    assert not torch.equal(a[0], c[0]) and torch.equal(a[1], c[1])
    box = a[:, :, 8:48, 4:54]
    assert abs(float(box.mean())) < 0.05 and abs(float(box.std()) - 1.0) < 0.05  # 12,000 values per sample
    outside = torch.ones(64, 64, dtype=torch.bool)
    outside[8:48, 4:54] = False
    assert torch.equal(a[:, :, outside], plain[:, :, outside])
    with pytest.raises(ValueError, match=r"seeds .* apply=2"):
        spdl_torch.io.decode_images(files, erase=erase, **kw)


def test_erase_boxes_are_written_in_order():
    # erase Tensor[N, B, 8]: B boxes per sample, each as F.erase on the result of the previous one; a random box
    # draws from its own stream (box 0's stream is the one of a Tensor[N, 8] row); apply 0 rows are padding.
    files = [images.png_tensor(images.photo(40, 44, seed=i)) for i in range(2)]
    kw = dict(height=40, width=44, geometry="resize", dtype=torch.float32, mean=[0.5], std=[0.5], seeds=[7, 8])
    plain = spdl_torch.io.decode_images(files, **kw).data
    boxes = torch.tensor([[[1, 2, 3, 20, 20, 1.5, -2.0, 0.25], [1, 10, 10, 20, 30, 9.0, 8.0, 7.0], [0] * 8],
                          [[2, 0, 0, 16, 16, 0, 0, 0], [2, 20, 20, 16, 16, 0, 0, 0], [1, 30, 40, 20, 20, 3, 3, 3]]])
    got = spdl_torch.io.decode_images(files, erase=boxes, **kw).data
    want0 = F.erase(plain[0], 2, 3, 20, 20, torch.tensor([1.5, -2.0, 0.25])[:, None, None])
    want0 = F.erase(want0, 10, 10, 20, 30, torch.tensor([9.0, 8.0, 7.0])[:, None, None])
    assert torch.equal(got[0], want0)
    one = spdl_torch.io.decode_images(files, erase=boxes[:, 0], **kw).data  # box 0 alone, as a 2-D erase
    assert torch.equal(got[1, :, :16, :16], one[1, :, :16, :16])
    second = got[1, :, 20:36, 20:36]
    assert not torch.equal(second, one[1, :, :16, :16])  # another stream than box 0's
    assert abs(float(second.mean())) < 0.15 and abs(float(second.std()) - 1.0) < 0.15  # 768 normal values
    assert torch.equal(got[1, :, 36:, 40:], torch.full((3, 4, 4), 3.0))  # the third box, clipped at the corner
    outside = torch.ones(40, 44, dtype=torch.bool)
    outside[:16, :16] = outside[20:36, 20:36] = outside[30:, 40:] = False
    assert torch.equal(got[1][:, outside], plain[1][:, outside])
    with pytest.raises(ValueError, match=r"erase\[1, 2\]: erase mode: expected 0 \(off\)"):
        bad = boxes.clone()
        bad[1, 2, 0] = 5
        spdl_torch.io.decode_images(files, erase=bad, **kw)
    with pytest.raises(ValueError, match=r"erase as a float32 tensor of shape \[2, K, 8\]"):
        spdl_torch.io.decode_images(files, erase=torch.zeros(3, 2, 8), **kw)


def test_op_table_is_complete_and_consistent():
    # The library's table: codes 0.. in order, one name each, every argument's columns within the row, each
    # argument's rule what the op checks (a value at each end of its range passes, one past it is refused).
    ops = list(codes.OPS.values())
    assert [op.code for op in ops] == list(range(len(ops))) and len(set(codes.OPS)) == len(ops)
    assert codes.OPS["identity"].code == 0 and codes.AUGMENT_COLUMNS == 8 and codes.ERASE_COLUMNS == 8
    assert all(sum(a.count for a in op.args) <= codes.AUGMENT_COLUMNS - 1 for op in ops)
    assert sum(a.count for a in codes.ERASE.args) == codes.ERASE_COLUMNS
    data = [images.png_tensor(images.photo(8, 8))]

    def inside(a):  # a value the rule accepts
        if a.low is None:
            return 0.0 if a.high is None else a.high - 1
        return a.low + 1 if a.low_open else a.low

    for op in ops:
        good = {a.name: (inside(a),) * a.count if a.count > 1 else inside(a) for a in op.args}
        row = torch.tensor([[codes.row(op.name, **good)]], dtype=torch.float32)
        if not op.name.startswith("mix_"):  # a mix row alone is refused for its nesting
            assert spdl_torch.io.decode_images(data, augment=row, height=8, width=8).ok.all(), op.name
        for k, a in enumerate(op.args):
            assert a.kind in ("real", "integer", "choice") and a.doc and a.rule, (op.name, a)
            assert a.kind != "choice" or (a.low, a.high) == (0, len(a.choices) - 1), (op.name, a)
            for outside in ([] if a.low is None else [a.low - 1]) + ([] if a.high is None else [a.high + 1]):
                if outside == a.none:
                    continue
                bad = row.clone()
                bad[0, 0, 1 + sum(b.count for b in op.args[:k])] = outside
                with pytest.raises(ValueError, match=rf"augment\[0, 0\]: {op.name} {a.name}(\[0\])?: expected "
                                                     rf"{re.escape(a.rule)}, got "):
                    spdl_torch.io.decode_images(data, augment=bad, height=8, width=8)


def test_rows_are_built_by_argument_name():
    assert codes.row("affine", angle=17, translate=(1, 2), shear=(3, 4)) == [1.0, 17.0, 1.0, 2.0, 3.0, 4.0, 0.0,
                                                                             codes.NO_FILL]
    assert codes.row("affine", angle=0, translate=(0, 0), shear=(0, 0), interpolation="bilinear", fill=None)[6:] == \
        [1.0, codes.NO_FILL]
    assert codes.row("mix_end") == [19.0, 1.0, 0, 0, 0, 0, 0, 0]
    assert codes.erase_row(mode="value", top=1, left=2, height=3, width=4, value=(5, 6, 7)) == \
        [codes.ERASE_VALUE, 1, 2, 3, 4, 5, 6, 7]
    with pytest.raises(KeyError, match="brightness"):
        codes.row("brightness", brightness_factor=1.0)
    with pytest.raises(TypeError, match=r"adjust_hue: unknown argument\(s\) \['factor'\]"):
        codes.row("adjust_hue", factor=0.1)
    with pytest.raises(TypeError, match="affine: missing argument 'shear'"):
        codes.row("affine", angle=1, translate=(0, 0))
    with pytest.raises(TypeError, match="affine: argument 'translate' takes 2 values, got 1"):
        codes.row("affine", angle=1, translate=0, shear=(0, 0))
    with pytest.raises(ValueError, match="pil_enhance: argument 'enhancer' has no choice 'Blur'"):
        codes.row("pil_enhance", enhancer="Blur", factor=1.0)


def test_decode_images_docstring_holds_the_op_table():
    # The row layout users read is decode_images' docstring; it is the table the library reports, as rows_doc
    # writes it, and names every op and argument.
    doc = spdl_torch.io.decode_images.__doc__
    assert codes.rows_doc() in doc
    for op in codes.OPS.values():
        assert f"``{op.name}``" in doc and all(f"``{a.name}``" in doc for a in op.args), op.name
    assert all(f"``{a.name}``" in doc for a in codes.ERASE.args)


def test_bad_programs_raise_value_error_naming_the_row():
    data = [images.png_tensor(images.photo(8, 8))] * 2
    kw = dict(height=8, width=8)
    decode = spdl_torch.io.decode_images
    with pytest.raises(ValueError, match=r"augment as a float32 tensor of shape \[2, K, 8\], got torch.float64"):
        decode(data, augment=torch.zeros(2, 1, 8, dtype=torch.float64), **kw)
    with pytest.raises(ValueError, match=r"augment as a float32 tensor of shape \[2, K, 8\].*\[2, 1, 7\]"):
        decode(data, augment=torch.zeros(2, 1, 7), **kw)
    with pytest.raises(ValueError, match=r"augment as a float32 tensor .* got list"):
        decode(data, augment=[[0.0] * 8], **kw)
    with pytest.raises(ValueError, match=r"erase as a float32 tensor of shape \[2, 8\]"):
        decode(data, erase=torch.zeros(1, 8), **kw)
    bad = torch.zeros(2, 3, 8)
    bad[1, 2, 0] = 24
    with pytest.raises(ValueError, match=r"augment\[1, 2\]: augment code 24 not supported"):
        decode(data, augment=bad, **kw)
    bad[1, 2, 0] = 2.5
    with pytest.raises(ValueError, match=r"augment code 2.5 not supported"):
        decode(data, augment=bad, **kw)
    for row, match in [([5, 0.7], r"adjust_hue hue_factor: expected a number in \[-0.5, 0.5\], got 0.7"),
                       ([7, 9], r"posterize bits: expected an integer in \[0, 8\], got 9"),
                       ([2, -1], r"adjust_brightness brightness_factor: expected a finite number >= 0, got -1"),
                       ([1, 0, 0, 0, 95, 0, 0, 0], r"affine shear\[0\]: expected a number in \(-90, 90\), got 95"),
                       ([1, 0, 0, 0, 0, 0, 3, 0], r"affine interpolation: expected 0 \(nearest\) or 1 \(bilinear\)"),
                       ([1, 0, 0, 0, 0, 0, 0, 300], r"affine fill: expected a number in \[0, 255\], or -1 for None"),
                       ([13, 2, 3, 1, 1], r"gaussian_blur kernel_size\[0\]: expected an odd integer in \[1, 1001\]"),
                       ([13, 3, 3, -1, 1], r"gaussian_blur sigma\[0\]: expected a finite number > 0, got -1"),
                       ([8, 300], r"solarize threshold: expected a finite number <= 255, got 300"),
                       ([14, 0, 256, 0], r"fill color\[1\]: expected an integer in \[0, 255\], got 256"),
                       ([14, 0.5, 0, 0], r"fill color\[0\]: expected an integer in \[0, 255\], got 0.5"),
                       ([15, 1, 0, 0, 0, 1, 0, 3], r"pil_affine resample: expected 0 \(NEAREST\), 1 \(BILINEAR\) or 2"),
                       ([15, 1, 0, math.nan, 0, 1, 0, 0], r"pil_affine data\[2\]: expected a finite number, got nan"),
                       ([16, 300, 128], r"solarize_add add: expected an integer in \[0, 255\], got 300"),
                       ([16, 2.5, 128], r"solarize_add add: expected an integer in \[0, 255\], got 2.5"),
                       ([16, 10, 257], r"solarize_add threshold: expected a number in \[0, 256\], got 257")]:
        prog = torch.zeros(2, 1, 8)
        prog[0, 0, :len(row)] = torch.tensor(row, dtype=torch.float32)
        with pytest.raises(ValueError, match=rf"augment\[0, 0\]: {match}"):
            decode(data, augment=prog, **kw)
    erase = torch.zeros(2, 8)
    erase[0] = torch.tensor([1, -2, 0, 1, 1, 0, 0, 0])
    with pytest.raises(ValueError, match=r"erase\[0\]: erase top: expected an integer in \[0, 16777216\], got -2"):
        decode(data, erase=erase, **kw)
    erase[0] = torch.tensor([4, 0, 0, 1, 1, 0, 0, 0])
    with pytest.raises(ValueError, match=r"erase\[0\]: erase mode: expected 0 \(off\), 1 \(value\) or 2 \(random\)"):
        decode(data, erase=erase, **kw)
    with pytest.raises(ValueError, match=r"does not support augment"):
        decode(data, augment=torch.zeros(2, 1, 8), device="cuda", **kw)


# ------------------------------------------------------------------------------------------------- mix rows

MIX_CHAINS = [
    [(codes.code("affine"), 12.0, 1.5, -2.0, 5.0, 0.0, 1, codes.NO_FILL), (codes.code("posterize"), 3)],
    [(codes.code("adjust_sharpness"), 1.9), (codes.code("equalize"),), (codes.code("adjust_contrast"), 0.6)],
    [(codes.code("solarize"), 140.0)],
    [(codes.code("affine"), 0.0, 0, 0, -14.0, 0, 0, 17.0), (codes.code("adjust_saturation"), 1.7), (codes.code("autocontrast"),)],
]
MIX_WEIGHTS = [0.31, 0.17, 0.22, 0.09, 0.21]  # w0, then one per chain


def _mix_rows(chains, weights, end):
    rows = [(codes.code("mix_begin"), weights[0])]
    for chain, w in zip(chains, weights[1:]):
        rows += [*chain, (codes.code("mix_add"), w)]
    return [*rows, end]


def _torchvision_mix(img, chains, weights):
    """torchvision's AugMix.forward mix of the chains (F ops), weights as float32 tensors."""
    from tests._utils.augment import apply_row

    mix = torch.tensor([weights[0]], dtype=torch.float32).view(1, 1, 1) * img
    for chain, w in zip(chains, weights[1:]):
        aug = img
        for row in chain:
            aug = apply_row(aug, program_rows(row)[0, 0])  # the arguments as the row holds them (float32)
        mix.add_(torch.tensor([w], dtype=torch.float32).view(1, 1, 1) * aug)
    return mix.to(torch.uint8)


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize("width", [1, 2, 3, 4])
def test_mix_rows_equal_torchvision_augmix_mix(size, width):
    # The mix of fixed chains with fixed weights: the native rows against torchvision's own arithmetic
    # (float32 w * image products, add_, .to(uint8)). Measured equal in every value: the chains' ops are exact
    # on these images and the mix repeats torch's float32 operations. One level is allowed for a chain op's
    # own rounding (e.g. a bilinear affine's weight one ulp off, documented above), over at most 0.1% of values.
    img = images.photo(*size, seed=4)
    chains, weights = MIX_CHAINS[:width], MIX_WEIGHTS[:width + 1]
    got = _run(img, program_rows(*_mix_rows(chains, weights, (codes.code("mix_end"), 1))))
    want = _torchvision_mix(img, chains, weights)
    diff = (got.int() - want.int()).abs()
    assert int(diff.max()) <= 1 and int((diff > 0).sum()) <= max(1, diff.numel() // 1000), (int(diff.max()), int((diff > 0).sum()))
    if size[0] * size[1] > 9:  # the chains matter: without the last chain the result differs (on 1x1 images
        # an affine chain can leave nothing but the zero padding, which adds 0)
        assert not torch.equal(got, _torchvision_mix(img, chains[:-1], weights[:-1]))


def _timm_apply_basic(img, chains, weights, m):
    """timm's AugMixAugment._apply_basic with fixed float32 weights and chains: float32 accumulation, clip,
    astype(uint8), Image.blend(img, mixed, m)."""
    from PIL import Image

    from tests._utils.augment import apply_row

    hwc = lambda x: np.ascontiguousarray(x.permute(1, 2, 0).numpy())  # noqa: E731
    mixed = np.zeros(hwc(img).shape, dtype=np.float32)
    for chain, w in zip(chains, weights):
        aug = img
        for row in chain:
            aug = apply_row(aug, program_rows(row)[0, 0])  # the arguments as the row holds them (float32)
        mixed += np.float32(w) * np.asarray(hwc(aug), dtype=np.float32)
    np.clip(mixed, 0, 255.0, out=mixed)
    out = Image.blend(Image.fromarray(hwc(img)), Image.fromarray(mixed.astype(np.uint8)), float(np.float32(m)))
    return torch.from_numpy(np.asarray(out).copy()).permute(2, 0, 1)


@pytest.mark.parametrize("size", [(1, 1), (1, 9), (9, 1), (37, 53)], ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize("m", [0.0, 0.37, 0.8125, 1.0])
def test_mix_end_alpha_equals_timm_blend(size, m):
    # mix_end with alpha m: timm's blend of the source and the mix; alpha 1 is the mix itself (torchvision's).
    img = images.photo(*size, seed=6)
    chains = [[(codes.code("invert"),)], [(codes.code("posterize"), 2), (codes.code("adjust_brightness"), 1.3)], [(codes.code("solarize"), 99.0)]]
    weights = [0.45, 0.35, 0.2]  # timm: a Dirichlet over the chains, the image's own weight 0
    prog = program_rows(*_mix_rows(chains, [0.0, *weights], (codes.code("mix_end"), m)))
    got = _run(img, prog)
    assert torch.equal(got, _timm_apply_basic(img, chains, weights, m))
    if 0 < m < 1:  # the blend is neither end
        mixed = _run(img, program_rows(*_mix_rows(chains, [0.0, *weights], (codes.code("mix_end"), 1))))
        assert not torch.equal(got, img) and not torch.equal(got, mixed)


def test_mix_rows_nest_or_raise_naming_the_row():
    data = [images.png_tensor(images.photo(6, 5, seed=i)) for i in range(2)]
    decode = spdl_torch.io.decode_images
    kw = dict(height=6, width=5, geometry="resize", interpolation="nearest")
    begin, add, end, inv = [codes.code("mix_begin"), 0.5], [codes.code("mix_add"), 0.5], [codes.code("mix_end"), 1], [codes.code("invert")]
    cases = [
        ([inv, add, end], r"augment\[1, 1\]: mix_add without a mix_begin"),
        ([end], r"augment\[1, 0\]: mix_end without a mix_begin"),
        ([begin, begin, add, end], r"augment\[1, 1\]: mix_begin inside the mix begun at row 0"),
        ([begin, inv, add], r"augment\[1, 0\]: mix_begin without a mix_end"),
        ([begin, [codes.code("mix_add"), -0.5], end], r"augment\[1, 1\]: mix_add weight: expected a finite number >= 0"),
        ([begin, add, [codes.code("mix_end"), 1.5]], r"augment\[1, 2\]: mix_end alpha: expected a number in \[0, 1\]"),
    ]
    for rows, match in cases:
        prog = torch.zeros(2, 4, 8)
        prog[0, :3] = program_rows(begin, inv, add)[0]
        prog[0, 3] = program_rows(end)[0, 0]  # sample 0 is a valid mix: only sample 1's rows are at fault
        prog[1, :len(rows)] = program_rows(*rows)[0]
        with pytest.raises(ValueError, match=match):
            decode(data, augment=prog, **kw)
    # one chain, inverted, at weight 1 and the source at 0: the inverted image; padding rows inside the mix
    prog = program_rows([codes.code("mix_begin"), 0.0], inv, [codes.code("identity")], [codes.code("mix_add"), 1.0], end)
    img = images.photo(6, 5, seed=0)
    assert torch.equal(decode([images.png_tensor(img)], augment=prog, **kw).data[0], F.invert(img))


def test_opcheck_with_programs():
    data = [images.png_tensor(images.photo(12, 10, seed=i)) for i in range(2)]
    prog = torch.zeros(2, 2, 8)
    prog[0, 0, :8] = torch.tensor([1, 20, 1, 0, 0, 0, 1, 0])
    prog[1, 1, :2] = torch.tensor([3, 1.5])
    erase = torch.tensor([[1, 1, 1, 3, 3, 0.5, 0.5, 0.5], [2, 0, 0, 4, 4, 0, 0, 0]])
    kwargs = dict(height=8, width=6, geometry="resize", seeds=torch.tensor([1, 2]), dtype=torch.float32,
                  augment=prog, erase=erase)
    torch.library.opcheck(torch.ops.spdl_torch.decode_images.default, (data,), kwargs)
