"""Datasets whose samples are decoded by spdl_torch's native (GIL-releasing) decoders: image files
(:class:`ImageFolder`, :class:`FileListDataset`), a Hugging Face ``datasets.Dataset``'s image column
(:class:`HFImageDataset`), audio (:class:`AudioDataset`, its items :class:`Waveform`), video clips
(:class:`VideoClipDataset`), tar shards (:class:`TarShardDataset`, written by :func:`write_shards`, resumed across
world sizes with :meth:`TarShardDataset.merge_states`; the member decoders in :mod:`spdl_torch.datasets.shards`), a
:class:`~spdl_torch.pipeline.Pipeline` (:class:`PipelineDataset`), and :func:`collate`, the zero-copy collate
of their batches. Importing it also gives :class:`spdl_torch.DataLoader` the native loading of the datasets users
already have (torchvision's folder datasets, ``spdl_source``: ``_convert.py``)."""

from . import _convert  # noqa: F401  (provides the loader's converter of user datasets)
from ._audio import AudioDataset, Waveform
from ._collate import collate
from ._folder import ImageFolder
from ._fused import FileListDataset
from ._hf import HFImageDataset
from ._pipeline import PipelineDataset
from ._video import VideoClipDataset
from .shards._dataset import TarShardDataset
from .shards._write import write_shards

__all__ = ["AudioDataset", "FileListDataset", "HFImageDataset", "ImageFolder", "PipelineDataset", "TarShardDataset",
           "VideoClipDataset", "Waveform", "collate", "write_shards"]
