"""Tar (WebDataset) shards: what :class:`spdl_torch.datasets.TarShardDataset` (local or ``http(s)://``),
:func:`spdl_torch.datasets.write_shards` and :meth:`spdl_torch.datasets.TarShardDataset.merge_states` use, and
the extras a user passes them: member decoders (merged over the defaults of ``cls``, ``txt``, ``json``;
:class:`BatchDecoder`, one native call per batch: :class:`AudioBatchDecoder`, :class:`VideoClipBatchDecoder`)
and remote reads (:class:`HttpFetch`, :class:`RetryPolicy`; any ``async def fetch(url, start, stop) -> bytes``
raising :class:`FetchStatusError` for a status, ``ConnectionError`` or ``TimeoutError`` for what a retry may fix).

Modules, one noun each: ``_dataset`` (the dataset, its state), ``_order`` (global order, split over ranks and
workers), ``_stream`` (sources, one unit's reader and its read-ahead thread), ``_tar`` (tarfile reader, samples by
key), ``_table`` (member tables and the positioned / ranged reads they allow), ``_index`` (``index.json`` as
untrusted input), ``_members`` (member -> decoder mapping, batch decoders, fused image batches), ``_remote``
(range fetch, retries, streams, ``HttpFetch``, the local cache), ``_write`` (``write_shards``).
"""

from ._members import AudioBatchDecoder, BatchDecoder, VideoClipBatchDecoder
from ._remote import FetchStatusError, HttpFetch, RetryPolicy

__all__ = ["AudioBatchDecoder", "BatchDecoder", "FetchStatusError", "HttpFetch", "RetryPolicy", "VideoClipBatchDecoder"]
