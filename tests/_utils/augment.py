"""A reference executor of augment programs (the ``augment`` / ``erase`` rows of ``decode_images``) with
``torchvision.transforms.v2.functional`` (codes 1-13) and Pillow itself (``fill``, ``pil_affine`` with its
``pil_affine_low`` parts, ``solarize_add``, ``pil_enhance``: ``ImageEnhance``, ``pil_hue``: ``convert("HSV")``,
``pil_autocontrast``: ``ImageOps.autocontrast``, the mix rows' ``Image.blend``), and a stand-in for the native op
built on it.

``apply_program(image, rows)`` runs rows ``[code, a0..a6]`` on a uint8 Tensor[3, H, W] (the fill colour, the
affine low parts and the mix state per program, as the op keeps them per sample; the mix rows as torchvision's
``AugMix.forward``
computes its mix, mode 1 as timm's ``AugMixAugment`` blends it with Pillow); ``apply_erase(slot, row)`` runs an
erase row on the float slot. ``fake_decode_images`` decodes with the real op (geometry, flips,
uint8), then runs the program, the conversion / normalisation and the erasing as torchvision would.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from PIL import Image, ImageEnhance, ImageOps
from torchvision.transforms import v2
from torchvision.transforms.v2 import InterpolationMode
from torchvision.transforms.v2 import functional as F

from spdl_torch.io import ImageBatch
from spdl_torch.transforms import _augment_program as P

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


def apply_row(image: torch.Tensor, row: torch.Tensor | list[float], fill: tuple[int, int, int] = (0, 0, 0)
              ) -> torch.Tensor:
    """One row ``[code, a0..a6]`` on a uint8 Tensor[3, H, W] (``fill``: the colour of a ``pil_affine`` row; a
    ``fill`` row or a mix row alone changes nothing: :func:`apply_program` keeps their state)."""
    code, a = int(row[0]), [float(x) for x in row[1:]]
    if code in (P.NOOP, P.FILL):
        return image
    if code == P.PIL_AFFINE:
        return pil_affine(image, a[:6], int(a[6]), fill)
    if code == P.SOLARIZE_ADD:
        return solarize_add(image, int(a[0]), a[1])
    if code == P.PIL_ENHANCE:
        return from_pil(_ENHANCERS[int(a[0])](to_pil(image)).enhance(a[1]))
    if code == P.PIL_HUE:
        return pil_hue(image, int(a[0]))
    if code == P.PIL_AUTOCONTRAST:
        return from_pil(ImageOps.autocontrast(to_pil(image)))
    if code == P.PIL_AFFINE_LOW:
        raise ValueError("pil_affine_low rows need the program around them (apply_program)")
    if code == P.AFFINE:
        return F.affine(image, angle=a[0], translate=[a[1], a[2]], scale=1.0, shear=[a[3], a[4]],
                        interpolation=_INTERP[int(a[5])], fill=None if a[6] == P.NO_FILL else a[6])
    if code == P.BRIGHTNESS:
        return F.adjust_brightness(image, a[0])
    if code == P.CONTRAST:
        return F.adjust_contrast(image, a[0])
    if code == P.SATURATION:
        return F.adjust_saturation(image, a[0])
    if code == P.HUE:
        return F.adjust_hue(image, a[0])
    if code == P.SHARPNESS:
        return F.adjust_sharpness(image, a[0])
    if code == P.POSTERIZE:
        return F.posterize(image, int(a[0]))
    if code == P.SOLARIZE:
        return F.solarize(image, a[0])
    if code == P.AUTOCONTRAST:
        return F.autocontrast(image)
    if code == P.EQUALIZE:
        return F.equalize(image)
    if code == P.INVERT:
        return F.invert(image)
    if code == P.GRAYSCALE:
        return F.rgb_to_grayscale(image, num_output_channels=3)
    if code == P.GAUSSIAN_BLUR:
        return F.gaussian_blur(image, kernel_size=[int(a[0]), int(a[1])], sigma=[a[2], a[3]])
    if code in (P.MIX_BEGIN, P.MIX_ADD, P.MIX_END):
        raise ValueError("mix rows need the program around them (apply_program)")
    raise ValueError(f"unknown augment code {code}")


def apply_program(image: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
    """Rows Tensor[K, 8] in order on a uint8 Tensor[3, H, W]: the fill colour starts black; the mix rows as
    AugMix (``mix_end`` mode 1: timm's ``_apply_basic``, ``Image.blend`` of the source and the clipped mix)."""
    fill = (0, 0, 0)
    low = [0.0] * 6  # the pil_affine_low parts of the next pil_affine row, summed in double
    source = acc = None
    for row in rows:
        code, a = int(row[0]), [float(x) for x in row[1:]]
        if code == P.FILL:
            fill = (int(a[0]), int(a[1]), int(a[2]))
        elif code == P.PIL_AFFINE_LOW:
            low = [x + y for x, y in zip(low, a[:6])]
        elif code == P.PIL_AFFINE:
            image = pil_affine(image, [x + y for x, y in zip(a[:6], low)], int(a[6]), fill)
            low = [0.0] * 6
        elif code == P.MIX_BEGIN:
            source, acc = image, torch.tensor(a[0], dtype=torch.float32) * image.float()
        elif code == P.MIX_ADD:
            acc = acc + torch.tensor(a[0], dtype=torch.float32) * image.float()
            image = source
        elif code == P.MIX_END:
            mixed = acc.clamp(0, 255).to(torch.uint8)  # truncation, as numpy's astype
            image = mixed if int(a[0]) == 0 else from_pil(Image.blend(to_pil(source), to_pil(mixed), a[1]))
            source = acc = None
        else:
            image = apply_row(image, row, fill)
    return image


def apply_erase(slot: torch.Tensor, row: torch.Tensor | list[float], generator: torch.Generator | None = None
                ) -> torch.Tensor:
    """An erase row ``[apply, i, j, h, w, v0, v1, v2]`` on a float Tensor[C, H, W] (apply 2: normal values)."""
    apply = int(row[0])
    if apply == P.ERASE_NONE:
        return slot
    i, j, h, w = (int(x) for x in row[1:5])
    c = slot.shape[0]
    if apply == P.ERASE_VALUE:
        v = torch.tensor([float(x) for x in row[5:5 + c]], dtype=slot.dtype)[:, None, None]
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


@pytest.fixture
def native():
    """The native op with ``augment`` / ``erase``: fuse() fuses augmentations and the plans run them in
    ``decode_images``; the tests compare its output with the reference executor above."""
    from spdl_torch.transforms._augment_program import native_augment

    assert native_augment(), "this build's decode_images has no augment argument"
