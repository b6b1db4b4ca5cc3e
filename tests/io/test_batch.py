"""decode_images (the fused batch op) against torchvision v2 functional transforms: crop boxes, pixels
(PSNR), determinism over thread counts, errors, dtypes/layouts, opcheck and torch.compile."""

import io
import math
import types
from pathlib import Path

import numpy as np
import pytest
import torch
import torchvision.transforms.v2.functional as F
from PIL import Image
from torchvision.transforms import v2
from torchvision.transforms.v2 import _geometry

from spdl_torch import DecodeError
from spdl_torch.io import decode_image, decode_images, get_num_threads, set_num_threads

from tests._utils import images
from tests._utils.images import train_box
from tests._utils.images import IMAGENET_MEAN, IMAGENET_STD

REPO = Path(__file__).resolve().parents[2]
PHOTOS = sorted((REPO / "data" / "imagenet_like" / "train").glob("*/*.JPEG"))
needs_photos = pytest.mark.skipif(not PHOTOS, reason="data/imagenet_like is absent (make demo prepares it)")
MIN_PSNR = 40.0


def psnr(a: torch.Tensor, b: torch.Tensor) -> float:
    mse = (a.double() - b.double()).pow(2).mean().item()
    return math.inf if mse == 0 else 10 * math.log10(255.0**2 / mse)


def encode(array: np.ndarray, fmt: str = "PNG", quality: int = 95) -> torch.Tensor:
    return images.encode_tensor(array, fmt, **({"quality": quality} if fmt == "JPEG" else {}))


def smooth_image(h: int, w: int, seed: int) -> np.ndarray:
    """A natural-looking synthetic RGB image: upsampled noise (smooth) plus gradients."""
    img = images.upsampled_noise(h, w, seed, cell=16).astype(np.int32)
    img += (np.arange(w)[None, :, None] * 64 // max(w, 1)).astype(np.int32)
    return np.clip(img, 0, 255).astype(np.uint8)


def eval_reference(img: torch.Tensor, size: int, crop: tuple[int, int], interp="bilinear") -> torch.Tensor:
    mode = F.InterpolationMode.BICUBIC if interp == "bicubic" else F.InterpolationMode.BILINEAR
    return F.center_crop(F.resize(img, size, interpolation=mode, antialias=True), list(crop))


# --- the crop-box rule ---------------------------------------------------------------------------


class _SplitMix64:
    def __init__(self, seed: int):
        self.state = seed & (2**64 - 1)

    def next(self) -> int:
        self.state = (self.state + 0x9E3779B97F4A7C15) & (2**64 - 1)
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & (2**64 - 1)
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & (2**64 - 1)
        return z ^ (z >> 31)

    def uniform(self) -> float:
        return (self.next() >> 11) * 2.0**-53


def _torchvision_box(seed: int, height: int, width: int, scale, ratio):
    """torchvision's RandomResizedCrop.make_params, fed with our generator's draws (double precision)."""
    rng = _SplitMix64(seed)

    class _Uniform:
        def uniform_(self, lo, hi):
            lo, hi = float(lo), float(hi)
            return torch.tensor([lo + (hi - lo) * rng.uniform()], dtype=torch.float64)

    def randint(low, high, size):
        return torch.tensor([low + min(int(rng.uniform() * (high - low)), high - low - 1)])

    shim = types.SimpleNamespace(**{k: getattr(torch, k) for k in ("exp", "log", "tensor")})
    shim.empty = lambda *a, **k: _Uniform()
    shim.randint = randint
    t = v2.RandomResizedCrop(8, scale=scale, ratio=ratio)
    t._log_ratio = torch.log(torch.tensor(t.ratio, dtype=torch.float64))
    real = _geometry.torch
    _geometry.torch = shim
    try:
        p = t.make_params([torch.empty(3, height, width)])
    finally:
        _geometry.torch = real
    return p["top"], p["left"], p["height"], p["width"]


@pytest.mark.parametrize("size", [(375, 500), (500, 333), (64, 64), (20, 900), (900, 20)])
@pytest.mark.parametrize("scale,ratio", [((0.08, 1.0), (3 / 4, 4 / 3)), ((0.5, 1.0), (0.5, 2.0)), ((0.95, 1.0), (1.0, 1.0))])
def test_crop_box_equals_torchvision_given_same_draws(size, scale, ratio):
    h, w = size
    for seed in range(200):
        ours = train_box(seed * 1_000_003, h, w, scale=scale, ratio=ratio)[:4]
        assert ours == _torchvision_box(seed * 1_000_003, h, w, scale, ratio), (seed, size)


def test_crop_box_rule_bounds_and_fallback():
    for seed in range(500):
        top, left, h, w, _ = train_box(seed, 300, 400)
        assert 0 <= top and top + h <= 300 and 0 <= left and left + w <= 400 and h > 0 and w > 0
    # No attempt can fit a 0.9..1 area crop with ratio 1 into a 10 x 1000 strip: central fallback,
    # the whole height and round(10 * max_ratio) wide.
    assert train_box(7, 10, 1000, scale=(0.9, 1.0), ratio=(1.0, 1.0))[:4] == (0, 495, 10, 10)
    assert train_box(7, 1000, 10, scale=(0.9, 1.0), ratio=(1.0, 1.0))[:4] == (495, 0, 10, 10)
    # ratio range containing the image's: the whole image.
    assert train_box(3, 10, 1000, scale=(0.9, 1.0), ratio=(0.01, 200.0))[:4] == (0, 0, 10, 1000)


def test_flip_probability_and_dependence_on_seed_only():
    flips = [train_box(s, 100, 100, hflip_prob=0.3)[4] for s in range(4000)]
    assert 0.27 < sum(flips) / len(flips) < 0.33
    assert not any(train_box(s, 100, 100, hflip_prob=0.0)[4] for s in range(100))
    assert all(train_box(s, 100, 100, hflip_prob=1.0)[4] for s in range(100))
    assert train_box(5, 100, 120) == train_box(5, 100, 120)


# --- pixels against torchvision --------------------------------------------------------------------


@needs_photos
@pytest.mark.slow  # every 8th photo of the set, twice (test_eval_synthetic_lossless is the fast check)
@pytest.mark.parametrize("interp", ["bilinear", "bicubic"])
def test_eval_psnr_real_photos(interp):
    paths = PHOTOS[::8]
    out = decode_images(paths, height=224, width=224, resize_shorter=256, interpolation=interp).data
    worst = min(psnr(eval_reference(decode_image(p), 256, (224, 224), interp), o) for p, o in zip(paths, out))
    assert worst >= MIN_PSNR, f"worst PSNR {worst:.1f} dB over {len(paths)} photos"


@needs_photos
@pytest.mark.slow  # real photos decoded twice; the fast tier checks the train geometry on synthetic images
def test_train_psnr_real_photos():
    paths = PHOTOS[3::16]
    seeds = torch.arange(len(paths), dtype=torch.int64) * 7919 + 11
    out = decode_images(paths, height=160, width=192, geometry="train", seeds=seeds, hflip_prob=0.5).data
    worst = math.inf
    for p, s, o in zip(paths, seeds.tolist(), out):
        img = decode_image(p)
        top, left, h, w, flip = train_box(s, img.shape[1], img.shape[2], hflip_prob=0.5)
        ref = F.resized_crop(img, top, left, h, w, [160, 192], antialias=True)
        worst = min(worst, psnr(F.horizontal_flip(ref) if flip else ref, o))
    assert worst >= MIN_PSNR


@pytest.mark.parametrize(
    "shape,resize,crop",
    [((97, 131), 64, (48, 56)), ((300, 200), 100, (100, 90)), ((50, 60), 0, (40, 40)), ((33, 47), 80, (64, 64))],
)
def test_eval_synthetic_lossless(shape, resize, crop):
    arr = smooth_image(*shape, seed=sum(shape))
    data = encode(arr, "PNG")
    out = decode_images([data], height=crop[0], width=crop[1], resize_shorter=resize).data[0]
    img = torch.from_numpy(arr).permute(2, 0, 1)
    ref = F.center_crop(F.resize(img, resize, antialias=True) if resize else img, list(crop))
    assert psnr(ref, out) >= 50


def test_padding_when_crop_exceeds_image():
    arr = smooth_image(20, 30, seed=1)
    out = decode_images([encode(arr)], height=40, width=25).data[0]
    ref = F.center_crop(torch.from_numpy(arr).permute(2, 0, 1), [40, 25])
    assert torch.equal(out, ref)


def test_resize_mode_and_large_jpeg_dct_scaling():
    arr = smooth_image(1200, 1600, seed=3)
    data = encode(arr, "JPEG", quality=95)
    full = decode_image(data)
    out = decode_images([data], height=150, width=200, geometry="resize").data[0]
    assert psnr(F.resize(full, [150, 200], antialias=True), out) >= MIN_PSNR
    fast = decode_images([data], height=150, width=200, geometry="resize", dct_min_ratio=1.0).data[0]
    assert psnr(F.resize(full, [150, 200], antialias=True), fast) >= 30  # 1/8 scale: fastest, not exact


def test_exif_orientation_applied():
    arr = smooth_image(60, 90, seed=4)
    im = Image.fromarray(arr)
    exif = im.getexif()
    exif[0x0112] = 6
    data = images.encode_tensor(im, "JPEG", quality=95, exif=exif)
    full = decode_image(data)  # applies the orientation: 90 x 60
    assert full.shape == (3, 90, 60)
    out = decode_images([data], height=40, width=30, geometry="resize").data[0]
    assert psnr(F.resize(full, [40, 30], antialias=True), out) >= MIN_PSNR


# --- determinism, errors ----------------------------------------------------------------------------


def _batch_inputs(n=12):
    return [encode(smooth_image(80 + 13 * i, 120 - 5 * i, seed=i), "JPEG") for i in range(n)]


def test_same_seeds_same_bytes_for_1_2_4_threads():
    data = _batch_inputs()
    seeds = torch.arange(len(data), dtype=torch.int64) * 31 - 5
    before = get_num_threads()
    results = []
    try:
        for n in (1, 2, 4):
            set_num_threads(n)
            assert get_num_threads() == n
            results.append(decode_images(data, height=48, width=40, geometry="train", seeds=seeds, hflip_prob=0.5,
                                         dtype=torch.float32, mean=[0.5], std=[0.25]).data)
    finally:
        set_num_threads(before)
    assert all(torch.equal(results[0], r) for r in results[1:])
    other = decode_images(data, height=48, width=40, geometry="train", seeds=seeds + 1, hflip_prob=0.5,
                          dtype=torch.float32, mean=[0.5], std=[0.25]).data
    assert not torch.equal(results[0], other)


def _truncated(data: torch.Tensor) -> torch.Tensor:
    return data[: data.numel() // 2].clone()


def test_strict_raises_naming_the_sample():
    data = _batch_inputs(4)
    data[2] = _truncated(data[2])
    with pytest.raises(DecodeError, match=r"^sample 2: JPEG: "):
        decode_images(data, height=32, width=32)


def test_lenient_returns_mask_and_zero_fills():
    data = _batch_inputs(5)
    good = decode_images(data, height=32, width=32).data
    data[1] = _truncated(data[1])
    data[3] = torch.frombuffer(bytearray(b"not an image at all"), dtype=torch.uint8)
    result = decode_images(data, height=32, width=32, strict=False)
    batch, ok = result.data, result.ok
    assert ok.tolist() == [True, False, True, False, True]
    assert batch[1].eq(0).all() and batch[3].eq(0).all()
    assert torch.equal(batch[ok], good[ok])


def test_argument_errors():
    data = _batch_inputs(2)
    with pytest.raises(ValueError, match="seeds"):
        decode_images(data, height=8, width=8, geometry="train")
    with pytest.raises(ValueError, match='mode to be one of "eval", "resize", "train", "random_crop", got "bad"'):
        decode_images(data, height=8, width=8, geometry="bad")
    with pytest.raises(ValueError, match="needs dtype float32 or bfloat16, got uint8"):
        decode_images(data, height=8, width=8, mean=[0.5], std=[0.5])
    with pytest.raises(ValueError, match="expected height and width >= 1, got 0x8"):
        decode_images(data, height=0, width=8)
    with pytest.raises(ValueError, match=r"seeds as an int64 tensor of shape \[2\]"):
        decode_images(data, height=8, width=8, seeds=torch.zeros(3, dtype=torch.int64))
    with pytest.raises(ValueError, match="at least one image"):
        decode_images([], height=8, width=8)
    with pytest.raises(ValueError, match="uint8, float32 or bfloat16"):
        decode_images(data, height=8, width=8, dtype=torch.float64)
    with pytest.raises(ValueError, match="set_num_threads"):
        set_num_threads(-1)


@pytest.mark.skipif(torch.cuda.is_available(), reason="a CUDA runtime exists: pinned memory works")
def test_pin_memory_without_cuda():
    with pytest.raises(RuntimeError, match="pin_memory=True needs a CUDA runtime"):
        decode_images(_batch_inputs(1), height=8, width=8, pin_memory=True)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA runtime")
def test_pin_memory_with_cuda():
    assert decode_images(_batch_inputs(2), height=8, width=8, pin_memory=True).data.is_pinned()


# --- dtypes, layout, normalization --------------------------------------------------------------------


MEAN, STD = list(IMAGENET_MEAN), list(IMAGENET_STD)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("channels_last", [False, True])
def test_dtype_layout_normalization(dtype, channels_last):
    data = _batch_inputs(3)
    u8 = decode_images(data, height=30, width=20, resize_shorter=32).data
    out = decode_images(data, height=30, width=20, resize_shorter=32, dtype=dtype, mean=MEAN, std=STD,
                        dimension_order="NHWC" if channels_last else "NCHW").data
    out = out.permute(0, 3, 1, 2) if channels_last else out  # NHWC: the NCHW batch in channels_last format
    assert out.shape == (3, 3, 30, 20) and out.dtype == dtype
    assert out.is_contiguous(memory_format=torch.channels_last if channels_last else torch.contiguous_format)
    ref = v2.Normalize(MEAN, STD)(v2.ToDtype(torch.float32, scale=True)(u8))
    tol = 1e-5 if dtype == torch.float32 else 2e-2
    torch.testing.assert_close(out.float(), ref.to(dtype).float(), atol=tol, rtol=tol)
    scaled = decode_images(data, height=30, width=20, resize_shorter=32, dtype=torch.float32).data
    torch.testing.assert_close(scaled, u8.float() / 255, atol=1e-6, rtol=1e-6)
    nhwc = decode_images(data, height=30, width=20, resize_shorter=32, dimension_order="NHWC").data
    assert nhwc.shape == (3, 30, 20, 3) and torch.equal(nhwc.permute(0, 3, 1, 2), u8)


# --- torch.library / torch.compile ---------------------------------------------------------------------


def test_opcheck():
    data = _batch_inputs(3)
    seeds = torch.tensor([1, 2, 3], dtype=torch.int64)
    cases = [
        dict(height=16, width=24, resize_shorter=20),
        dict(height=16, width=16, geometry="train", seeds=seeds, hflip_prob=0.5, dtype=torch.float32,
             mean=MEAN, std=STD, dimension_order="NHWC"),
        dict(height=8, width=8, geometry="resize", dtype=torch.bfloat16, strict=False),
    ]
    for kwargs in cases:
        torch.library.opcheck(torch.ops.spdl_torch.decode_images.default, (data,), kwargs)


class _Preprocess(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3)

    def forward(self, data: list[torch.Tensor]) -> torch.Tensor:
        batch, _ = torch.ops.spdl_torch.decode_images(
            data, height=32, width=32, resize_shorter=36, dtype=torch.float32, mean=MEAN, std=STD
        )
        return self.conv(batch)


# Inductor generates and compiles C++ (~10-20 s on 2 cores): the slow tier
@pytest.mark.parametrize("backend", ["aot_eager", pytest.param("inductor", marks=pytest.mark.slow)])
def test_torch_compile_fullgraph(backend):
    torch._dynamo.reset()
    model = _Preprocess()
    data = _batch_inputs(2)
    eager = model(data)
    compiled = torch.compile(model, fullgraph=True, backend=backend)
    torch.testing.assert_close(compiled(data), eager)
    assert eager.shape == (2, 4, 30, 30)


@pytest.mark.slow
def test_num_threads_from_environment():
    import subprocess
    import sys

    code = "import spdl_torch; print(spdl_torch.io.get_num_threads())"
    env = {**__import__("os").environ, "SPDL_TORCH_NUM_THREADS": "3"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "3"
    env["SPDL_TORCH_NUM_THREADS"] = "zero"
    code = "import spdl_torch; spdl_torch.io.get_num_threads()"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.returncode != 0 and "SPDL_TORCH_NUM_THREADS to be an integer in 1..4096" in out.stderr


@pytest.mark.parametrize("mode,fmt", [("L", "JPEG"), ("CMYK", "JPEG"), ("RGBA", "PNG"), ("P", "PNG"), ("RGB", "WEBP")])
def test_other_colour_layouts_and_formats(mode, fmt):
    im = Image.fromarray(smooth_image(60, 80, seed=9)).convert(mode)
    data = images.encode_tensor(im, fmt, **({"lossless": True} if fmt == "WEBP" else {}))
    out = decode_images([data], height=30, width=40, geometry="resize").data[0]
    ref = F.resize(decode_image(data), [30, 40], antialias=True)
    assert (out.int() - ref.int()).abs().max() <= 1


def test_concurrent_calls_share_the_pool():
    import concurrent.futures

    data = _batch_inputs(6)
    seeds = torch.arange(6, dtype=torch.int64)
    expected = decode_images(data, height=24, width=24, geometry="train", seeds=seeds).data
    with concurrent.futures.ThreadPoolExecutor(4) as ex:
        futures = [ex.submit(decode_images, data, height=24, width=24, geometry="train", seeds=seeds) for _ in range(8)]
        resized = ex.submit(set_num_threads, 3)
        results = [f.result().data for f in futures]
        resized.result()
    set_num_threads(0)
    assert all(torch.equal(r, expected) for r in results)


@pytest.mark.parametrize("shape,crop", [((50, 60), (41, 41)), ((51, 61), (40, 40)), ((45, 44), (45, 44)), ((9, 30), (12, 7))])
def test_center_crop_offsets_bit_exact(shape, crop):
    """Without a resize the op is a pure crop: torchvision's round-half-even offsets and centred padding."""
    arr = smooth_image(*shape, seed=2)
    out = decode_images([encode(arr)], height=crop[0], width=crop[1]).data[0]
    assert torch.equal(out, F.center_crop(torch.from_numpy(arr).permute(2, 0, 1), list(crop)))


def test_train_crop_bit_exact_at_scale_one():
    """A RandomResizedCrop box resized to its own size is a pure crop: the op must cut the same pixels."""
    arr = smooth_image(40, 50, seed=5)
    img = torch.from_numpy(arr).permute(2, 0, 1)
    for seed in range(20):
        top, left, h, w, _ = train_box(seed, 40, 50, scale=(0.3, 0.3), ratio=(1.0, 1.0))
        out = decode_images([encode(arr)], height=h, width=w, geometry="train", seeds=[seed], scale=(0.3, 0.3),
                            ratio=(1.0, 1.0)).data[0]
        assert torch.equal(out, img[:, top : top + h, left : left + w]), seed


def test_errors_name_the_path_and_reject_a_single_image(tmp_path):
    good = encode(smooth_image(40, 50, 1), "JPEG")
    bad = tmp_path / "cut.jpg"
    bad.write_bytes(bytes(good[: len(good) // 3].numpy()))
    ok_path = tmp_path / "ok.jpg"
    ok_path.write_bytes(bytes(good.numpy()))
    with pytest.raises(DecodeError, match=rf"^{bad}: JPEG"):  # the path, not "sample 1:"
        decode_images([str(ok_path), bad], height=16, width=16, geometry="resize")
    with pytest.raises(DecodeError, match=r"^sample 1: JPEG"):  # bytes: the index
        decode_images([good, bad.read_bytes()], height=16, width=16, geometry="resize")
    missing = str(tmp_path / "missing.jpg")
    with pytest.raises(FileNotFoundError) as info:
        decode_images([missing], height=16, width=16)
    assert str(info.value).count(missing) == 1
    for single in (str(ok_path), ok_path, good, bytes(good.numpy())):
        with pytest.raises(TypeError, match="single .*pass \\[src\\]"):
            decode_images(single, height=16, width=16)
    with pytest.raises(TypeError, match="expected an int height, got 8.5"):
        decode_images([good], height=8.5, width=16)
    assert decode_images([good], height=np.int64(8), width=16, geometry="resize").data.shape == (1, 3, 8, 16)


@pytest.mark.slow
def test_bytes_input_warns_nothing(tmp_path):
    # torch.frombuffer's "buffer is not writable" warning is issued once per process: a fresh one.
    import subprocess
    import sys

    path = tmp_path / "a.jpg"
    path.write_bytes(bytes(encode(smooth_image(20, 30, 2), "JPEG").numpy()))
    code = ("import sys, spdl_torch.io as io; data = open(sys.argv[1], 'rb').read(); "
            "print(tuple(io.decode_images([data], height=8, width=8, geometry='resize').data.shape))")
    run = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "(1, 3, 8, 8)"
    assert run.stderr == ""


def _jpeg(h: int = 24, w: int = 32, seed: int = 0) -> bytes:
    rng = np.random.default_rng(seed)
    buf = io.BytesIO()
    Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8)).save(buf, "JPEG", quality=90)
    return buf.getvalue()


def test_geometry_keyword():
    data = [_jpeg(40, 50, seed=s) for s in range(3)]
    seeds = torch.tensor([1, 2, 3])
    new = decode_images(data, height=16, width=12, geometry="train", seeds=seeds).data
    assert not torch.equal(new, decode_images(data, height=16, width=12, geometry="resize").data)
    assert torch.equal(decode_images(data, height=16, width=12).data, decode_images(data, height=16, width=12,
                                                                             geometry="eval").data)
    with pytest.raises(ValueError, match='geometry mode to be one of "eval", "resize", "train", "random_crop", got "bad"'):
        decode_images(data, height=16, width=12, geometry="bad")
