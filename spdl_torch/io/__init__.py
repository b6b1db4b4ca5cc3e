"""Decoding functions: thin, typed wrappers over ``torch.ops.spdl_torch.*`` with their fake kernels."""

from . import _cuda_batch  # noqa: F401  (the fake kernel of decode_images_cuda)
from ._batch import decode_images, get_num_threads, random_resized_crop_params, set_num_threads
from ._file import read_file
from ._image import MAX_IMAGE_PIXELS, ImageReadMode, decode_image
from ._memory import batch_memory_stats, get_batch_memory_capacity, reset_batch_memory_peak, set_batch_memory_capacity

__all__ = [
    "ImageReadMode",
    "MAX_IMAGE_PIXELS",
    "batch_memory_stats",
    "decode_image",
    "decode_images",
    "get_batch_memory_capacity",
    "get_num_threads",
    "random_resized_crop_params",
    "read_file",
    "reset_batch_memory_peak",
    "set_batch_memory_capacity",
    "set_num_threads",
]
