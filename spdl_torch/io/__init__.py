"""Decoding functions: thin, typed wrappers over ``torch.ops.spdl_torch.*`` with their fake kernels.

Images: :func:`decode_image` (``mode=``: a string, or ``torchvision.io.ImageReadMode``), :func:`decode_images`
(a batch in one call: :class:`ImageBatch`), :func:`read_file`. Audio: :func:`audio_metadata`
(:class:`AudioStreamMetadata`), :func:`decode_audio` (:class:`AudioSamples`), :func:`decode_audio_batch`
(:class:`AudioBatch`). Video: :func:`video_metadata` (:class:`VideoStreamMetadata`), :func:`decode_video_frames`
(:class:`VideoFrames`), :func:`decode_video_clips` (:class:`VideoClips`). The native thread pool:
:func:`set_num_threads`, :func:`get_num_threads`; the batch memory pool: :func:`batch_memory_stats`,
:func:`set_batch_memory_capacity`. The default limits, read at each call: :data:`limits` (its attributes
``image_pixels``, ``image_bytes``, ``audio_samples``, ``video_frames``, ``video_output_bytes``; set them there, as
Pillow's ``Image.MAX_IMAGE_PIXELS``).
"""

from .._limits import limits
from . import _cuda_batch  # noqa: F401  (the fake kernel of decode_images_cuda)
from ._audio import audio_metadata, decode_audio, decode_audio_batch
from ._batch import decode_images, get_num_threads, set_num_threads
from ._file import read_file
from ._image import decode_image
from ._memory import batch_memory_stats, set_batch_memory_capacity
from ._results import (AudioBatch, AudioSamples, AudioStreamMetadata, ImageBatch, VideoClips, VideoFrames,
                       VideoStreamMetadata)
from ._video import decode_video_frames, video_metadata
from ._video_clips import decode_video_clips

__all__ = [
    # images
    "ImageBatch", "decode_image", "decode_images", "read_file",
    # audio
    "AudioBatch", "AudioSamples", "AudioStreamMetadata", "audio_metadata", "decode_audio", "decode_audio_batch",
    # video
    "VideoClips", "VideoFrames", "VideoStreamMetadata", "decode_video_clips", "decode_video_frames", "video_metadata",
    # the native thread pool and the batch memory pool
    "batch_memory_stats", "get_num_threads", "set_batch_memory_capacity", "set_num_threads",
    # the default limits
    "limits",
]
