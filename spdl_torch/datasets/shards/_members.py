"""From a sample's raw members to what the dataset yields: the pluggable member -> decoder mapping.

* image mode (a ``transform`` is given): the sample's image member (the first of ``image_exts`` it has) and its
  ``.cls`` label give ``(image, label)`` as ``ImageFolder`` does; with a fusable transform ``batch_size`` samples
  are decoded by one ``decode_images`` call (images are rows of one batch tensor, see
  :func:`spdl_torch.datasets.collate`), otherwise ``decode_image`` + the transform per sample;
* dict mode (no transform): ``{"__key__", "__shard__", "__index__", <ext>: value}`` where value is
  ``decoders[ext](tensor)`` when a decoder is given for ``ext``, else the member's uint8 Tensor[num_bytes].
  A decoder that is a :class:`~._batch_decoders.BatchDecoder` (audio: ``AudioBatchDecoder``, video:
  ``VideoClipBatchDecoder``) decodes that member of ``batch_size`` consecutive samples in one native call.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import torch

from ..._seeds import sample_seeds
from ...errors import DecodeError
from .._collate import register_fused_batch
from ._batch_decoders import BatchDecoder
from ._tar import Sample

__all__ = ["DEFAULT_DECODERS", "IMAGE_EXTS", "Item", "decode_stream"]

IMAGE_EXTS = ("jpg", "jpeg", "png", "webp", "bmp", "gif", "tif", "tiff", "ppm", "pgm", "pbm")


def _text(t: torch.Tensor) -> str:
    return bytes(t.numpy()).decode("utf-8")


def _int(t: torch.Tensor) -> int:
    return int(_text(t).strip())


def _json(t: torch.Tensor) -> Any:
    return json.loads(_text(t))


#: The decoders of dict mode by default: ``cls`` -> int, ``txt`` -> str, ``json`` -> the parsed value.
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
    from ...transforms._plan import _to_pil

    try:
        image = decode_image(c[4], max_pixels=ds._max_pixels())
    except DecodeError as e:
        on_error(_member_error(c[2], c[3].key, c[5][1], e.reason or str(e)))
        return SKIPPED
    if ds._pil_input:
        image = _to_pil(image)
    return ds.transform(image)


def as_mapping(decoders: Mapping[str, Callable] | None) -> dict[str, Callable]:
    return dict(DEFAULT_DECODERS if decoders is None else decoders)
