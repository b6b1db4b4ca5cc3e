"""Decoding functions: thin, typed wrappers over ``torch.ops.spdl_torch.*`` with their fake kernels."""

from ._file import read_file
from ._image import MAX_IMAGE_PIXELS, ImageReadMode, decode_image

__all__ = ["ImageReadMode", "MAX_IMAGE_PIXELS", "decode_image", "read_file"]
