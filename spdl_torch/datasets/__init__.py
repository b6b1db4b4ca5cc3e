"""Datasets whose samples are decoded by spdl_torch's native (GIL-releasing) decoders."""

from ._fused import MAX_IMAGE_BYTES, FileListDataset, collate
from .audio import AudioDataset, AudioSample, Waveform, audio_collate
from ._hf import HFImageDataset
from ._pipeline import PipelineDataset
from .folder import ImageFolder
from .shards import TarShardDataset, merge_states, write_shards
from .video import VideoClipDataset

__all__ = [
    "AudioDataset", "AudioSample", "Waveform", "audio_collate",  # audio.py
    "FileListDataset", "HFImageDataset", "ImageFolder", "MAX_IMAGE_BYTES", "PipelineDataset", "TarShardDataset", "VideoClipDataset", "collate",
    "merge_states", "write_shards",
]
