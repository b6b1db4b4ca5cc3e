"""Datasets whose samples are decoded by spdl_torch's native (GIL-releasing) decoders: image files
(:class:`ImageFolder`, :class:`FileListDataset`), audio (:class:`AudioDataset`, its items :class:`Waveform`), video
clips (:class:`VideoClipDataset`), tar shards (:class:`TarShardDataset`, written by :func:`write_shards`, resumed
across world sizes with :func:`merge_states`; the member decoders in :mod:`spdl_torch.datasets.shards`), a
:class:`~spdl_torch.pipeline.Pipeline` (:class:`PipelineDataset`), and :func:`collate`, the zero-copy collate
of their batches."""

from ._audio import AudioDataset, Waveform
from ._collate import collate
from ._folder import ImageFolder
from ._fused import FileListDataset
from ._pipeline import PipelineDataset
from ._video import VideoClipDataset
from .shards._dataset import TarShardDataset, merge_states
from .shards._write import write_shards

__all__ = ["AudioDataset", "FileListDataset", "ImageFolder", "PipelineDataset", "TarShardDataset", "VideoClipDataset",
           "Waveform", "collate", "merge_states", "write_shards"]
