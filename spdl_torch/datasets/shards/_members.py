"""From a sample's raw members to what the dataset yields: the pluggable member -> decoder mapping.

* image mode (a ``transform`` is given): the sample's image member (the first of ``image_exts`` it has) and its
  ``.cls`` label give ``(image, label)`` as ``ImageFolder`` does; with a fusable transform ``batch_size`` samples
  are decoded by one ``decode_images`` call (images are rows of one batch tensor, see
  :func:`spdl_torch.datasets.collate`), otherwise ``decode_image`` + the transform per sample;
* dict mode (no transform): ``{"__key__", "__shard__", "__index__", <ext>: value}`` where value is
  ``decoders[ext](tensor)`` when a decoder is given for ``ext``, else the member's uint8 Tensor[num_bytes].

Video and audio members plug in through ``decoders`` (``{"mp4": my_video_decoder}``) in dict mode.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import torch

from ..._seeds import sample_seeds
from ...errors import DecodeError
from .._collate import register_fused_batch
from ._tar import Sample

__all__ = ["DEFAULT_DECODERS", "IMAGE_EXTS", "Item", "decode_stream"]

IMAGE_EXTS = ("jpg", "jpeg", "png", "webp", "bmp", "gif", "tif", "tiff", "ppm", "pgm", "pbm")


def _text(t: torch.Tensor) -> str:
    return bytes(t.numpy()).decode("utf-8")


#: The decoders of dict mode by default: ``cls`` -> int, ``txt`` -> str, ``json`` -> the parsed value.
DEFAULT_DECODERS: dict[str, Callable[[torch.Tensor], Any]] = {
    "cls": lambda t: int(_text(t).strip()),
    "txt": _text,
    "json": lambda t: json.loads(_text(t)),
}

Item = tuple[int, int, str, Sample | None]  # (ordinal, global index, shard, sample) from unit_samples


def _member_error(shard: str, key: str, member: str | None, reason: str) -> DecodeError:
    where = f"{shard}: sample {key!r}" + (f", member {member!r}" if member else "")
    return DecodeError(f"{where}: {reason}", path=shard, reason=reason)


def decode_stream(ds: Any, items: Iterator[Item], epoch: int, progress: dict[str, int],
                  on_error: Callable[[BaseException], None]) -> Iterator[Any]:
    """What ``ds`` yields for ``items``; ``progress["consumed"]`` is set to one past the ordinal of each sample
    as it is yielded (a skipped sample is consumed with the next one)."""
    if ds.transform is None:
        for ordinal, index, shard, sample in items:
            if sample is None:
                continue
            try:
                out = _as_dict(ds, shard, index, sample)
            except Exception as e:  # noqa: BLE001 -- a user decoder's failure, named and given to the policy
                on_error(e if isinstance(e, DecodeError) else _member_error(shard, sample.key, None, f"{type(e).__name__}: {e}"))
                continue
            progress["consumed"] = ordinal + 1
            yield out
        return
    chunk: list[tuple[int, int, str, Sample, torch.Tensor, Any]] = []
    for ordinal, index, shard, sample in items:
        if sample is not None:
            try:
                data, label = _image_and_label(ds, shard, sample)
            except DecodeError as e:
                on_error(e)
                continue
            chunk.append((ordinal, index, shard, sample, data, label))
        if len(chunk) == ds.batch_size:
            yield from _emit(ds, chunk, epoch, progress, on_error)
            chunk = []
    if chunk:
        yield from _emit(ds, chunk, epoch, progress, on_error)


def _as_dict(ds: Any, shard: str, index: int, sample: Sample) -> dict[str, Any]:
    out: dict[str, Any] = {"__key__": sample.key, "__shard__": shard, "__index__": index}
    for ext, t in sample.members.items():
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
          on_error: Callable[[BaseException], None]) -> Iterator[Any]:
    if ds.plan is not None:
        images = _fused(ds, chunk, epoch, on_error)
    else:
        images = [_single(ds, c, on_error) for c in chunk]
    for c, image in zip(chunk, images):
        if image is None:
            continue
        progress["consumed"] = c[0] + 1
        yield image, c[5][0]


def _fused(ds: Any, chunk: list, epoch: int, on_error: Callable[[BaseException], None]) -> list[Any]:
    datas = [c[4] for c in chunk]
    seeds = sample_seeds(ds.seed, epoch, [c[1] for c in chunk]) if ds.plan.random else None
    try:
        images = ds.plan(datas, seeds, max_pixels=ds._max_pixels())
    except DecodeError as e:
        k = e.sample_index
        if k is None or not 0 <= k < len(chunk):
            raise
        bad = chunk[k]
        on_error(_member_error(bad[2], bad[3].key, bad[5][1], e.reason or str(e)))
        # skip policy: decode the others again, one call without the bad sample
        rest = chunk[:k] + chunk[k + 1:]
        out = _fused(ds, rest, epoch, on_error) if rest else []
        return out[:k] + [None] + out[k:]
    if isinstance(images, torch.Tensor):
        register_fused_batch(images)
    return [images[k] for k in range(len(chunk))]


def _single(ds: Any, c: tuple, on_error: Callable[[BaseException], None]) -> Any:
    from ...io import decode_image
    from ...transforms._plan import _to_pil

    try:
        image = decode_image(c[4], max_pixels=ds._max_pixels())
    except DecodeError as e:
        on_error(_member_error(c[2], c[3].key, c[5][1], e.reason or str(e)))
        return None
    if ds._pil_input:
        image = _to_pil(image)
    return ds.transform(image)


def as_mapping(decoders: Mapping[str, Callable] | None) -> dict[str, Callable]:
    return dict(DEFAULT_DECODERS if decoders is None else decoders)
