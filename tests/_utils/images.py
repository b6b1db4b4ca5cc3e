"""Synthetic test images: pixel patterns, their encoding with Pillow, and files and ImageFolder trees of them.

Everything is seeded, so a test gets the same bytes on every run. The fixtures in ``tests/conftest.py``
(``image_file``, ``image_folder``) write these into the test's ``tmp_path``.

Arrays are ``uint8`` ``[H, W, C]`` (``[H, W]`` for one channel), as ``PIL.Image.fromarray`` takes them.
"""

from __future__ import annotations

import io
import math
import os
from collections.abc import Callable, Iterable
from pathlib import Path

import numpy as np
import torch
from PIL import Image

Pixels = np.ndarray | Image.Image
# ImageNet's normalisation (per RGB channel, of values in [0, 1]): spdl_torch.deploy's modules' default
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)


def rng_of(seed: int | np.random.Generator) -> np.random.Generator:
    """``seed`` itself when it is a generator (draws continue from its state), else a fresh one."""
    return seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)


def noise(shape: tuple[int, ...], seed: int | np.random.Generator = 0, high: int = 256) -> np.ndarray:
    """Uniform uint8 noise in ``[0, high)`` of ``shape`` (e.g. ``(H, W, 3)``)."""
    return rng_of(seed).integers(0, high, shape, dtype=np.uint8)


def upsampled_noise(height: int, width: int, seed: int | np.random.Generator = 0, cell: int = 8,
                    resample: Image.Resampling = Image.BICUBIC, min_cells: int = 2) -> np.ndarray:
    """A smooth, photo-like RGB ``[height, width, 3]`` array: noise of ``max(height // cell, min_cells) x
    max(width // cell, min_cells)`` pixels resized with ``resample``."""
    small = noise((max(height // cell, min_cells), max(width // cell, min_cells), 3), seed)
    return np.asarray(Image.fromarray(small).resize((width, height), resample))


def _image(pixels: Pixels) -> Image.Image:
    return pixels if isinstance(pixels, Image.Image) else Image.fromarray(pixels)


def encode(pixels: Pixels, fmt: str = "PNG", **save) -> bytes:
    """The file that ``Image.save(buf, fmt, **save)`` writes: ``save`` are Pillow's options (``quality=``,
    ``progressive=``, ``subsampling=``, ``exif=``, ``lossless=`` ...)."""
    buf = io.BytesIO()
    _image(pixels).save(buf, fmt, **save)
    return buf.getvalue()


def pgm(values: np.ndarray, maxval: int = 65535, comment: bool = False) -> bytes:
    """A binary PGM (P5) of the grey ``[H, W]`` ``values``: one byte a sample when ``maxval`` < 256, else two
    (big-endian), as Netpbm writes them; ``comment`` puts a comment line in the header."""
    header = b"P5\n" + (b"# a comment\n" if comment else b"") + b"%d %d\n%d\n" % (values.shape[1], values.shape[0], maxval)
    return header + values.astype(">u2" if maxval > 255 else np.uint8).tobytes()


def as_tensor(data: bytes) -> torch.Tensor:
    """The bytes as a writable 1-D uint8 tensor (a copy), the form the ops take."""
    return torch.frombuffer(bytearray(data), dtype=torch.uint8)


def encode_tensor(pixels: Pixels, fmt: str = "PNG", **save) -> torch.Tensor:
    """``encode`` as a 1-D uint8 tensor."""
    return as_tensor(encode(pixels, fmt, **save))


def write(path: str | os.PathLike, pixels: Pixels, fmt: str | None = None, **save) -> Path:
    """Saves the image to ``path`` (parent folders created; the format from the suffix unless ``fmt``)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    _image(pixels).save(path, fmt, **save)
    return path


def write_folder(root: str | os.PathLike, classes: Iterable[str], per_class: int,
                 make: Callable[[np.random.Generator, str, int], Pixels], name: str = "{k}.jpg",
                 seed: int = 0, **save) -> list[Path]:
    """A torchvision ImageFolder tree ``root/<class>/<name>``: ``per_class`` images per class, image ``k``
    of class ``c`` being ``make(rng, c, k)``, drawn class by class from one generator seeded with ``seed``.
    ``name`` is formatted with ``k``; ``save`` goes to Pillow. Returns the paths in the order written."""
    rng = np.random.default_rng(seed)
    root = Path(root)
    return [write(root / c / name.format(k=k), make(rng, c, k), **save) for c in classes for k in range(per_class)]


def train_box(seed: int, height: int, width: int, **kwargs) -> tuple:
    """``(top, left, crop_height, crop_width, hflip)`` of the ``RandomResizedCrop`` box ``decode_images``
    draws for this seed and image size (the op ``sample_geometry`` with ``geometry="train"``)."""
    from spdl_torch.transforms._sample_geometry import sample_geometry

    g = sample_geometry(seed, height, width, out_size=(1, 1), geometry="train", **kwargs)
    return g.top, g.left, g.height, g.width, g.hflip


def photo(h: int, w: int, seed: int = 0) -> torch.Tensor:
    """uint8 ``Tensor[3, h, w]``: smooth colour regions plus a little noise (a photo's statistics)."""
    smooth = upsampled_noise(h, w, seed=seed, cell=6).astype(np.int16)
    grain = noise((h, w, 3), seed=seed + 1, high=25).astype(np.int16) - 12
    return torch.from_numpy(np.clip(smooth + grain, 0, 255).astype(np.uint8)).permute(2, 0, 1).contiguous()


def png_tensor(img: torch.Tensor) -> torch.Tensor:
    """A uint8 ``Tensor[3, H, W]`` as PNG bytes (a 1-D uint8 tensor)."""
    return encode_tensor(np.ascontiguousarray(img.permute(1, 2, 0).numpy()), "PNG")


def psnr(a: torch.Tensor, b: torch.Tensor, peak: float = 255.0) -> float:
    """Peak signal-to-noise ratio of two images of the same shape, in dB (``inf`` when equal)."""
    mse = (a.double() - b.double()).pow(2).mean().item()
    return math.inf if mse == 0 else 10 * math.log10(peak**2 / mse)


def smooth_jpegs(root: str | os.PathLike, seed: int, *, portrait: bool = False, png: bool = False) -> list[str]:
    """Six smooth JPEGs (quality 95) of sizes 50x90 to 105x60 in ``root``, every other one turned to portrait with
    ``portrait``, plus one 61x77 PNG with ``png``: upsampled seeded noise, so resampling references agree closely."""
    root = Path(root)
    rng = np.random.default_rng(seed)
    out = []
    for k in range(6):
        h, w = 50 + 11 * k, 90 - 6 * k
        if portrait and k % 2:
            h, w = w, h
        cells = (h // 8 + 1, w // 8 + 1) if portrait else (h // 8, w // 8)
        small = rng.integers(0, 256, (*cells, 3), dtype=np.uint8)
        Image.fromarray(small).resize((w, h), Image.BICUBIC).save(root / f"{k}.jpg", quality=95)
        out.append(str(root / f"{k}.jpg"))
    if png:
        small = rng.integers(0, 256, (9, 7, 3), dtype=np.uint8)
        Image.fromarray(small).resize((61, 77), Image.BICUBIC).save(root / "png.png")
        out.append(str(root / "png.png"))
    return out


def pillow_reads(path: str | os.PathLike) -> bool:
    """Whether Pillow opens and fully decodes the file (what a reference comparison needs)."""
    try:
        with Image.open(path) as im:
            im.load()
        return True
    except Exception:
        return False


def transform_each(transform: Callable, paths: Iterable[str | os.PathLike]) -> list[torch.Tensor]:
    """The reference path: each file decoded alone (``spdl_torch.io.decode_image``, RGB) and ``transform`` applied."""
    from spdl_torch.io import decode_image

    return [torch.as_tensor(transform(decode_image(p))) for p in paths]
