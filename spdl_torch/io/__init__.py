"""Decoding functions: thin, typed wrappers over ``torch.ops.spdl_torch.*`` with their fake kernels.

Images: :func:`decode_image`, :func:`decode_images` (a batch in one call: :class:`ImageBatch`),
:class:`ImageReadMode`, :func:`read_file`. Audio: :func:`audio_metadata` (:class:`AudioStreamMetadata`),
:func:`decode_audio` (:class:`AudioSamples`), :func:`decode_audio_batch` (:class:`AudioBatch`). Video:
:func:`video_metadata` (:class:`VideoStreamMetadata`), :func:`decode_video_frames` (:class:`VideoFrames`),
:func:`decode_video_clips` (:class:`VideoClips`). The native thread pool: :func:`set_num_threads`,
:func:`get_num_threads`; the batch memory pool: :func:`batch_memory_stats`, :func:`set_batch_memory_capacity`.
The default limits, read at each call (set them here, as Pillow's ``Image.MAX_IMAGE_PIXELS``):
:data:`MAX_IMAGE_PIXELS`, :data:`MAX_IMAGE_BYTES`, :data:`MAX_AUDIO_SAMPLES`, :data:`MAX_VIDEO_FRAMES`,
:data:`MAX_VIDEO_OUTPUT_BYTES`.
"""

from .._limits import MAX_AUDIO_SAMPLES, MAX_IMAGE_BYTES, MAX_IMAGE_PIXELS, MAX_VIDEO_FRAMES, MAX_VIDEO_OUTPUT_BYTES
from . import _cuda_batch  # noqa: F401  (the fake kernel of decode_images_cuda)
from ._audio import audio_metadata, decode_audio, decode_audio_batch
from ._batch import decode_images, get_num_threads, set_num_threads
from ._file import read_file
from ._image import ImageReadMode, decode_image
from ._memory import batch_memory_stats, set_batch_memory_capacity
from ._results import (AudioBatch, AudioSamples, AudioStreamMetadata, ImageBatch, VideoClips, VideoFrames,
                       VideoStreamMetadata)
from ._video import decode_video_frames, video_metadata
from ._video_clips import decode_video_clips

__all__ = [
    # images
    "ImageBatch", "ImageReadMode", "decode_image", "decode_images", "read_file",
    # audio
    "AudioBatch", "AudioSamples", "AudioStreamMetadata", "audio_metadata", "decode_audio", "decode_audio_batch",
    # video
    "VideoClips", "VideoFrames", "VideoStreamMetadata", "decode_video_clips", "decode_video_frames", "video_metadata",
    # the native thread pool and the batch memory pool
    "batch_memory_stats", "get_num_threads", "set_batch_memory_capacity", "set_num_threads",
    # the default limits
    "MAX_AUDIO_SAMPLES", "MAX_IMAGE_BYTES", "MAX_IMAGE_PIXELS", "MAX_VIDEO_FRAMES", "MAX_VIDEO_OUTPUT_BYTES",
]
