"""Decoding functions: thin, typed wrappers over ``torch.ops.spdl_torch.*`` with their fake kernels."""

from ._audio import (MAX_AUDIO_SAMPLES, AudioBatch, AudioMetadata, AudioSamples, audio_metadata, decode_audio,
                     decode_audio_batch)
from . import _cuda_batch  # noqa: F401  (the fake kernel of decode_images_cuda)
from ._batch import decode_images, get_num_threads, set_num_threads
from ._file import read_file
from ._geometry import SampleGeometry, sample_geometry
from ._image import MAX_IMAGE_PIXELS, ImageReadMode, decode_image
from ._results import ImageBatch, VideoClips
from ._memory import batch_memory_stats, get_batch_memory_capacity, reset_batch_memory_peak, set_batch_memory_capacity
# video
from ._video import (MAX_VIDEO_FRAMES, MAX_VIDEO_OUTPUT_BYTES, VideoFrames, VideoMetadata, decode_video_frames,
                     video_metadata)
from ._video_clips import decode_video_clips

__all__ = [
    # audio (_audio.py)
    "AudioBatch",
    "AudioMetadata",
    "AudioSamples",
    "MAX_AUDIO_SAMPLES",
    "audio_metadata",
    "decode_audio",
    "decode_audio_batch",
    # images and the rest
    "ImageBatch",
    "ImageReadMode",
    "MAX_IMAGE_PIXELS",
    "batch_memory_stats",
    "decode_image",
    "decode_images",
    "get_batch_memory_capacity",
    "get_num_threads",
    "read_file",
    "reset_batch_memory_peak",
    "sample_geometry",
    "SampleGeometry",
    "set_batch_memory_capacity",
    "set_num_threads",
    # video
    "MAX_VIDEO_FRAMES",
    "MAX_VIDEO_OUTPUT_BYTES",
    "VideoClips",
    "VideoFrames",
    "VideoMetadata",
    "decode_video_clips",
    "decode_video_frames",
    "video_metadata",
]
