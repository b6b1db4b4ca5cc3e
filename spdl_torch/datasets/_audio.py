"""``AudioDataset``: audio files decoded, mixed, resampled and cropped by one native call per batch, and
``Waveform``, the audio item of the datasets, which collates into one padded ``[B, C, N]`` tensor with its lengths."""

from __future__ import annotations

import dataclasses
import os
import weakref
from collections.abc import Sequence
from typing import Any

import torch
import torch.utils._pytree as pytree
from torch.utils.data import Dataset
from torch.utils.data._utils.collate import default_collate_fn_map

from .._audio_args import check_batch_args, seek_mode_arg
from .._context import loader_context
from .._errors import DecodeError, name_sample
from .._integers import as_integer

__all__ = ["AudioDataset", "Waveform"]

# Batch tensors made by AudioDataset.__getitems__, keyed by id(): their rows collate without a copy.
_AUDIO_BATCHES: "weakref.WeakValueDictionary[int, torch.Tensor]" = weakref.WeakValueDictionary()
# Those of them decoded with a fixed duration: their width N = round(duration * sample_rate) is the width any
# collate of their rows pads to, also of some of the rows (a skipped sample) or of rows of several decodes.
_FIXED_WIDTH: "weakref.WeakValueDictionary[int, torch.Tensor]" = weakref.WeakValueDictionary()


@dataclasses.dataclass(frozen=True)
class Waveform:
    """Decoded audio as the datasets give it: a sample of :class:`AudioDataset` is ``(Waveform, label)``, a
    decoded audio member of a :class:`~spdl_torch.datasets.TarShardDataset` dict sample
    (:class:`~spdl_torch.datasets.shards.AudioBatchDecoder`) is a ``Waveform``. Its fields are
    :class:`spdl_torch.io.AudioBatch`'s.

    Attributes:
        data: Tensor[C, n] for one waveform (its real samples only), Tensor[B, C, N] for a collated batch
            (waveform i in ``data[i, :, :lengths[i]]``, zero padding after it); float32, nominally in [-1, 1]
            (lossy codecs can exceed it, as the ffmpeg CLI's samples do), or int16.
        lengths: the real samples: an int (``data.shape[-1]``) for one waveform, an int64 Tensor[B] for a
            collated batch.

    ``torch.utils.data.default_collate`` (so also :func:`spdl_torch.datasets.collate` and both DataLoaders'
    default collate, at any depth of a tuple, list or dict sample) pads a list of them into one collated
    ``Waveform``, N the longest n, or round(duration * sample_rate) for waveforms of an :class:`AudioDataset` with
    a fixed ``duration`` (also when a skipped sample left some rows out): this module registers it in torch's
    ``default_collate_fn_map``. The rows of one decode batch collate to that batch without a copy.
    ``pin_memory()`` pins both fields, and the type is a pytree node (``torch.utils._pytree``), so a loader's
    ``pin_memory=True`` and ``device="cuda"`` move it.
    """

    data: torch.Tensor
    lengths: Any

    def pin_memory(self) -> Waveform:
        lengths = self.lengths.pin_memory() if isinstance(self.lengths, torch.Tensor) else self.lengths
        return Waveform(self.data.pin_memory(), lengths)


pytree.register_dataclass(Waveform)


def _batch_base(waves: list[torch.Tensor]) -> torch.Tensor | None:
    """The registered batch whose rows (each cut to its length) the waveforms are, in order; else None."""
    base = waves[0]._base
    if base is None or _AUDIO_BATCHES.get(id(base)) is not base or base.shape[0] != len(waves):
        return None
    for k, w in enumerate(waves):
        if (w._base is not base or w.dim() != 2 or w.shape[0] != base.shape[1] or w.shape[1] > base.shape[2]
                or w.stride() != base.stride()[1:] or w.storage_offset() != base.storage_offset() + k * base.stride(0)):
            return None
    return base


def _fixed_width(w: torch.Tensor) -> int:
    """The width of the fixed-duration decode batch ``w`` is a row of, else 0."""
    base = w._base
    return int(base.shape[-1]) if base is not None and _FIXED_WIDTH.get(id(base)) is base else 0


def _pad(waves: list[torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    """``(data Tensor[B, C, N], lengths int64 Tensor[B])`` of waveforms Tensor[C, n_i]: zero padding after
    each, N the longest n_i or, for rows of a fixed-duration decode, its width if larger; the registered batch
    itself when they are its rows."""
    lengths = torch.tensor([w.shape[-1] for w in waves], dtype=torch.int64)
    base = _batch_base(waves) if waves else None
    if base is not None:
        return base, lengths
    if len({(w.shape[0], w.dtype) for w in waves}) > 1:
        raise ValueError(f"collating audio: expected waveforms with the same channels and dtype, got "
                         f"{sorted({(w.shape[0], str(w.dtype)) for w in waves})}")
    n = max([int(lengths.max())] + [_fixed_width(w) for w in waves]) if len(waves) else 0
    out = torch.zeros((len(waves), waves[0].shape[0], n), dtype=waves[0].dtype)
    for k, w in enumerate(waves):
        out[k, :, : w.shape[-1]] = w
    return out, lengths


def _collate_waveforms(batch: list, *, collate_fn_map: Any = None) -> Waveform:
    """Raises ``ValueError`` when the waveforms differ in channels or dtype."""
    return Waveform(*_pad([w.data for w in batch]))


default_collate_fn_map[Waveform] = _collate_waveforms


def _index(i) -> int:
    """A sample index as an int: Python, NumPy or torch integers; a float or bool is a TypeError (it would
    be truncated to another sample)."""
    index = as_integer(i)
    if index is None:
        raise TypeError(f"AudioDataset: expected an int index, got {i!r} ({type(i).__name__})")
    return index


class AudioDataset(Dataset):
    """Audio files with labels, decoded by spdl_torch's native audio decoder, one call per batch.

    ``__getitems__(indices)`` (torch's batched fetch, used by :class:`spdl_torch.DataLoader` and
    ``torch.utils.data.DataLoader``) makes one :func:`spdl_torch.io.decode_audio_batch` call over the paths:
    each file is decoded, mixed to ``num_channels`` and resampled to ``sample_rate`` (the ffmpeg CLI's
    samples), cropped to ``duration`` seconds, into one padded batch; the samples are views of its rows.

    Args:
        paths: audio files (any format FFmpeg demuxes: WAV, FLAC, MP3, Ogg Vorbis / Opus, Matroska, ...).
        labels: one label per path (``None``: the targets are the indices).
        sample_rate: output rate in Hz.
        num_channels: output channels (the CLI's ``-ac`` rule).
        duration: crop length in seconds (N = round(duration * sample_rate) samples; shorter files are
            zero-padded, their lengths say so); ``None``: whole files, padded to the batch's longest.
        random_crop: with ``duration``: each crop starts at a random sample drawn from the sample's seed
            (``(seed, epoch, index)``: identical for any thread count or order; a new crop each epoch) over
            the header's length, or over the decoded length when the file ends before the crop (truncated
            files: see :func:`spdl_torch.io.decode_audio_batch`); ``False``: the first ``duration`` seconds.
        seed: base seed of the crops (``None``: in a ``spdl_torch.DataLoader``, the loader's base seed; else
            drawn once from torch's global RNG).
        dtype: ``torch.float32`` or ``torch.int16``.
        strict: raise ``DecodeError`` (naming the file) on a bad file, ``FileNotFoundError`` / ``OSError``
            on one that cannot be opened; ``False``: a waveform of length 0.
        seek_mode: ``"approximate"`` (the default: crops of Ogg Opus and AAC files are reached by seeking,
            Opus within the bound stated in ``docs/audio.md`` of the whole decode's samples, AAC's
            noise-substituted bands with other noise) or ``"exact"`` (bit for bit for every format: those
            decode from their start); see :func:`spdl_torch.io.decode_audio`.

    Samples are ``(Waveform, label)`` with a :class:`Waveform` ``(data Tensor[C, n], lengths n)``; torch's
    ``default_collate`` (the default of both DataLoaders, and :func:`spdl_torch.datasets.collate`) turns a list
    of them into ``[Waveform(data [B, C, N], lengths [B]), labels [B]]``, N = round(duration * sample_rate)
    with a fixed ``duration`` (whichever samples are collated: a batch that lost a sample to
    ``on_error="skip"``, samples fetched one by one), else the longest waveform's length.
    """

    def __init__(self, paths: Sequence[str | os.PathLike], labels: Sequence[Any] | None = None, *,
                 sample_rate: int = 16000, num_channels: int = 1, duration: float | None = None,
                 random_crop: bool = False, seed: int | None = None, dtype: torch.dtype = torch.float32,
                 strict: bool = True, seek_mode: str = "approximate") -> None:
        self.paths = [os.fspath(p) for p in paths]
        if labels is not None and len(labels) != len(self.paths):
            raise ValueError(f"AudioDataset: expected {len(self.paths)} labels, got {len(labels)}")
        if random_crop and duration is None:
            raise ValueError("AudioDataset: random_crop=True needs a duration")
        sample_rate, num_channels, duration, _ = check_batch_args("AudioDataset", sample_rate, num_channels,
                                                                  duration, dtype, None)
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
            raise ValueError(f"AudioDataset: expected seed as an int or None, got {seed!r}")
        self.labels = list(labels) if labels is not None else None
        self.sample_rate, self.num_channels = sample_rate, num_channels
        self.duration, self.random_crop = duration, bool(random_crop)
        self.dtype, self.strict = dtype, bool(strict)
        self.seek_mode = seek_mode_arg("AudioDataset", seek_mode)
        self._seed_given = seed is not None
        self.seed = int(torch.empty((), dtype=torch.int64).random_().item()) if seed is None else int(seed)
        self.epoch = 0

    def __len__(self) -> int:
        return len(self.paths)

    def _label(self, i: int) -> Any:
        return i if self.labels is None else self.labels[i]

    def _seed_and_epoch(self) -> tuple[int, int]:
        ctx = loader_context()
        if ctx is not None:
            return (self.seed if self._seed_given else ctx.base_seed), ctx.epoch
        return self.seed, self.epoch

    def set_epoch(self, epoch: int) -> None:
        """The epoch mixed into the crops' seeds outside ``spdl_torch.DataLoader`` (which passes its own)."""
        self.epoch = int(epoch)

    def state_dict(self) -> dict[str, int]:
        return {"seed": self.seed, "epoch": self.epoch}

    def load_state_dict(self, state: dict[str, int]) -> None:
        self.seed, self.epoch = int(state["seed"]), int(state["epoch"])

    def spdl_native_loading(self) -> bool:
        """Always true: one native call decodes a batch (:class:`spdl_torch.DataLoader` loads on threads)."""
        return True

    def __getitem__(self, index: int) -> tuple[Waveform, Any]:
        return self.__getitems__([index])[0]

    def __getitems__(self, indices: Sequence[int]) -> list[tuple[Waveform, Any]]:
        from .._seeds import sample_seeds

        indices = [_index(i) for i in indices]
        if not indices:
            return []
        paths = [self.paths[i] for i in indices]
        seeds = sample_seeds(*self._seed_and_epoch(), indices) if self.random_crop else None
        try:
            waves = self._decode(paths, seeds)
        except DecodeError as e:
            raise name_sample(e, paths) from None
        return [(Waveform(w, w.shape[-1]), self._label(i)) for w, i in zip(waves, indices)]

    def _decode(self, srcs: Sequence[Any], seeds: torch.Tensor | None) -> list[torch.Tensor]:
        """One :func:`~spdl_torch.io.decode_audio_batch` call over ``srcs`` (paths, or uint8 tensors of the
        files' bytes): each waveform Tensor[C, n] is a view of its row of the registered batch, cut to its real
        samples. ``seeds`` (int64 Tensor[B]) draw the crops when ``random_crop``. Raises the op's
        :class:`DecodeError` (``sample_index`` set) unchanged."""
        from ..io import decode_audio_batch

        b = decode_audio_batch(srcs, sample_rate=self.sample_rate, num_channels=self.num_channels,
                               duration=self.duration, seeds=seeds if self.random_crop else None, dtype=self.dtype,
                               strict=self.strict, seek_mode=self.seek_mode)
        _AUDIO_BATCHES[id(b.data)] = b.data
        if self.duration is not None:
            _FIXED_WIDTH[id(b.data)] = b.data
        lengths = b.lengths.tolist()
        return [b.data[k, :, : lengths[k]] for k in range(len(lengths))]
