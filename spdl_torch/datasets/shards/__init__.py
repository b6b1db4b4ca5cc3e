"""Tar (WebDataset) shards: reading (:class:`TarShardDataset`, local or ``http(s)://``), writing
(:func:`write_shards`), the global sample order and its resumable state (:func:`merge_states`), and remote reads
(:class:`HttpFetch`, :class:`RetryPolicy`, any ``async def fetch(url, start, stop) -> bytes``).

Modules: ``_tar`` (tarfile reader, samples by key), ``_order`` (global order, split over ranks and workers),
``_stream`` (sources and one unit's reader), ``_index`` (``index.json`` as untrusted input: paths
resolved under the index, bounded reads), ``_members`` (member -> decoder mapping, fused image batches),
``_batch_decoders`` (audio / video members decoded one batch per call),
``_remote`` (async range fetch, retries, streams), ``_cache`` (bounded read-ahead cache), ``_write``,
``_dataset``.
"""

from ._batch_decoders import AudioBatchDecoder, BatchDecoder, VideoClipBatchDecoder
from ._dataset import TarShardDataset, merge_states
from ._members import DEFAULT_DECODERS, IMAGE_EXTS
from ._http import HttpFetch
from ._remote import FetchStatusError, RetryPolicy, TransientFetchError
from ._write import write_shards

__all__ = ["AudioBatchDecoder", "BatchDecoder", "DEFAULT_DECODERS", "FetchStatusError", "HttpFetch", "IMAGE_EXTS",
           "RetryPolicy", "TarShardDataset", "TransientFetchError", "VideoClipBatchDecoder", "merge_states",
           "write_shards"]
