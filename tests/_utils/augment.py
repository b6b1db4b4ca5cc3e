"""A reference executor of augment programs (the ``augment`` / ``erase`` rows of ``decode_images``) with
``torchvision.transforms.v2.functional`` (codes 1-13) and Pillow itself (``fill``, ``pil_affine`` with its
``pil_affine_low`` parts, ``solarize_add``, ``pil_enhance``: ``ImageEnhance``, ``pil_hue``: ``convert("HSV")``,
``pil_autocontrast``: ``ImageOps.autocontrast``, the mix rows' ``Image.blend``), and a stand-in for the native op
built on it.

``apply_program(image, rows)`` runs rows ``[code, a0..a6]`` (read by argument name from the library's table) on a
uint8 Tensor[3, H, W] (the fill colour, the affine low parts and the mix state per program, as the op keeps them
per sample; the mix rows as torchvision's ``AugMix.forward`` computes its mix, an alpha below 1 as timm's
``AugMixAugment`` blends it with Pillow); ``apply_erase(slot, row)`` runs an
erase row on the float slot. ``fake_decode_images`` decodes with the real op (geometry, flips,
uint8), then runs the program, the conversion / normalisation and the erasing as torchvision would.
"""

from __future__ import annotations

import numpy as np
import torch
from PIL import Image, ImageEnhance, ImageOps
from torchvision.transforms import v2
from torchvision.transforms.v2 import InterpolationMode
from torchvision.transforms.v2 import functional as F

from spdl_torch.io import ImageBatch
from spdl_torch.transforms import _augment_codes as codes

_INTERP = {0: InterpolationMode.NEAREST, 1: InterpolationMode.BILINEAR}
_PIL_FILTERS = {0: Image.Resampling.NEAREST, 1: Image.Resampling.BILINEAR, 2: Image.Resampling.BICUBIC}


def to_pil(image: torch.Tensor) -> Image.Image:
    """A uint8 Tensor[3, H, W] as an RGB ``PIL.Image``."""
    return Image.fromarray(np.ascontiguousarray(image.permute(1, 2, 0).numpy()), "RGB")


def from_pil(image: Image.Image) -> torch.Tensor:
    """An RGB ``PIL.Image`` as a uint8 Tensor[3, H, W]."""
    return torch.from_numpy(np.array(image.convert("RGB"))).permute(2, 0, 1).contiguous()


def pil_affine(image: torch.Tensor, data: list[float], resample: int, fill: tuple[int, int, int]) -> torch.Tensor:
    """Pillow's ``img.transform(img.size, Image.AFFINE, data, resample, fillcolor=fill)`` (resample as the row's
    code: 0 NEAREST, 1 BILINEAR, 2 BICUBIC)."""
    pil = to_pil(image)
    return from_pil(pil.transform(pil.size, Image.Transform.AFFINE, [float(v) for v in data[:6]],
                                  resample=_PIL_FILTERS[int(resample)], fillcolor=tuple(int(c) for c in fill)))


_ENHANCERS = (ImageEnhance.Brightness, ImageEnhance.Color, ImageEnhance.Contrast, ImageEnhance.Sharpness)


def pil_hue(image: torch.Tensor, shift: int) -> torch.Tensor:
    """torchvision's ``adjust_hue`` of a PIL image with its hue shift: ``convert("HSV")``, H += shift (uint8
    wrap-around), ``convert("RGB")``."""
    h, s, v = to_pil(image).convert("HSV").split()
    h = Image.fromarray((np.array(h, dtype=np.uint8) + np.uint8(shift)).astype(np.uint8), "L")
    return from_pil(Image.merge("HSV", (h, s, v)))


def solarize_add(image: torch.Tensor, add: int, threshold: float) -> torch.Tensor:
    """timm's ``solarize_add``: a value below ``threshold`` becomes ``min(255, v + add)``."""
    lut = torch.tensor([min(255, v + int(add)) if v < threshold else v for v in range(256)], dtype=torch.uint8)
    return lut[image.long()]


def _named(row: torch.Tensor | list[float]) -> tuple[str, dict]:
    """A row's op name and its arguments by name (the library's table)."""
    op = codes.op_named(int(row[0]))
    return op.name, codes.named_args(op, [float(x) for x in row[1:]])


# torchvision's function of each tensor row (its arguments by name, as the table names them).
_TENSOR_OPS = {
    "affine": lambda x, a: F.affine(x, angle=a["angle"], translate=list(a["translate"]), scale=1.0,
                                    shear=list(a["shear"]), interpolation=_INTERP[int(a["interpolation"])],
                                    fill=None if a["fill"] == codes.NO_FILL else a["fill"]),
    "adjust_brightness": lambda x, a: F.adjust_brightness(x, a["brightness_factor"]),
    "adjust_contrast": lambda x, a: F.adjust_contrast(x, a["contrast_factor"]),
    "adjust_saturation": lambda x, a: F.adjust_saturation(x, a["saturation_factor"]),
    "adjust_hue": lambda x, a: F.adjust_hue(x, a["hue_factor"]),
    "adjust_sharpness": lambda x, a: F.adjust_sharpness(x, a["sharpness_factor"]),
    "posterize": lambda x, a: F.posterize(x, int(a["bits"])),
    "solarize": lambda x, a: F.solarize(x, a["threshold"]),
    "autocontrast": lambda x, a: F.autocontrast(x),
    "equalize": lambda x, a: F.equalize(x),
    "invert": lambda x, a: F.invert(x),
    "rgb_to_grayscale": lambda x, a: F.rgb_to_grayscale(x, num_output_channels=3),
    "gaussian_blur": lambda x, a: F.gaussian_blur(x, kernel_size=[int(k) for k in a["kernel_size"]],
                                                  sigma=list(a["sigma"])),
    # Pillow's rules
    "solarize_add": lambda x, a: solarize_add(x, int(a["add"]), a["threshold"]),
    "pil_enhance": lambda x, a: from_pil(_ENHANCERS[int(a["enhancer"])](to_pil(x)).enhance(a["factor"])),
    "pil_hue": lambda x, a: pil_hue(x, int(a["shift"])),
    "pil_autocontrast": lambda x, a: from_pil(ImageOps.autocontrast(to_pil(x))),
}


def apply_row(image: torch.Tensor, row: torch.Tensor | list[float], fill: tuple[int, int, int] = (0, 0, 0)
              ) -> torch.Tensor:
    """One row ``[code, a0..a6]`` on a uint8 Tensor[3, H, W] (``fill``: the colour of a ``pil_affine`` row; a
    ``fill`` row or a mix row alone changes nothing: :func:`apply_program` keeps their state)."""
    name, a = _named(row)
    if name in ("identity", "fill"):
        return image
    if name == "pil_affine":
        return pil_affine(image, list(a["data"]), int(a["resample"]), fill)
    if name in _TENSOR_OPS:
        return _TENSOR_OPS[name](image, a)
    raise ValueError(f"{name} rows need the program around them (apply_program)")


def apply_program(image: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
    """Rows Tensor[K, 8] in order on a uint8 Tensor[3, H, W]: the fill colour starts black; the mix rows as
    AugMix (``mix_end`` with alpha below 1: timm's ``_apply_basic``, ``Image.blend`` of the source and the
    clipped mix)."""
    fill = (0, 0, 0)
    low = [0.0] * 6  # the pil_affine_low parts of the next pil_affine row, summed in double
    source = acc = None
    for row in rows:
        name, a = _named(row)
        if name == "fill":
            fill = tuple(int(c) for c in a["color"])
        elif name == "pil_affine_low":
            low = [x + y for x, y in zip(low, a["data"])]
        elif name == "pil_affine":
            image = pil_affine(image, [x + y for x, y in zip(a["data"], low)], int(a["resample"]), fill)
            low = [0.0] * 6
        elif name == "mix_begin":
            source, acc = image, torch.tensor(a["weight"], dtype=torch.float32) * image.float()
        elif name == "mix_add":
            acc = acc + torch.tensor(a["weight"], dtype=torch.float32) * image.float()
            image = source
        elif name == "mix_end":
            mixed = acc.clamp(0, 255).to(torch.uint8)  # truncation, as numpy's astype
            image = mixed if a["alpha"] == 1 else from_pil(Image.blend(to_pil(source), to_pil(mixed), a["alpha"]))
            source = acc = None
        else:
            image = apply_row(image, row, fill)
    return image


def apply_erase(slot: torch.Tensor, row: torch.Tensor | list[float], generator: torch.Generator | None = None
                ) -> torch.Tensor:
    """An erase row (mode, top, left, height, width, value[3]) on a float Tensor[C, H, W] (mode random: normal
    values)."""
    a = codes.named_args(codes.ERASE, [float(x) for x in row])
    mode = int(a["mode"])
    if mode == codes.ERASE_OFF:
        return slot
    i, j, h, w = (int(a[k]) for k in ("top", "left", "height", "width"))
    c = slot.shape[0]
    if mode == codes.ERASE_VALUE:
        v = torch.tensor(list(a["value"])[:c], dtype=slot.dtype)[:, None, None]
    else:
        v = torch.empty((c, h, w), dtype=torch.float32).normal_(generator=generator).to(slot.dtype)
    return F.erase(slot, i, j, h, w, v)


def make_fake_decode_images(real):
    """A ``decode_images`` with ``augment`` / ``erase`` arguments built from ``real`` (the op without them)."""

    def fake_decode_images(srcs, *, augment=None, erase=None, dtype=torch.uint8, mean=None, std=None,
                           dimension_order="NCHW", strict=True, **kwargs):
        result = real(srcs, strict=strict, **kwargs)
        batch, ok = result.data, result.ok
        out = []
        for n, img in enumerate(batch):
            if augment is not None:
                img = apply_program(img, augment[n])
            if dtype != torch.uint8:
                img = v2.ToDtype(dtype, scale=True)(img)
                if mean is not None:
                    img = v2.Normalize(mean, std)(img)
            if erase is not None:
                img = apply_erase(img, erase[n], torch.Generator().manual_seed(n))
            out.append(img)
        batch = torch.stack(out) if out else batch.to(dtype)
        if dimension_order == "NHWC":
            batch = batch.permute(0, 2, 3, 1).contiguous()
        return ImageBatch(batch, ok)

    return fake_decode_images


def timm_stand_in(cls_name: str, **attrs):
    """An object whose class has timm's module and the name ``cls_name`` (``timm.data.transforms.<cls_name>``)
    and the attributes ``attrs``: how the fuser recognises timm's transforms, testable where timm is absent."""
    cls = type(cls_name, (), {"__call__": lambda self, x: x})
    cls.__module__ = "timm.data.transforms"
    obj = cls()
    obj.__dict__.update(attrs)
    return obj


def program_rows(*rows) -> torch.Tensor:
    """float32 ``Tensor[1, K, AUGMENT_COLUMNS]``: one sample's program of K raw rows ``(code, *args)``, the
    arguments in the table's column order and the unused columns 0 (for tests of the op's own row checks)."""
    t = torch.zeros(1, len(rows), codes.AUGMENT_COLUMNS)
    for k, (code, *args) in enumerate(rows):
        t[0, k, 0] = code
        t[0, k, 1:1 + len(args)] = torch.tensor([float(a) for a in args])
    return t
