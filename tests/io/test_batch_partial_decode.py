"""The partial JPEG decode of decode_images (only the rows and columns the crop's resize reads, nothing
below them) gives the same bytes as the whole-image decode; damage below the crop is not read."""

import functools
from pathlib import Path

import numpy as np
import pytest
import torch

from spdl_torch import DecodeError
from spdl_torch.io import decode_images

from tests._utils import images
from tests._utils.images import train_box
from tests._utils.images import IMAGENET_MEAN, IMAGENET_STD

REPO = Path(__file__).resolve().parents[2]
PHOTOS = sorted((REPO / "data" / "imagenet_like" / "train").glob("*/*.JPEG"))
needs_photos = pytest.mark.skipif(not PHOTOS, reason="data/imagenet_like is absent (make demo prepares it)")
MEAN, STD = list(IMAGENET_MEAN), list(IMAGENET_STD)

CONFIGS = {
    "eval-256-224-float": dict(geometry="eval", resize_shorter=256, height=224, width=224, dtype=torch.float32, mean=MEAN, std=STD),
    "eval-bicubic-uint8": dict(geometry="eval", resize_shorter=160, height=128, width=144, interpolation="bicubic"),
    "eval-crop-exceeds": dict(geometry="eval", resize_shorter=0, height=700, width=300),
    "train-flip": dict(geometry="train", height=224, width=224, hflip_prob=0.5),
    "train-small-dct": dict(geometry="train", height=48, width=40, hflip_prob=0.5, scale=(0.02, 0.3), dct_min_ratio=1.0),
    "resize": dict(geometry="resize", height=100, width=300),
}


def _jpeg(array: np.ndarray, **kwargs) -> torch.Tensor:
    return images.encode_tensor(array, "JPEG", **kwargs)


def _photo_like(h: int, w: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    img = images.upsampled_noise(h, w, rng).astype(np.int32)
    img += rng.integers(-20, 21, (h, w, 3))  # fine detail, so every block has AC coefficients
    return np.clip(img, 0, 255).astype(np.uint8)


def _assert_partial_equals_full(data: list[torch.Tensor], cfg: dict, seed0: int = 0) -> None:
    seeds = torch.arange(seed0, seed0 + len(data)) * 7919
    partial = decode_images(data, seeds=seeds, partial_decode=True, **cfg).data
    full = decode_images(data, seeds=seeds, partial_decode=False, **cfg).data
    differs = [i for i in range(len(data)) if not torch.equal(partial[i], full[i])]
    assert not differs, f"samples {differs} differ"


# The synthetic layouts run every configuration fast; on the real photos (~2-5 s a configuration on 2 cores)
# two run in the fast tier, the rest in the slow one.
FAST_ON_PHOTOS = ("eval-bicubic-uint8", "train-small-dct")


@needs_photos
@pytest.mark.parametrize("name", [n if n in FAST_ON_PHOTOS else pytest.param(n, marks=pytest.mark.slow) for n in CONFIGS])
def test_real_photos_partial_equals_full(name):
    data = [torch.from_file(str(p), size=p.stat().st_size, dtype=torch.uint8) for p in PHOTOS[::7]]
    for start in range(0, len(data), 64):
        _assert_partial_equals_full(data[start : start + 64], CONFIGS[name], seed0=start)


SYNTHETIC = {
    "4:4:4": dict(subsampling=0),
    "4:2:2": dict(subsampling=1),
    "4:2:0": dict(subsampling=2),
    "progressive": dict(progressive=True),
    "restart markers": dict(restart_marker_blocks=5),
    "quality 40": dict(quality=40),
}


@functools.cache
def _synthetic(variant: str) -> list[torch.Tensor]:
    # Odd sizes (not multiples of the 16-pixel iMCU), so crops meet partial iMCUs at every edge.
    sizes = [(333, 517), (517, 333), (97, 1203), (481, 640), (1201, 901)]
    return [_jpeg(_photo_like(h, w, i), **{"quality": 90, **SYNTHETIC[variant]}) for i, (h, w) in enumerate(sizes)]


@pytest.mark.parametrize("variant", list(SYNTHETIC))
@pytest.mark.parametrize("name", list(CONFIGS))
def test_synthetic_layouts_partial_equals_full(variant, name):
    data = _synthetic(variant)
    # train: different crops and flips per repetition; eval and resize draw nothing, one pass says it all
    for rep in range(4 if CONFIGS[name]["geometry"] == "train" else 1):
        _assert_partial_equals_full(data, CONFIGS[name], seed0=100 * rep)


def test_greyscale_partial_equals_full():
    grey = [_jpeg(_photo_like(h, w, 5)[:, :, 0], quality=85) for h, w in [(300, 451), (451, 300)]]
    for name in CONFIGS:
        _assert_partial_equals_full(grey, CONFIGS[name])


@pytest.mark.parametrize("subsampling", [0, 2])
def test_tiny_images_use_one_dct_scale(subsampling):
    """Images of <= 5 pixels a side: a 3x3 image at 1/2 and at 5/8 both come out 2x2, with other pixels, and
    TurboJPEG's whole-image decode takes the largest factor that fits. The plan once picked another factor for
    the partial decode, whose pixels then differed from the whole decode's (127 of 12,635 comparisons of an
    adversarial sweep); it now uses TurboJPEG's factor."""
    rng = np.random.default_rng(subsampling)
    data = [_jpeg(images.noise((h, w, 3), rng), quality=95, subsampling=subsampling)
            for h in range(1, 9) for w in range(1, 9)]
    for height, width in [(1, 1), (2, 2), (2, 3)]:
        for ratio in (2.0, 1.0, 0.5):
            _assert_partial_equals_full(data, dict(geometry="resize", height=height, width=width, dct_min_ratio=ratio))


def _top_crop_seed(h: int, w: int, scale) -> int:
    """A train seed whose RandomResizedCrop box lies in the top 40% of an h x w image."""
    for seed in range(10_000):
        top, _, ch, _, _ = train_box(seed, h, w, scale=scale)
        if top + ch < 0.4 * h:
            return seed
    raise AssertionError("no seed with a crop in the top 40%")


def test_damage_below_the_crop_is_not_read():
    h, w = 1200, 320
    data = _jpeg(_photo_like(h, w, 9), quality=90)  # baseline: rows are stored top to bottom
    cfg = dict(geometry="train", height=64, width=64, scale=(0.02, 0.05))
    seed = _top_crop_seed(h, w, cfg["scale"])
    intact = decode_images([data], seeds=[seed], **cfg).data
    cut = data[: data.numel() * 3 // 4].clone()  # the bottom quarter of the rows is gone
    # The partial decode stops after the crop's rows: the same pixels as from the intact file.
    assert torch.equal(decode_images([cut], seeds=[seed], **cfg).data, intact)
    # The whole-image decode reads the missing rows and refuses the file.
    with pytest.raises(DecodeError, match=r"^sample 0: JPEG: .*[Pp]remature end"):
        decode_images([cut], seeds=[seed], partial_decode=False, **cfg)
    # Damage inside the crop's rows is refused by both.
    head = data[: data.numel() // 10].clone()
    for partial in (True, False):
        with pytest.raises(DecodeError, match=r"^sample 0: JPEG: "):
            decode_images([head], seeds=[seed], partial_decode=partial, **cfg)
        result = decode_images([head, data], seeds=[seed, seed], partial_decode=partial, strict=False, **cfg)
        batch, ok = result.data, result.ok
        assert ok.tolist() == [False, True] and batch[0].eq(0).all() and torch.equal(batch[1], intact[0])



def _restart_damage_case(trial: int):
    """A JPEG with restart markers (size, subsampling and interval drawn from ``trial``), 16 train seeds,
    and 10 damaged copies of it (zeroed, random or deleted bytes inside the scan)."""
    rng = np.random.default_rng(trial)
    h, w = int(rng.integers(60, 500)), int(rng.integers(60, 700))
    subsampling = int(rng.choice([0, 1, 2]))
    restart = dict(restart_marker_rows=1) if rng.random() < 0.5 else dict(restart_marker_blocks=int(rng.integers(1, 12)))
    data = _jpeg(_photo_like(h, w, trial), quality=90, subsampling=subsampling, **restart)
    raw = data.numpy().tobytes()
    scan = raw.index(b"\xff\xda")
    scan += 2 + raw[scan + 2] * 256 + raw[scan + 3]
    damaged = []
    for _ in range(10):
        pos, n, kind = int(rng.integers(scan, len(raw) - 60)), int(rng.integers(1, 60)), int(rng.integers(0, 3))
        d = bytearray(raw)
        if kind == 0:
            d[pos : pos + n] = bytes(n)
        elif kind == 1:
            d[pos : pos + n] = rng.integers(0, 255, n, dtype=np.uint8).tobytes()
        else:
            del d[pos : pos + n]
        damaged.append(torch.frombuffer(d, dtype=torch.uint8))
    return data, damaged


# Trials whose damage lies in a restart interval the crop ends in, so that only the interval's closing
# marker reveals it: of trials 0-413, the ones whose damaged pixels the partial decode once returned as good.
@pytest.mark.parametrize("trial", [83, 406, 413])
def test_damage_inside_the_crop_is_found_at_the_next_restart_marker(trial):
    """Damaged bytes inside a restart interval often decode without complaint; the decoder notices only at
    the interval's end ("found marker 0xd4 instead of RST3"), which a partial decode that stopped after the
    crop's rows never reached, while the whole decode refused the file. The partial decode now reads on to the
    marker that closes the region's last interval, so a sample it calls ok has the intact file's pixels, unless
    the whole decode accepts it as well."""
    data, damaged = _restart_damage_case(trial)
    seeds = list(range(16))
    cfg = dict(geometry="train", height=32, width=32, scale=(0.02, 0.2), strict=False)
    intact = decode_images([data] * len(seeds), seeds=seeds, **cfg).data
    for k, d in enumerate(damaged):
        result = decode_images([d] * len(seeds), seeds=seeds, **cfg)
        partial, ok_partial = result.data, result.ok
        ok_whole = decode_images([d] * len(seeds), seeds=seeds, partial_decode=False, **cfg).ok
        for i in range(len(seeds)):
            if ok_partial[i] and not ok_whole[i]:
                assert torch.equal(partial[i], intact[i]), f"copy {k}, sample {i}: ok with damaged pixels"
