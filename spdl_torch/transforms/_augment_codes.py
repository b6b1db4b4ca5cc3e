"""The op codes of ``decode_images(augment=...)`` programs and ``erase`` rows: the same numbers as
``csrc/core/augment/ops.h``. What each row does and its arguments: :func:`spdl_torch.io.decode_images`' docstring,
"Augment and erase rows"."""

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
