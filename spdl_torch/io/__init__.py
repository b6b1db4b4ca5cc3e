"""Decoding functions: thin, typed wrappers over ``torch.ops.spdl_torch.*`` with their fake kernels."""

from ._batch import decode_images, get_num_threads, random_resized_crop_params, set_num_threads
from ._file import read_file
from ._image import MAX_IMAGE_PIXELS, ImageReadMode, decode_image

__all__ = [
    "ImageReadMode",
    "MAX_IMAGE_PIXELS",
    "decode_image",
    "decode_images",
    "get_num_threads",
    "random_resized_crop_params",
    "read_file",
    "set_num_threads",
]
