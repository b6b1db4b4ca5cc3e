"""The op codes of ``decode_images(augment=...)`` programs: the same numbers as ``csrc/core/augment/ops.h``.

A program is a float32 ``Tensor[N, K, 8]``: per sample K rows ``[code, a0, a1, a2, a3, a4, a5, a6]`` run in
order on the sample's uint8 RGB crop after the resize and flips, before the dtype conversion and
normalisation. Ops 1-13 follow ``torchvision.transforms.v2.functional`` on a uint8 image, ops 14-16 and 20-23
Pillow (what torchvision's transforms and timm's augmentation ops do to a PIL image):

========================  ====  ==========================================================================
op                        code  arguments
========================  ====  ==========================================================================
no-op (padding)           0
``affine``                1     a0 angle (degrees), a1 / a2 translate x / y (pixels), a3 / a4 shear x / y
                                (degrees, in (-90, 90)), a5 interpolation (0 nearest, 1 bilinear), a6 fill
                                (a grey value 0..255, or -1 for ``fill=None``); scale 1, centre = the image
                                centre. ``rotate(img, angle)`` (``expand=False``) is ``affine`` with -angle.
``adjust_brightness``     2     a0 factor >= 0
``adjust_contrast``       3     a0 factor >= 0
``adjust_saturation``     4     a0 factor >= 0
``adjust_hue``            5     a0 hue factor in [-0.5, 0.5]
``adjust_sharpness``      6     a0 factor >= 0
``posterize``             7     a0 bits, an integer 0..8
``solarize``              8     a0 threshold (on 0..255, <= 255)
``autocontrast``          9
``equalize``              10
``invert``                11
``rgb_to_grayscale``      12    (3 output channels)
``gaussian_blur``         13    a0 / a1 kernel size x / y (odd), a2 / a3 sigma x / y (> 0)
``fill``                  14    a0, a1, a2: R, G, B (integers 0..255), the fill colour of the sample's
                                following ``pil_affine`` rows (0, 0, 0 at the start of each program:
                                Pillow's default)
``pil_affine``            15    a0..a5: Pillow's AFFINE data (a, b, c, d, e, f), a6 resample 0 NEAREST,
                                1 BILINEAR, 2 BICUBIC: ``img.transform(img.size, Image.AFFINE, data,
                                resample, fillcolor=fill)`` (output (x, y) samples the input at
                                (a x' + b y' + c, d x' + e y' + f), x' = x + 0.5, y' = y + 0.5)
``solarize_add``          16    a0 add (integer 0..255), a1 threshold (0..256): v < threshold becomes
                                min(255, v + add) (timm's ``solarize_add``)
``mix_begin``             17    a0 w0: the image becomes the chains' source, float32 sum = w0 * image
``mix_add``               18    a0 w: sum += w * image, then image = source
``mix_end``               19    a0 mode: 0 image = trunc(clamp(sum, 0, 255)) (torchvision's AugMix); 1
                                mixed = the same, image = Pillow's ``Image.blend(source, mixed, a1)``
                                (timm's AugMixAugment)
``pil_affine_low``        20    a0..a5: added (in double) to the AFFINE data of the sample's next
                                ``pil_affine`` row, then cleared: a double coefficient travels exactly as
                                float32 parts hi (the ``pil_affine`` row) + mid + lo (one row each)
``pil_enhance``           21    a0 enhancer 0 Brightness, 1 Color, 2 Contrast, 3 Sharpness; a1 factor >= 0:
                                ``ImageEnhance.<enhancer>(img).enhance(a1)``
``pil_hue``               22    a0 shift (integer 0..255): ``convert("HSV")``, H += shift modulo 256,
                                ``convert("RGB")`` (torchvision's ``adjust_hue`` of a PIL image: shift =
                                ``int(hue_factor * 255)`` modulo 256)
``pil_autocontrast``      23    ``ImageOps.autocontrast(img)``
========================  ====  ==========================================================================

The mix rows nest within a sample's program: ``mix_begin``, then each chain's rows
followed by its ``mix_add``, then ``mix_end`` (AugMix); a mix row out of that order, a mix inside a mix or a
program that ends inside a mix is rejected naming the row.

``erase``: a float32 ``Tensor[N, 8]``, per sample ``[apply, top, left, height, width, v0, v1, v2]`` applied
to the finished slot (after the normalisation, in the output dtype's values): apply 0 off, 1 the values
``v0, v1, v2`` per channel, 2 normal(0, 1) values drawn from the sample's seed (``value="random"``).
"""

from __future__ import annotations

__all__ = ["AUGMENT_COLUMNS", "ERASE_COLUMNS", "ERASE_OFF", "ERASE_RANDOM", "ERASE_VALUE", "NO_FILL", "OP_CODES"]

NOOP = 0
AFFINE = 1
BRIGHTNESS = 2
CONTRAST = 3
SATURATION = 4
HUE = 5
SHARPNESS = 6
POSTERIZE = 7
SOLARIZE = 8
AUTOCONTRAST = 9
EQUALIZE = 10
INVERT = 11
GRAYSCALE = 12
GAUSSIAN_BLUR = 13
FILL = 14
PIL_AFFINE = 15
SOLARIZE_ADD = 16
MIX_BEGIN = 17
MIX_ADD = 18
MIX_END = 19
PIL_AFFINE_LOW = 20
PIL_ENHANCE = 21
PIL_HUE = 22
PIL_AUTOCONTRAST = 23

#: name -> code, for every op (torchvision's functional names).
OP_CODES = {
    "noop": NOOP,
    "affine": AFFINE,
    "adjust_brightness": BRIGHTNESS,
    "adjust_contrast": CONTRAST,
    "adjust_saturation": SATURATION,
    "adjust_hue": HUE,
    "adjust_sharpness": SHARPNESS,
    "posterize": POSTERIZE,
    "solarize": SOLARIZE,
    "autocontrast": AUTOCONTRAST,
    "equalize": EQUALIZE,
    "invert": INVERT,
    "rgb_to_grayscale": GRAYSCALE,
    "gaussian_blur": GAUSSIAN_BLUR,
    "fill": FILL,
    "pil_affine": PIL_AFFINE,
    "solarize_add": SOLARIZE_ADD,
    "mix_begin": MIX_BEGIN,
    "mix_add": MIX_ADD,
    "mix_end": MIX_END,
    "pil_affine_low": PIL_AFFINE_LOW,
    "pil_enhance": PIL_ENHANCE,
    "pil_hue": PIL_HUE,
    "pil_autocontrast": PIL_AUTOCONTRAST,
}

AUGMENT_COLUMNS = 8  # [code, a0, ..., a6]
NO_FILL = -1.0  # affine a6: torchvision's fill=None (zero padding, no fill blend at the border)

ERASE_COLUMNS = 8  # [apply, top, left, height, width, v0, v1, v2]
ERASE_OFF = 0
ERASE_VALUE = 1
ERASE_RANDOM = 2
