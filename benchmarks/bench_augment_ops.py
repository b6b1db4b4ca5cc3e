"""Per-image cost of each native augmentation op of ``decode_images(augment=...)``.

Usage::

    python -m benchmarks.bench_augment_ops [--sizes 176 224] [--batch 32] [--repeats 15] [--threads 1]
        [--json out.json]

A batch of lossless PNG photos decoded at their own size with ``interpolation="nearest"`` (an identity
resample) is timed with no program and with a one-row program per op; the op's cost per image is the
difference of the medians divided by the batch size. One decode thread by default, so the numbers are CPU
time per image rather than a share of a pool. Other work on the machine inflates the times: run it alone.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import numpy as np
import torch

import spdl_torch
from spdl_torch.transforms import _augment_codes as codes

def _affine(angle: float, tx: float, shear_x: float, interpolation: str, fill: float | None) -> list[float]:
    return codes.row("affine", angle=angle, translate=(tx, 0), shear=(shear_x, 0), interpolation=interpolation,
                     fill=fill)


# (name, row): the magnitudes the policies draw most often (mid-range), one row each, built by argument name.
OPS = [
    ("rotate bilinear", _affine(17.0, 0, 0, "bilinear", 0)),
    ("rotate nearest", _affine(17.0, 0, 0, "nearest", 0)),
    ("shear_x nearest", _affine(0.0, 0, 16.7, "nearest", 128)),
    ("translate nearest", _affine(0.0, 21.0, 0, "nearest", None)),
    ("brightness", codes.row("adjust_brightness", brightness_factor=1.3)),
    ("contrast", codes.row("adjust_contrast", contrast_factor=1.3)),
    ("saturation", codes.row("adjust_saturation", saturation_factor=1.3)),
    ("hue", codes.row("adjust_hue", hue_factor=0.1)),
    ("sharpness", codes.row("adjust_sharpness", sharpness_factor=1.3)),
    ("posterize", codes.row("posterize", bits=5)),
    ("solarize", codes.row("solarize", threshold=128.0)),
    ("autocontrast", codes.row("autocontrast")),
    ("equalize", codes.row("equalize")),
    ("invert", codes.row("invert")),
    ("grayscale", codes.row("rgb_to_grayscale")),
    ("gaussian_blur k23", codes.row("gaussian_blur", kernel_size=(23, 23), sigma=(2.0, 2.0))),
    ("gaussian_blur k9", codes.row("gaussian_blur", kernel_size=(9, 9), sigma=(1.0, 1.0))),
]


def _photos(n: int, size: int) -> list[torch.Tensor]:
    from PIL import Image
    import io

    rng = np.random.default_rng(0)
    out = []
    for i in range(n):
        cells = rng.integers(0, 256, (size // 8 + 1, size // 8 + 1, 3), dtype=np.uint8)
        img = Image.fromarray(cells).resize((size, size), Image.BICUBIC)
        arr = np.clip(np.asarray(img).astype(np.int16) + rng.integers(-12, 13, (size, size, 3)), 0, 255)
        buf = io.BytesIO()
        Image.fromarray(arr.astype(np.uint8)).save(buf, "PNG", compress_level=1)
        out.append(torch.frombuffer(bytearray(buf.getvalue()), dtype=torch.uint8))
    return out


def _program(n: int, row: list[float]) -> torch.Tensor:
    return torch.tensor(row, dtype=torch.float32).expand(n, 1, codes.AUGMENT_COLUMNS).contiguous()


def _time(files, size, augment, repeats: int) -> float:
    kw = dict(height=size, width=size, geometry="resize", interpolation="nearest", augment=augment)
    spdl_torch.io.decode_images(files, **kw)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        spdl_torch.io.decode_images(files, **kw)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[176, 224])
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--only", nargs="*", default=None, help="op names (substrings) to time")
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    spdl_torch.io.set_num_threads(args.threads)
    ops = [op for op in OPS if not args.only or any(s in op[0] for s in args.only)]
    result = {"threads": args.threads, "batch": args.batch, "sizes": {}}
    for size in args.sizes:
        files = _photos(args.batch, size)
        base = _time(files, size, None, args.repeats)
        rows = {"(no program) ms/image": base * 1e3 / args.batch}
        print(f"{size}x{size}: decode + identity resample {base * 1e3 / args.batch:.3f} ms/image")
        for name, row in ops:
            t = _time(files, size, _program(args.batch, row), args.repeats)
            us = max(t - base, 0.0) * 1e6 / args.batch
            rows[name] = us
            print(f"  {name:<20} {us:9.1f} us/image")
        result["sizes"][str(size)] = rows
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)
    return result


if __name__ == "__main__":
    main()
