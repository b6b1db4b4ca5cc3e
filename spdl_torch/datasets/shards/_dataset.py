"""``TarShardDataset``: WebDataset tar shards (local, ``http(s)://`` or object storage: ``s3://``, ``gs://``,
``az://``), in a global order that does not depend on
the number of ranks or worker threads, resumable exactly (same split) or across another split (see
:mod:`._order` for the definitions and :mod:`._members` for what a sample becomes)."""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch
from torch.utils.data import IterableDataset

from .._fused import FusedBatchMixin
from ._members import IMAGE_EXTS, as_mapping, decode_stream
from ._order import Layout, Split, intervals_len, normalize, subtract, take
from ._remote import FetchFn, RetryPolicy
from ._stream import ShardSet, unit_samples

__all__ = ["STATE_FORMAT", "TarShardDataset"]

STATE_FORMAT = "spdl_torch.TarShardDataset/1"
MERGED_FORMAT = "spdl_torch.TarShardDataset.merged/1"
_COPY_IDS = ("owner", "iterated_by")  # entries of the merged state's box that hold a dataset copy's id()
_ITSELF = "itself"  # in a pickled or deep-copied box: the entry named the dataset copied


class TarShardDataset(IterableDataset):
    """Samples of WebDataset tar shards: members ``<key>.<ext>`` grouped by key, read sequentially.

    Args:
        sources: shard paths / URLs (plain or gzip tars; ``http(s)://``, ``s3://``, ``gs://``, ``az://``,
            ``abfs[s]://``), one path or URL, a brace pattern as WebDataset writes them
            (``"s3://bucket/train/shard-{000000..000999}.tar"``), or the ``index.json`` that
            :func:`spdl_torch.datasets.write_shards` writes (then no shard is read to count its samples; without
            it every shard's headers are read once, here); a directory or object prefix (ending in ``/``):
            its ``index.json`` when it has one, else its ``*.tar`` / ``*.tar.gz`` in name order. An index is untrusted
            input: the shards and member tables it names must be relative paths below its own directory or URL
            (no absolute path, ``..``, other host or scheme: ``ValueError`` naming the entry), and the index
            and its member tables are read up to a bound (256 MiB; a table up to its shard's ``num_bytes``
            plus 1 MiB): a longer one is an error, not read further.
        transform: image mode: a torchvision (v2 or v1) transform; the sample's image member (first of
            ``image_exts``) and ``.cls`` label give ``(image, label)`` as ``ImageFolder`` does, and a fusable
            prefix runs in one ``decode_images`` call per ``batch_size`` samples (a uint8 or float
            Tensor[N, 3, H, W] whose rows are the images; :func:`spdl_torch.datasets.collate` returns it without
            a copy when the loader's ``batch_size`` is the same). ``None``: dict mode (see ``decoders``).
        target_transform: applied to the integer label (image mode).
        batch_size: samples per decode call (image mode, and batch decoders in dict mode); give the loader's
            ``batch_size``.
        shuffle: shuffle shards and samples (else shard order, file order).
        shuffle_buffer: samples per shuffle block (see :mod:`spdl_torch.datasets.shards._order`): memory holds
            up to two blocks of encoded members per worker (the next block is read while the current one is
            consumed; local shards with a member table hold none: they are read sample by sample); larger
            mixes more shards. A remote worker's first sample of a block waits for the whole block's bytes.
            Without shuffling too, samples are read a block at a time (one range request per block and
            shard, not one per sample).
        seed: seed of the order and of the random augmentations (per sample: ``(seed, epoch, index)``); every
            rank must use the same one.
        rank, world_size: this process' rank (default: the default process group's, else ``RANK`` /
            ``WORLD_SIZE``, else ``(0, 1)``).
        drop_last: ranks get ``len // world_size`` samples (the tail dropped) instead of ``ceil(len /
            world_size)`` (padded by repeating from the start), as ``DistributedSampler``.
        decoders: dict mode: ``{ext: callable(uint8 Tensor[num_bytes]) -> value}``, merged over the default
            decoders: ``cls`` -> int (``int(text.strip())``), ``txt`` -> str (UTF-8), ``json`` -> the parsed
            value (``json.loads``). A key adds a decoder or replaces the default of its extension; a value
            ``None`` drops that default (``{"cls": None, "txt": None, "json": None}``: no member decoded);
            other members stay uint8 tensors (views of their read buffers). A
            :class:`~spdl_torch.datasets.shards.BatchDecoder` decodes its member of ``batch_size`` samples in
            one native call: audio (:class:`~spdl_torch.datasets.shards.AudioBatchDecoder`, values
            :class:`~spdl_torch.datasets.Waveform`) and video clips
            (:class:`~spdl_torch.datasets.shards.VideoClipBatchDecoder`), e.g. ``decoders={"flac":
            AudioBatchDecoder(sample_rate=16000, duration=2.0, random_crop=True)}`` (``cls``, ``txt`` and
            ``json`` still decoded). A value that is neither a callable, a ``BatchDecoder`` nor ``None`` raises
            ``TypeError``.
        image_exts, label_ext: which members image mode reads (``label_ext=None``: label ``None``).
        on_error: ``"raise"``: a damaged member or shard raises :class:`spdl_torch.DecodeError` naming the
            shard, the key and the member (a shard that cannot be read at all, missing or unreachable, raises
            its ``OSError``); ``"skip"``: the samples lost are skipped, each counted in ``skipped`` (a list of
            messages, one per lost sample, shared by ``spdl_torch.DataLoader``'s worker threads; each of torch's
            worker processes has its own copy), with one ``RuntimeWarning`` per damage.
            A gzip shard's CRC is checked at its end, after its samples were read.
        fetch: ``async def fetch(url, start, stop) -> bytes`` for URLs (default: aiohttp for ``http(s)://``, the
            ``remote`` extra; obstore for object URLs, the ``cloud`` extra; the contract:
            :mod:`spdl_torch.datasets.shards._remote`).
        storage_options: settings of the object stores (obstore's keys: ``{"region": ..., "endpoint": ...,
            "aws_access_key_id": ..., "skip_signature": True}``; ``"profile"``: an AWS profile). Without them,
            and for every setting they leave out, the environment (``AWS_ACCESS_KEY_ID``,
            ``AWS_SECRET_ACCESS_KEY``, ``AWS_SESSION_TOKEN``, ``AWS_REGION`` / ``AWS_DEFAULT_REGION``,
            ``AWS_ENDPOINT_URL``; an ``http://`` endpoint is allowed), then the AWS credentials and config
            files (``AWS_PROFILE``), then the instance's role; never an index. See
            :mod:`spdl_torch.datasets.shards._object_store`.
        retry: :class:`RetryPolicy` of every range request (timeout, attempts, backoff, jitter).
        max_concurrency: range requests in flight, process-wide, per fetch function.
        chunk_size, read_ahead: bytes per range request; requests a stream keeps in flight ahead of its reader.
        cache_dir, cache_bytes: optional local cache of remote shards, bounded to ``cache_bytes``; the next
            shard of a worker is downloaded into it while the current one is read.
        max_pixels: as :class:`~spdl_torch.datasets.ImageFolder`.
        warn_unfused, require_fused: as :class:`~spdl_torch.datasets.ImageFolder`.

    Order: the epoch's global order G is a pure function of ``(seed, epoch, shards, shuffle_buffer)``;
    rank ``r`` delivers its contiguous part of G, split among the loader's worker threads contiguously; the
    loader interleaves the workers' batches. The same samples, in the same per-worker order, for any completion
    order. ``len(ds)`` is this rank's sample count (equal on every rank).

    Resume: ``spdl_torch.DataLoader.state_dict()`` holds each worker's :meth:`state_dict` (a few integers);
    ``load_state_dict`` of the loader resumes the same split exactly (same samples, order, augmentations).
    For another world size or thread count, combine every rank's loader state with :meth:`merge_states` and
    call :meth:`load_state_dict` of a new dataset with it: every sample of the epoch not consumed is delivered
    exactly once (plus padding repeats when the remainder does not divide evenly, as ``DistributedSampler``),
    the remainder keeping its global order and split anew. The remainder is delivered once, by the first
    iteration (as a loaded state of torchdata's ``StatefulDataLoader`` is consumed by the next ``iter()``); the
    epochs after it are whole, numbered on from the saved one (the first ``set_epoch`` value is the saved epoch),
    also for new loaders over the same dataset. With torch's DataLoader and worker processes the main process
    sees an epoch start only through :meth:`set_epoch`: call it before each epoch (as for ``DistributedSampler``).

    Copies: ``copy.deepcopy`` and ``pickle`` keep the state (a loaded merged remainder included: the copy delivers
    it once, as the dataset that loaded it) and the cache directory; the cache's lock and the HTTP connections
    are the copy's own. ``pickle`` needs picklable ``transform``, ``decoders`` and ``fetch``.

    Raises:
        ValueError: bad arguments; no shard; an index of another format, with a bad entry, one naming a file
            outside its directory or URL, or longer than its bound; a prefix without an index or shards, an
            ``http(s)://`` prefix (a web server cannot be listed).
        TypeError: ``decoders`` is not a mapping, or holds a value that is neither a callable, a ``BatchDecoder``
            nor ``None``.
        ImportError: an object URL without obstore installed (the message names the ``cloud`` extra).
        OSError, spdl_torch.DecodeError: a shard cannot be read while counting its samples; the index or a
            prefix cannot be read (a missing bucket or object, denied access: the URL, the status and the
            store's error code named, no credential).
    """

    _init_fusion = FusedBatchMixin._init_fusion
    _plan_text = FusedBatchMixin._plan_text
    _max_pixels = FusedBatchMixin._max_pixels

    def __init__(self, sources: Any, *, transform: Callable | None = None, target_transform: Callable | None = None,
                 batch_size: int = 32, shuffle: bool = True, shuffle_buffer: int = 1000, seed: int = 0,
                 rank: int | None = None, world_size: int | None = None, drop_last: bool = False,
                 decoders: Mapping[str, Callable | None] | None = None, image_exts: Sequence[str] = IMAGE_EXTS,
                 label_ext: str | None = "cls", on_error: str = "raise", fetch: FetchFn | None = None,
                 retry: RetryPolicy | None = None, max_concurrency: int = 16, chunk_size: int = 4 << 20,
                 read_ahead: int = 4, cache_dir: str | os.PathLike | None = None, cache_bytes: int = 0,
                 storage_options: Mapping[str, Any] | None = None, max_pixels: int | None = None,
                 warn_unfused: bool = True, require_fused: bool = False) -> None:
        from ..._ranks import resolve_rank
        from ...transforms import fuse

        if on_error not in ("raise", "skip"):
            raise ValueError(f"TarShardDataset: on_error should be 'raise' or 'skip', got {on_error!r}")
        for name, v, lo in (("batch_size", batch_size, 1), ("shuffle_buffer", shuffle_buffer, 1),
                            ("max_concurrency", max_concurrency, 1), ("chunk_size", chunk_size, 1),
                            ("read_ahead", read_ahead, 1)):
            if not isinstance(v, int) or v < lo:
                raise ValueError(f"TarShardDataset: expected an int {name} >= {lo}, got {name}={v!r}")
        if storage_options is not None and not isinstance(storage_options, Mapping):
            raise TypeError(f"TarShardDataset: storage_options should be a dict, got {type(storage_options).__name__}")
        if cache_dir is not None and cache_bytes <= 0:
            raise ValueError(f"TarShardDataset: cache_dir needs cache_bytes > 0, got {cache_bytes=}")
        self.rank, self.world_size = resolve_rank(rank, world_size)
        self.transform, self.target_transform = transform, target_transform
        self.batch_size, self.shuffle, self.shuffle_buffer = batch_size, bool(shuffle), shuffle_buffer
        self.seed, self.epoch, self.drop_last = int(seed), 0, bool(drop_last)
        self.decoders = as_mapping(decoders)
        self.image_exts, self.label_ext = tuple(image_exts), label_ext
        self.on_error = on_error
        self.skipped: list[str] = []
        cache = None
        if cache_dir is not None:
            from ._remote import ShardCache

            cache = ShardCache(cache_dir, cache_bytes)
        self.shards = ShardSet(sources, fetch=fetch, policy=retry or RetryPolicy(), max_concurrency=max_concurrency,
                               chunk_size=chunk_size, read_ahead=read_ahead, cache=cache,
                               storage_options=storage_options,
                               on_damage=self._skip_uncounted if on_error == "skip" else None)
        self.plan = fuse(transform) if transform is not None else None
        self._init_fusion(warn_unfused, require_fused, True, max_pixels, None)
        self._unit_state: dict[str, Any] | None = None  # a worker's saved state, loaded before iter()
        # a merged state loaded (shared by the loader's worker copies): the remainder of its epoch, for the first
        # epoch started only; "offset" maps set_epoch values to epochs; "owner": the copy it was loaded into
        self._resume: dict[str, Any] = {"merged": None, "offset": None}
        self._progress: dict[str, Any] | None = None

    def spdl_native_loading(self) -> bool:
        """Whether native ops produce the samples: the image transform fully fused (or none) and every member
        decoder one of spdl_torch's (the small default label/text decoders, or its audio / video batch
        decoders). :class:`spdl_torch.DataLoader` then loads on threads, else in worker processes."""
        from ._members import DEFAULT_DECODERS

        defaults = list(DEFAULT_DECODERS.values())
        ours = all(any(d is f for f in defaults) or type(d).__module__.startswith("spdl_torch.")
                   for d in self.decoders.values())
        return ours and (self.transform is None or (self.plan is not None and self.plan.native))

    # -- the plan --------------------------------------------------------------------------------
    @property
    def num_samples(self) -> int:
        """Samples in all shards."""
        return sum(self.shards.counts)

    def layout(self, epoch: int | None = None) -> Layout:
        """The global order of ``epoch`` (default: the current one)."""
        return Layout(self.shards.counts, self.seed, self.epoch if epoch is None else epoch, self.shuffle,
                      self.shuffle_buffer)

    def global_order(self, epoch: int | None = None) -> list[int]:
        """G: the epoch's global order as global sample indices (shard offset + index in the shard)."""
        lay = self.layout(epoch)
        out = []
        for p in range(lay.num_samples):
            out.append(lay.global_index(*lay.locate(lay.x_of(p))))
        return out

    def _split(self) -> Split:
        info = torch.utils.data.get_worker_info()
        t, n = (0, 1) if info is None else (info.id, info.num_workers)
        return Split(self.world_size, self.rank, n, t, self.drop_last)

    def _base(self, epoch: int) -> list[tuple[int, int]]:
        box = self._resume
        merged = box["merged"]
        if merged is not None and (box["offset"] is None or merged["epoch"] == epoch):
            return [tuple(iv) for iv in merged["remaining"]]
        return [(0, self.num_samples)]

    def __len__(self) -> int:
        return Split(self.world_size, self.rank, 1, 0, self.drop_last).rank_size(intervals_len(self._base(self.epoch)))

    def set_epoch(self, epoch: int) -> None:
        """Selects the epoch (``spdl_torch.DataLoader`` calls it on every worker's copy). After
        :meth:`load_state_dict` of a merged state, the first epoch set is the saved epoch and later ones follow
        it (the value given plus a fixed offset); the next epoch started (another value, or the same value again
        once the saved remainder was iterated) is whole."""
        box = self._resume
        epoch = int(epoch)
        if box["offset"] is None and box["merged"] is not None:  # the first epoch set: the saved one
            box.update(offset=box["merged"]["epoch"] - epoch, first=epoch)
        elif box["merged"] is not None and box["owner"] == id(self) and (box["served"] or epoch != box["first"]):
            box["merged"] = None  # a new epoch starts: the saved remainder was for the one before
        self.epoch = epoch + (box["offset"] or 0)

    def _start_iteration(self) -> None:
        """Marks the saved remainder as iterated; a second iteration of the same copy without a ``set_epoch``
        between (``iter(ds)`` twice, torch's DataLoader without workers) starts a whole epoch."""
        box = self._resume
        if box["merged"] is None:
            return
        if box["offset"] is None:  # iterated before any set_epoch: this is the saved epoch, numbered as saved
            box.update(offset=0, first=box["merged"]["epoch"])
            self.epoch = box["merged"]["epoch"]
        elif box["served"] and box["owner"] == id(self) and box["iterated_by"] == id(self):
            box["merged"] = None
            return
        box.update(served=True, iterated_by=id(self))

    # -- iteration -------------------------------------------------------------------------------
    def __iter__(self):
        self._start_iteration()
        epoch = self.epoch
        split = self._split()
        base = self._base(epoch)
        part = split.part(base)
        start = 0
        saved = self._unit_state
        if saved is not None:
            self._unit_state = None
            self._check_state(saved, split, epoch, base)
            start = int(saved["consumed"])
        self._progress = progress = self._state_of(split, epoch, base, start)
        items = unit_samples(self.layout(epoch), self.shards, part, start, self._fail)
        return decode_stream(self, items, epoch, progress, self._fail)

    # -- copies ------------------------------------------------------------------------------------
    # The merged state's box is shared by the dataset and its workers' shallow copies, and names the copy that
    # loaded it ("owner") and the one that iterated it ("iterated_by") by id(). copy.copy (a worker's copy) keeps
    # the box shared; a deep copy or an unpickled dataset gets its own box, in which it takes its original's role
    # (and the other copies' roles go with them: they are not copied).
    def __copy__(self) -> TarShardDataset:
        out = type(self).__new__(type(self))
        out.__dict__.update(self.__dict__)
        return out

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_resume"] = {k: (_ITSELF if v == id(self) else None) if k in _COPY_IDS else v
                            for k, v in self._resume.items()}
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        box = self._resume
        for k in _COPY_IDS:
            if box.get(k) == _ITSELF:
                box[k] = id(self)

    def _skip_uncounted(self, error: BaseException) -> None:
        """A shard without an index damaged where it is counted (``on_error="skip"``): its samples from the damage
        on are not counted, so never read; told once, as one entry of ``skipped``."""
        self.skipped.append(f"{error} (the shard has no index: its samples from here on are not counted)")
        warnings.warn(f"TarShardDataset: skipped: {self.skipped[-1]}", RuntimeWarning, stacklevel=3)

    def _fail(self, error: BaseException) -> None:
        if self.on_error == "raise":
            raise error
        self.skipped.append(str(error))
        if not getattr(error, "lost_with_another", False):  # the samples lost with it were told of in its warning
            warnings.warn(f"TarShardDataset: skipped: {error}", RuntimeWarning, stacklevel=2)

    def __repr__(self) -> str:
        if self.transform is not None:
            what = self._plan_text()
        else:
            what = "dict mode, decoders: " + (", ".join(f"{ext}: {_describe(d)}" for ext, d in self.decoders.items())
                                              or "none (every member a uint8 tensor)")
        shards = self.shards.names
        where = shards[0] if len(shards) == 1 else f"{shards[0]} ... {shards[-1]}"
        what = what.replace("\n", "\n    ")
        return (f"{type(self).__name__}(num_shards={len(shards)} ({where}), num_samples={self.num_samples}, "
                f"rank={self.rank}/{self.world_size}, shuffle={self.shuffle}, shuffle_buffer={self.shuffle_buffer}, "
                f"seed={self.seed}, epoch={self.epoch},\n    {what}\n)")

    # -- state -------------------------------------------------------------------------------------
    def _state_of(self, split: Split, epoch: int, base: list, consumed: int) -> dict[str, Any]:
        return {"format": STATE_FORMAT, "seed": self.seed, "epoch": epoch, "num_samples": self.num_samples,
                "shuffle": self.shuffle, "shuffle_buffer": self.shuffle_buffer, "drop_last": self.drop_last,
                "world_size": split.world_size, "rank": split.rank, "num_workers": split.num_workers,
                "worker": split.worker, "base": [list(iv) for iv in base], "consumed": consumed}

    def state_dict(self) -> dict[str, Any]:
        """This worker's position: the split, the order's parameters and the samples of its part consumed."""
        if self._progress is not None:
            return dict(self._progress)
        if self._unit_state is not None:
            return dict(self._unit_state)
        split = self._split()
        box = self._resume
        epoch = box["merged"]["epoch"] if box["merged"] is not None and box["offset"] is None else self.epoch
        return self._state_of(split, epoch, self._base(epoch), 0)

    def _check_state(self, state: dict, split: Split, epoch: int, base: list) -> None:
        mine = self._state_of(split, epoch, base, 0)
        for k in ("seed", "epoch", "num_samples", "shuffle", "shuffle_buffer", "drop_last", "world_size", "rank",
                  "num_workers", "worker", "base"):
            if state.get(k) != mine[k]:
                raise ValueError(
                    f"TarShardDataset.load_state_dict: the state has {k}={state.get(k)!r:.100}, this worker has "
                    f"{mine[k]!r:.100}: a state resumes only the same split; for another world size or number of "
                    "workers, load TarShardDataset.merge_states(all ranks' states) into a new dataset")

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Loads a worker's :meth:`state_dict` (the loader does, per worker, before its ``iter()``) or a
        :meth:`merge_states` result (before the loader is created: the saved epoch's remaining samples, split
        for this dataset's ranks and the loader's workers).

        Raises:
            ValueError: not a state of this class, or of a dataset with other shards or order parameters.
        """
        fmt = state.get("format") if isinstance(state, dict) else None
        if fmt == STATE_FORMAT:
            self._unit_state = dict(state)
            self._progress = None
            return
        if fmt != MERGED_FORMAT:
            raise ValueError(f"TarShardDataset.load_state_dict: not a {STATE_FORMAT} state: {state!r:.200}")
        for k, mine in (("seed", self.seed), ("num_samples", self.num_samples), ("shuffle", self.shuffle),
                        ("shuffle_buffer", self.shuffle_buffer)):
            if state[k] != mine:
                raise ValueError(f"TarShardDataset.load_state_dict: the merged state has {k}={state[k]!r}, this "
                                 f"dataset {mine!r}")
        self._resume.update(merged=dict(state), offset=None, first=None, served=False, owner=id(self),
                            iterated_by=None)

    @staticmethod
    def merge_states(states: Sequence[Any]) -> dict[str, Any]:
        """One state for a resume with another world size or number of workers: the samples of the epoch that
        no worker of any rank has consumed (``ds.load_state_dict(TarShardDataset.merge_states(states))``).

        Args:
            states: every rank's ``spdl_torch.DataLoader.state_dict()`` (or :meth:`state_dict` of the workers); a
                worker missing from them has consumed nothing.

        Returns:
            ``{"format", "seed", "epoch", "num_samples", "shuffle", "shuffle_buffer", "remaining"}`` where
            ``remaining`` lists G's positions not consumed, as ``[start, stop)`` intervals in G's order.

        Raises:
            ValueError: no worker state; states of different epochs, splits or datasets.
        """
        return _merge_states(states)


def _describe(decoder: Any) -> str:
    name = getattr(decoder, "__name__", None)
    return name if isinstance(name, str) else repr(decoder)


def _merge_states(states: Sequence[Any]) -> dict[str, Any]:
    """:meth:`TarShardDataset.merge_states`."""
    units = []
    for s in states:
        if isinstance(s, dict) and s.get("format") == STATE_FORMAT:
            units.append(s)
        elif isinstance(s, dict) and "iter_states" in s:
            units.extend(v for v in (s["iter_states"] or {}).values() if isinstance(v, dict))
        else:
            raise ValueError(f"TarShardDataset.merge_states: not a DataLoader or TarShardDataset state: {s!r:.200}")
    if not units:
        raise ValueError("TarShardDataset.merge_states: no worker state (nothing was consumed: start the epoch afresh)")
    ref = units[0]
    same = ("seed", "epoch", "num_samples", "shuffle", "shuffle_buffer", "drop_last", "world_size", "num_workers", "base")
    consumed = []
    for u in units:
        for k in same:
            if u[k] != ref[k]:
                raise ValueError(f"TarShardDataset.merge_states: states differ in {k} ({u[k]!r:.80} vs {ref[k]!r:.80})")
        split = Split(u["world_size"], u["rank"], u["num_workers"], u["worker"], u["drop_last"])
        base = [tuple(iv) for iv in u["base"]]
        consumed += take(split.part(base), 0, int(u["consumed"]))
    base = [tuple(iv) for iv in ref["base"]]
    if ref["drop_last"]:  # the dropped tail was never going to be delivered
        n = Split(ref["world_size"], 0, 1, 0, True).rank_size(intervals_len(base)) * ref["world_size"]
        base = take(base, 0, n)
    remaining = subtract(base, normalize(consumed))
    return {"format": MERGED_FORMAT, **{k: ref[k] for k in ("seed", "epoch", "num_samples", "shuffle", "shuffle_buffer")},
            "remaining": [list(iv) for iv in remaining]}

