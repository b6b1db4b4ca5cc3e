"""Each contender's first eval batch against torchvision's reference, as PSNR (``make bench`` reports it).

    python -m benchmarks.fidelity [--root data/imagenet_like] [--contenders ...]

The reference: ``torchvision.io.decode_jpeg`` + the eval recipe in ``torchvision.transforms.v2``
(``Resize(256)`` antialiased bilinear on the full-size image, ``CenterCrop(224)``, ``ToDtype``,
``Normalize``). Every batch is de-normalized back to [0, 1] and compared with the reference's (peak 1.0),
so a loader that resizes differently (another filter, no antialiasing, a DCT-scaled decode, another
crop rule) shows as a lower PSNR; each loader also gets the Pillow + classic-transforms reference (v1's
rounding) for comparison. One process, loaders one after the other (this is no timing).
"""

from __future__ import annotations

import argparse
import math
import sys

import torch

from benchmarks import contenders as C

SKIP = ("bound", "spdl_torch_crop", "spdl_torch_jitter", "torch_tvio_jitter")  # not the eval recipe


def _psnr(a: torch.Tensor, b: torch.Tensor) -> float:
    mse = (a.double() - b.double()).pow(2).mean().item()
    return math.inf if mse == 0 else 10 * math.log10(1.0 / mse)


def _denormalize(x: torch.Tensor) -> torch.Tensor:
    return x.float() * torch.tensor(C.STD).view(-1, 3, 1, 1) + torch.tensor(C.MEAN).view(-1, 3, 1, 1)


def references(paths: list[str]) -> dict[str, torch.Tensor]:
    from PIL import Image
    from torchvision.io import ImageReadMode, decode_jpeg, read_file

    v2 = C.v2_transform("eval")
    v1 = C.classic_transform("eval")
    tv = torch.stack([v2(decode_jpeg(read_file(p), mode=ImageReadMode.RGB)) for p in paths])
    pil = torch.stack([v1(Image.open(p).convert("RGB")) for p in paths])
    return {"torchvision_v2": _denormalize(tv), "pillow_v1": _denormalize(pil)}


def measure(contenders: list[str], root: str, batch_size: int = 32, workers: int = 2) -> dict:
    """{contender: {"torchvision_v2": dB, "pillow_v1": dB} or {"error": why}} over the first batch."""
    paths, labels, _ = C.list_images(root)
    paths, labels = paths[:batch_size], labels[:batch_size]
    refs = references(paths)
    out: dict[str, dict] = {}
    for c in contenders:
        if c in SKIP or C.unavailable(c):
            continue
        try:
            _, make = C.build(c, paths, labels, "eval", batch_size, workers)
            images, _ = next(iter(make()))
            got = _denormalize(images)
            out[c] = {name: _psnr(got, ref) for name, ref in refs.items()}
        except Exception as e:  # noqa: BLE001 - reported, not raised: one peer must not stop the report
            out[c] = {"error": f"{type(e).__name__}: {e}"}
    return out


def markdown(fid: dict) -> list[str]:
    if not fid:
        return []
    lines = ["", "Eval batch (first 32 images) against torchvision's reference, PSNR in dB on [0, 1] values:", "",
             "| contender | vs torchvision v2 (decode_jpeg) | vs Pillow + v1 |", "|---|---:|---:|"]
    for c, r in fid.items():
        if "error" in r:
            lines.append(f"| {C.LABELS.get(c, c)} | failed: {r['error']} | |")
        else:
            lines.append(f"| {C.LABELS.get(c, c)} | {r['torchvision_v2']:.1f} | {r['pillow_v1']:.1f} |")
    return lines


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--root", default="data/imagenet_like")
    p.add_argument("--contenders", default=",".join(C.CONTENDERS))
    args = p.parse_args()
    print("\n".join(markdown(measure([c for c in args.contenders.split(",") if c], args.root))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
