"""Datasets whose samples are decoded by spdl_torch's native (GIL-releasing) decoders."""

from ._fused import MAX_IMAGE_BYTES, FileListDataset, collate
from .folder import ImageFolder
from .shards import TarShardDataset, merge_states, write_shards

__all__ = ["FileListDataset", "ImageFolder", "MAX_IMAGE_BYTES", "TarShardDataset", "collate", "merge_states",
           "write_shards"]
