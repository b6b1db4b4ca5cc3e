"""From a sample's raw members to what the dataset yields: the pluggable member -> decoder mapping.

* image mode (a ``transform`` is given): the sample's image member (the first of ``image_exts`` it has) and its
  ``.cls`` label give ``(image, label)`` as ``ImageFolder`` does; with a fusable transform ``batch_size`` samples
  are decoded by one ``decode_images`` call (images are rows of one batch tensor, see
  :func:`spdl_torch.datasets.collate`), otherwise ``decode_image`` + the transform per sample;
* dict mode (no transform): ``{"__key__", "__shard__", "__index__", <ext>: value}`` where value is
  ``decoders[ext](tensor)`` when a decoder is given for ``ext`` (the user's mapping merged over
  :data:`DEFAULT_DECODERS`: :func:`as_mapping`), else the member's uint8 Tensor[num_bytes].
  A decoder that is a :class:`BatchDecoder` (audio: ``AudioBatchDecoder``, video: ``VideoClipBatchDecoder``)
  gets that member of ``batch_size`` consecutive samples at once, as uint8 tensors (views of the read buffers,
  no copy), with their per-sample seeds ``(seed, epoch, global index)``, and decodes them in one native call;
  a plain callable gets one member at a time.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import torch

from ..._seeds import sample_seeds
from ..._errors import DecodeError
from .._collate import register_fused_batch
from ._tar import Sample

__all__ = ["AudioBatchDecoder", "BatchDecoder", "DEFAULT_DECODERS", "IMAGE_EXTS", "Item", "VideoClipBatchDecoder",
           "as_mapping", "decode_stream"]

IMAGE_EXTS = ("jpg", "jpeg", "png", "webp", "bmp", "gif", "tif", "tiff", "ppm", "pgm", "pbm")


def _text(t: torch.Tensor) -> str:
    return bytes(t.numpy()).decode("utf-8")


def _int(t: torch.Tensor) -> int:
    return int(_text(t).strip())


def _json(t: torch.Tensor) -> Any:
    return json.loads(_text(t))


#: The decoders of dict mode by default (``TarShardDataset(decoders=)`` merges the user's over them): ``cls`` ->
#: int (``int(text.strip())``), ``txt`` -> str (UTF-8), ``json`` -> the parsed value (``json.loads``).
DEFAULT_DECODERS: dict[str, Callable[[torch.Tensor], Any]] = {"cls": _int, "txt": _text, "json": _json}

SKIPPED = object()  # a sample's value when the error policy skipped it (a decoder may return None itself)

Item = tuple[int, int, str, Sample | None]  # (ordinal, global index, shard, sample) from unit_samples


def _member_error(shard: str, key: str, member: str | None, reason: str) -> DecodeError:
    where = f"{shard}: sample {key!r}" + (f", member {member!r}" if member else "")
    return DecodeError(f"{where}: {reason}", path=shard, reason=reason)


def decode_stream(ds: Any, items: Iterator[Item], epoch: int, progress: dict[str, int],
                  on_error: Callable[[BaseException], None]) -> Iterator[Any]:
    """What ``ds`` yields for ``items``; ``progress["consumed"]`` is set to one past the ordinal of each sample
    as it is yielded (a skipped sample is consumed with the next one)."""
    batched = {ext: d for ext, d in ds.decoders.items() if isinstance(d, BatchDecoder)}
    if ds.transform is None and not batched:
        for ordinal, index, shard, sample in items:
            if sample is None:
                continue
            out = _dict_or_none(ds, shard, index, sample, {}, on_error)
            if out is not None:
                progress["consumed"] = ordinal + 1
                yield out
        return
    chunk: list[tuple[int, int, str, Sample, torch.Tensor | None, Any]] = []
    for ordinal, index, shard, sample in items:
        if sample is not None:
            data = label = None
            if ds.transform is not None:
                try:
                    data, label = _image_and_label(ds, shard, sample)
                except DecodeError as e:
                    on_error(e)
                    continue
            chunk.append((ordinal, index, shard, sample, data, label))
        if len(chunk) == ds.batch_size:
            yield from _emit(ds, chunk, epoch, progress, on_error, batched)
            chunk = []
    if chunk:
        yield from _emit(ds, chunk, epoch, progress, on_error, batched)


def _dict_or_none(ds: Any, shard: str, index: int, sample: Sample, decoded: dict[str, Any],
                  on_error: Callable[[BaseException], None]) -> dict[str, Any] | None:
    try:
        return _as_dict(ds, shard, index, sample, decoded)
    except Exception as e:  # noqa: BLE001 -- a user decoder's failure, named and given to the policy
        on_error(e if isinstance(e, DecodeError) else _member_error(shard, sample.key, None, f"{type(e).__name__}: {e}"))
        return None


def _as_dict(ds: Any, shard: str, index: int, sample: Sample, decoded: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"__key__": sample.key, "__shard__": shard, "__index__": index}
    for ext, t in sample.members.items():
        if ext in decoded:
            out[ext] = decoded[ext]
            continue
        dec = ds.decoders.get(ext)
        out[ext] = t if dec is None else dec(t)
    return out


def _image_and_label(ds: Any, shard: str, sample: Sample) -> tuple[torch.Tensor, Any]:
    members = sample.members
    ext = next((e for e in ds.image_exts if e in members), None)
    if ext is None:
        raise _member_error(shard, sample.key, None, f"no image member (one of .{', .'.join(ds.image_exts)}); "
                            f"it has {', '.join('.' + e for e in members) or 'no member'}")
    label: Any = None
    if ds.label_ext is not None:
        raw = members.get(ds.label_ext)
        if raw is None:
            raise _member_error(shard, sample.key, None, f"missing member .{ds.label_ext} "
                                f"(it has {', '.join('.' + e for e in members)})")
        try:
            label = int(_text(raw).strip())
        except (ValueError, UnicodeDecodeError):
            raise _member_error(shard, sample.key, f"{sample.key}.{ds.label_ext}",
                                f"not an integer label: {bytes(raw[:40].numpy())!r}") from None
        if ds.target_transform is not None:
            label = ds.target_transform(label)
    return members[ext], (label, f"{sample.key}.{ext}")


def _emit(ds: Any, chunk: list, epoch: int, progress: dict[str, int],
          on_error: Callable[[BaseException], None], batched: dict[str, BatchDecoder]) -> Iterator[Any]:
    if ds.transform is None:
        yield from _emit_dicts(ds, chunk, epoch, progress, on_error, batched)
        return
    if ds.plan is not None:
        images = _fused(ds, chunk, epoch, on_error)
    else:
        images = [_single(ds, c, on_error) for c in chunk]
    for c, image in zip(chunk, images):
        if image is SKIPPED:
            continue
        progress["consumed"] = c[0] + 1
        yield image, c[5][0]


def _emit_dicts(ds: Any, chunk: list, epoch: int, progress: dict[str, int],
                on_error: Callable[[BaseException], None], batched: dict[str, BatchDecoder]) -> Iterator[Any]:
    """Dict mode with batch decoders: each batch-decoded member of the chunk's samples in one call per ext."""
    decoded: list[dict[str, Any] | None] = [{} for _ in chunk]
    for ext, decoder in batched.items():
        rows = [k for k, c in enumerate(chunk) if decoded[k] is not None and ext in c[3].members]
        if not rows:
            continue

        def decode(ks: list[int], ext: str = ext, decoder: BatchDecoder = decoder) -> list[Any]:
            return _batch_call(decoder, [chunk[k][3].members[ext] for k in ks],
                               sample_seeds(ds.seed, epoch, [chunk[k][1] for k in ks]))

        def report(k: int, e: DecodeError, ext: str = ext) -> None:
            c = chunk[k]
            on_error(_member_error(c[2], c[3].key, f"{c[3].key}.{ext}", e.reason or str(e)))

        for k, value in zip(rows, _decode_skipping(decode, rows, report)):
            if value is SKIPPED:
                decoded[k] = None
            else:
                decoded[k][ext] = value
    for c, done in zip(chunk, decoded):
        if done is None:
            continue
        out = _dict_or_none(ds, c[2], c[1], c[3], done, on_error)
        if out is not None:
            progress["consumed"] = c[0] + 1
            yield out


def _batch_call(decoder: BatchDecoder, datas: list[torch.Tensor], seeds: torch.Tensor) -> list[Any]:
    """``decoder.decode_batch(datas, seeds)``, checked: one value per member. A failure that does not say which
    member it was (any other exception, or a DecodeError without ``sample_index``: a user's decoder) is
    narrowed down by decoding the members one at a time: the first that fails alone is the bad one."""
    try:
        values = decoder.decode_batch(datas, seeds)
    except DecodeError as e:
        if e.sample_index is not None:
            raise
        failure: Exception = e
    except Exception as e:  # noqa: BLE001 -- a user's decoder: found out below
        failure = e
    else:
        if len(values) != len(datas):
            raise ValueError(f"{decoder!r}.decode_batch returned {len(values)} values for {len(datas)} members")
        return list(values)
    for j in range(len(datas)):
        try:
            decoder.decode_batch(datas[j:j + 1], seeds[j:j + 1])
        except Exception as e:  # noqa: BLE001 -- reported as member j's failure
            reason = e.reason if isinstance(e, DecodeError) and e.reason else f"{type(e).__name__}: {e}"
            raise DecodeError(f"sample {j}: {reason}", sample_index=j, reason=reason) from e
    raise failure  # no member fails alone


def _decode_skipping(decode: Callable[[list[int]], Any], rows: list[int],
                     report: Callable[[int, DecodeError], None]) -> list[Any]:
    """``decode(rows)``'s values, one per row; when it raises a :class:`DecodeError` whose ``sample_index`` is
    row j's position, ``report(row, error)`` (which raises under ``on_error="raise"``) and decode the other
    rows again in one call, :data:`SKIPPED` in the bad row's place."""
    bad: set[int] = set()
    while True:
        live = [r for r in rows if r not in bad]
        if not live:
            return [SKIPPED] * len(rows)
        try:
            values = decode(live)
        except DecodeError as e:
            j = e.sample_index
            if j is None or not 0 <= j < len(live):
                raise
            report(live[j], e)
            bad.add(live[j])
            continue
        it = iter(values[k] for k in range(len(live)))
        return [SKIPPED if r in bad else next(it) for r in rows]


def _fused(ds: Any, chunk: list, epoch: int, on_error: Callable[[BaseException], None]) -> list[Any]:
    def decode(ks: list[int]) -> Any:
        datas = [chunk[k][4] for k in ks]
        seeds = sample_seeds(ds.seed, epoch, [chunk[k][1] for k in ks]) if ds.plan.random else None
        images = ds.plan(datas, seeds, max_pixels=ds._max_pixels())
        if isinstance(images, torch.Tensor):
            register_fused_batch(images)
        return images

    def report(k: int, e: DecodeError) -> None:
        c = chunk[k]
        on_error(_member_error(c[2], c[3].key, c[5][1], e.reason or str(e)))

    return _decode_skipping(decode, list(range(len(chunk))), report)


def _single(ds: Any, c: tuple, on_error: Callable[[BaseException], None]) -> Any:
    from ...io import decode_image
    from ..._pil import to_pil

    try:
        image = decode_image(c[4], max_pixels=ds._max_pixels())
    except DecodeError as e:
        on_error(_member_error(c[2], c[3].key, c[5][1], e.reason or str(e)))
        return SKIPPED
    if ds._pil_input:
        image = to_pil(image)
    return ds.transform(image)


def as_mapping(decoders: Mapping[str, Callable | None] | None) -> dict[str, Callable]:
    """The member decoders of dict mode: ``decoders`` merged over :data:`DEFAULT_DECODERS`; a key adds a decoder or
    replaces the default one of its extension, a value ``None`` drops that extension's decoder (its members stay
    uint8 tensors).

    Raises:
        TypeError: ``decoders`` is not a mapping, or one of its values is neither a callable, a
            :class:`BatchDecoder` nor ``None``.
    """
    if decoders is None:
        decoders = {}
    if not isinstance(decoders, Mapping):
        raise TypeError(f"TarShardDataset: decoders: expected a mapping {{ext: decoder or None}}, got "
                        f"{type(decoders).__name__}")
    for ext, dec in decoders.items():
        if dec is not None and not callable(dec) and not isinstance(dec, BatchDecoder):
            raise TypeError(f"TarShardDataset: decoders[{ext!r}]: expected a callable, a BatchDecoder or None (no "
                            f"decoder), got {type(dec).__name__}")
    merged = {**DEFAULT_DECODERS, **decoders}
    return {ext: dec for ext, dec in merged.items() if dec is not None}


class BatchDecoder:
    """Base class of the decoders that take a batch of members: subclasses implement :meth:`decode_batch`."""

    def decode_batch(self, datas: list[torch.Tensor], seeds: torch.Tensor) -> list[Any]:
        """The decoded values of ``datas`` (B uint8 Tensor[num_bytes], the members' bytes), in order.

        Args:
            datas: the members, one per sample that has this member.
            seeds: int64 Tensor[B], the samples' seeds (from ``(seed, epoch, global index)``).

        Raises:
            spdl_torch.DecodeError: a member cannot be decoded; ``sample_index`` is its position in ``datas``
                (the dataset names the shard, key and member and applies its ``on_error`` policy).
        """
        raise NotImplementedError


class AudioBatchDecoder(BatchDecoder):
    """Audio members (any format FFmpeg demuxes) decoded, mixed, resampled and cropped by one
    :func:`spdl_torch.io.decode_audio_batch` call per batch, exactly as :class:`spdl_torch.datasets.AudioDataset`
    decodes files (the ffmpeg CLI's samples).

    Each value is a :class:`spdl_torch.datasets.Waveform` ``(data Tensor[C, n], lengths n)``: float32
    (nominally in [-1, 1]; lossy codecs can exceed it, as the CLI's samples do) or int16, C = ``num_channels``,
    at ``sample_rate`` Hz; collated (``default_collate``) into ``Waveform(data Tensor[B, C, N], lengths int64
    Tensor[B])``, zero-padded.

    Args:
        sample_rate: output rate in Hz.
        num_channels: output channels (the CLI's ``-ac`` rule).
        duration: crop length in seconds (n <= N = round(duration * sample_rate)); ``None``: whole members.
        random_crop: with ``duration``: each crop starts at a sample drawn from the sample's seed (the same for
            any thread count, rank count or order; a new crop each epoch); ``False``: the first ``duration``
            seconds.
        dtype: ``torch.float32`` or ``torch.int16``.

    Raises:
        ValueError: ``random_crop`` without ``duration``.
    """

    def __init__(self, *, sample_rate: int = 16000, num_channels: int = 1, duration: float | None = None,
                 random_crop: bool = False, dtype: torch.dtype = torch.float32) -> None:
        from .._audio import AudioDataset

        self._decoder = AudioDataset([], sample_rate=sample_rate, num_channels=num_channels, duration=duration,
                                     random_crop=random_crop, seed=0, dtype=dtype)

    def decode_batch(self, datas: list[torch.Tensor], seeds: torch.Tensor) -> list[Any]:
        from .._audio import Waveform

        return [Waveform(w, w.shape[-1]) for w in self._decoder._decode(datas, seeds)]

    def __repr__(self) -> str:
        d = self._decoder
        return (f"AudioBatchDecoder(sample_rate={d.sample_rate}, num_channels={d.num_channels}, "
                f"duration={d.duration}, random_crop={d.random_crop}, dtype={d.dtype})")


class VideoClipBatchDecoder(BatchDecoder):
    """Video members as clips, decoded by one :func:`spdl_torch.io.decode_video_clips` call per batch, exactly
    as :class:`spdl_torch.datasets.VideoClipDataset` decodes files (its arguments, fused transform prefix and
    per-clip remainder).

    Each value is a Tensor[N, T, 3, H, W] (``dimension_order="NCTHW"``: [N, 3, T, H, W]) of ``num_clips`` clips of
    ``num_frames_per_clip`` frames; with a fully fused transform they are the rows of one batch tensor, which
    :func:`spdl_torch.datasets.collate` returns without a copy. Random clip starts and geometry are drawn from
    the sample's seed. Without a transform whose first step fuses, each video is decoded at its own size.

    Args:
        num_frames_per_clip, num_indices_between_frames, num_clips, transform, sampling, seconds_between_frames,
        dimension_order, seek_mode, num_ffmpeg_threads, max_pixels, max_frames, warn_unfused: as
        :class:`spdl_torch.datasets.VideoClipDataset`.
    """

    def __init__(self, num_frames_per_clip: int = 16, num_indices_between_frames: int = 1, num_clips: int = 1,
                 transform: Callable | None = None, *, sampling: str | None = None, seconds_between_frames: float = 0.0,
                 dimension_order: str = "NTCHW", seek_mode: str = "exact", num_ffmpeg_threads: int = 1,
                 max_pixels: int | None = None, max_frames: int | None = None, warn_unfused: bool = True) -> None:
        from .._video import VideoClipDataset

        self._decoder = VideoClipDataset(
            [], num_frames_per_clip=num_frames_per_clip, num_indices_between_frames=num_indices_between_frames,
            num_clips=num_clips, transform=transform, sampling=sampling, seconds_between_frames=seconds_between_frames,
            dimension_order=dimension_order, seed=0, seek_mode=seek_mode, num_ffmpeg_threads=num_ffmpeg_threads,
            max_pixels=max_pixels, max_frames=max_frames, warn_unfused=warn_unfused)

    @property
    def plan(self) -> Any:
        """The fused plan of the transform (``None``: not fused)."""
        return self._decoder.plan

    def decode_batch(self, datas: list[torch.Tensor], seeds: torch.Tensor) -> list[Any]:
        return self._decoder._decode_clips(datas, seeds)

    def __repr__(self) -> str:
        from .._video import _describe_plan

        d = self._decoder
        fused = _describe_plan(d.plan)
        return (f"VideoClipBatchDecoder(num_clips={d.num_clips}, num_frames_per_clip={d.num_frames_per_clip}, "
                f"num_indices_between_frames={d.num_indices_between_frames}, sampling={d.sampling!r}, {fused})")
