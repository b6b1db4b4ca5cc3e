"""``write_shards``: packs samples into WebDataset tar shards of a bounded size, plus an ``index.json`` with every
shard's sample count and size (what ``TarShardDataset`` needs to plan an epoch without reading the shards) and,
for plain tars, a member table per shard (``<shard>.members.json``: each sample's key, extensions, data offsets
and sizes), so that a local reader reads each member with one positioned read and parses no tar header."""

from __future__ import annotations

import io
import json
import os
import tarfile
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["INDEX_FORMAT", "INDEX_NAME", "MEMBERS_SUFFIX", "write_shards"]

INDEX_NAME = "index.json"
INDEX_FORMAT = "spdl_torch.shards/1"
MEMBERS_SUFFIX = ".members.json"


def _image_key(rel: str) -> tuple[str, str]:
    """``(key, ext)`` of an ImageFolder file (its path relative to the root): the path without its last suffix,
    dots of the file name escaped (``%2E``, ``%`` as ``%25``: WebDataset's key ends at the base name's first
    dot), directories as they are; ext the last suffix, lower case."""
    head, _, base = rel.replace(os.sep, "/").rpartition("/")
    stem, ext = os.path.splitext(base)
    stem = stem.replace("%", "%25").replace(".", "%2E")
    return (f"{head}/{stem}" if head else stem), (ext[1:].lower() or "bin")


def _samples_of(source: Any) -> Iterable[tuple[str, Mapping[str, bytes]]]:
    samples = getattr(source, "samples", None)
    if samples is not None and hasattr(source, "class_to_idx"):  # an ImageFolder: the files' bytes and labels
        root = os.fspath(source.root)
        seen: dict[str, str] = {}
        for path, label in samples:
            key, ext = _image_key(os.path.relpath(path, root))
            if key in seen:
                raise ValueError(f"write_shards: {seen[key]} and {path} would be one sample {key!r} (the file name "
                                 "without its extension): rename one of them")
            seen[key] = path
            with open(path, "rb") as f:
                data = f.read()
            yield key, {ext: data, "cls": str(int(label)).encode()}
        return
    yield from source


def write_shards(source: Any, out_dir: str | os.PathLike, *, shard_size: int = 100 << 20,
                 prefix: str = "shard", gzip: bool = False) -> list[str]:
    """Packs ``source`` into tar shards of at most ``shard_size`` bytes each (a single sample larger than that
    gets a shard of its own) and writes ``out_dir/index.json``.

    Args:
        source: an ``ImageFolder`` (its files' encoded bytes as ``<key>.<ext>`` and the class index as
            ``<key>.cls``, in the dataset's order; nothing is decoded; key: the file's path from the root
            without its last suffix, dots in the file name written ``%2E``; ext: that suffix, lower case),
            or any iterable of
            ``(key, {ext: bytes})``: the members ``<key>.<ext>`` of one sample, in the given order.
        out_dir: created if missing; shards are ``<prefix>-000000.tar`` (``.tar.gz`` with ``gzip=True``).
        shard_size: bytes per shard (tar headers and padding included; uncompressed size for gzip).

    Returns:
        The shard paths, in order.

    Raises:
        ValueError: ``shard_size`` below 10240 bytes; a key that is empty, contains a dot in its base name
            or repeats the previous one; an extension that is empty or contains ``/``; two ImageFolder files
            that differ only in their suffix.
        TypeError: a member's data is not bytes-like.
    """
    if int(shard_size) < 10240:
        raise ValueError(f"write_shards: expected shard_size >= 10240 bytes, got {shard_size=}")
    out = os.fspath(out_dir)
    os.makedirs(out, exist_ok=True)
    ext_name = ".tar.gz" if gzip else ".tar"
    paths: list[str] = []
    index: list[dict[str, Any]] = []
    tar: tarfile.TarFile | None = None
    used = count = 0
    prev_key = None

    table: list[list[Any]] = []  # this shard's member table: [key, [ext], [data offset], [size]] per sample

    def close() -> None:
        nonlocal tar
        if tar is not None:
            tar.close()
            entry = {"name": os.path.basename(paths[-1]), "num_samples": count, "num_bytes": os.path.getsize(paths[-1])}
            if not gzip:  # offsets of an uncompressed archive: the reader then parses no header
                entry["members"] = entry["name"] + MEMBERS_SUFFIX
                with open(paths[-1] + MEMBERS_SUFFIX, "w") as f:
                    json.dump({"format": INDEX_FORMAT, "samples": table}, f, separators=(",", ":"))
            index.append(entry)
            tar = None
            table.clear()

    for key, members in _samples_of(source):
        key = str(key)
        if not key or "." in key.rpartition("/")[2]:
            raise ValueError(f"write_shards: sample key {key!r} must be non-empty without a dot in its base name")
        if key == prev_key:
            raise ValueError(f"write_shards: sample key {key!r} repeats the previous sample's key")
        prev_key = key
        size = 0
        for ext, data in members.items():
            if not ext or "/" in ext:
                raise ValueError(f"write_shards: sample {key!r} has a member with an empty extension or one with "
                                 f"a '/' ({ext!r})")
            if not isinstance(data, (bytes, bytearray, memoryview)):
                raise TypeError(f"write_shards: sample {key!r} member {ext!r}: expected bytes, got {type(data).__name__}")
            size += 512 + -(-len(data) // 512) * 512
        # the end-of-archive blocks (1024 bytes) and tarfile's padding to whole 10240-byte records
        if tar is not None and count and -(-(used + size + 1024) // 10240) * 10240 > shard_size:
            close()
        if tar is None:
            paths.append(os.path.join(out, f"{prefix}-{len(paths):06d}{ext_name}"))
            tar = tarfile.open(paths[-1], "w:gz" if gzip else "w", format=tarfile.USTAR_FORMAT
                               if all(len(f"{key}.{e}") < 100 for e in members) else tarfile.PAX_FORMAT)
            used = count = 0
        row: list[Any] = [key, [], [], []]
        for ext, data in members.items():
            info = tarfile.TarInfo(f"{key}.{ext}")
            info.size = len(data)
            info.mtime = 0
            info.mode = 0o644
            tar.addfile(info, io.BytesIO(bytes(data)))
            row[1].append(ext)
            row[2].append(tar.offset - -(-len(data) // 512) * 512)  # where the data starts (after its headers)
            row[3].append(len(data))
        table.append(row)
        used += size
        count += 1
    close()
    with open(os.path.join(out, INDEX_NAME), "w") as f:
        json.dump({"format": INDEX_FORMAT, "shards": index}, f, indent=1)
    return paths
