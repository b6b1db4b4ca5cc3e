"""Tar (WebDataset) shards: reading (:class:`TarShardDataset`, local or ``http(s)://``), writing
(:func:`write_shards`), the global sample order and its resumable state (:func:`merge_states`), and remote reads
(:class:`HttpFetch`, :class:`RetryPolicy`, any ``async def fetch(url, start, stop) -> bytes``).

Modules, one noun each: ``_dataset`` (the dataset, its state), ``_order`` (global order, split over ranks and
workers), ``_stream`` (sources, one unit's reader and its read-ahead thread), ``_tar`` (tarfile reader, samples by
key), ``_table`` (member tables and the positioned / ranged reads they allow), ``_index`` (``index.json`` as
untrusted input), ``_members`` (member -> decoder mapping, batch decoders, fused image batches), ``_remote``
(range fetch, retries, streams, ``HttpFetch``, the local cache), ``_write`` (``write_shards``).
"""

from ._dataset import TarShardDataset, merge_states
from ._members import DEFAULT_DECODERS, IMAGE_EXTS, AudioBatchDecoder, BatchDecoder, VideoClipBatchDecoder
from ._remote import FetchStatusError, HttpFetch, RetryPolicy, TransientFetchError
from ._write import write_shards

__all__ = ["AudioBatchDecoder", "BatchDecoder", "DEFAULT_DECODERS", "FetchStatusError", "HttpFetch", "IMAGE_EXTS",
           "RetryPolicy", "TarShardDataset", "TransientFetchError", "VideoClipBatchDecoder", "merge_states",
           "write_shards"]
