"""``write_shards``: packs samples into WebDataset tar shards of a bounded size, plus an ``index.json`` with every
shard's sample count and size (what ``TarShardDataset`` needs to plan an epoch without reading the shards) and,
for plain tars, a member table per shard (``<shard>.members.json``: each sample's key, extensions, data offsets
and sizes), so that a local reader reads each member with one positioned read and parses no tar header.

The output is a local directory or an object prefix (``s3://bucket/prefix/``, ``gs://``, ``az://``): every file is
first written under a temporary name beside its final one (an object: uploaded as it is written, multipart past
one part, see :class:`._object_store.ObjectUpload`) and given its final name once the last sample is written
(an object: a server-side copy, then the temporary one deleted; object stores have no rename), the index last."""

from __future__ import annotations

import gzip as gzip_module
import io
import json
import os
import tarfile
from collections.abc import Iterable, Mapping
from typing import Any

from ._object_store import is_object_url

__all__ = ["INDEX_FORMAT", "INDEX_NAME", "MEMBERS_SUFFIX", "write_shards"]

PART_BYTES = 8 << 20  # an object's upload part (S3's smallest part is 5 MiB)
MAX_OBJECT_SHARD = 5 << 30  # the largest object one server-side copy makes (S3's CopyObject)

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


def _check_key(key: str) -> None:
    if not key or "." in key.rpartition("/")[2]:
        raise ValueError(f"write_shards: sample key {key!r} must be non-empty without a dot in its base name")
    parts = key.split("/")
    if "\0" in key or any(p in ("", ".", "..") for p in parts):
        raise ValueError(f"write_shards: sample key {key!r} must be a relative path without NUL, empty, '.' or "
                         "'..' parts (no leading or trailing '/')")


def _check_members(key: str, members: Mapping[str, Any]) -> int:
    """The bytes the sample's members take in the archive (headers, pax headers of long names, padding).

    Raises:
        ValueError, TypeError: as :func:`write_shards`.
    """
    if not members:
        raise ValueError(f"write_shards: sample {key!r} has no member")
    size = 0
    for ext, data in members.items():
        if not isinstance(ext, str) or not ext or "/" in ext or "\0" in ext:
            raise ValueError(f"write_shards: sample {key!r} has a member with an empty extension or one with "
                             f"a '/' or NUL ({ext!r})")
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise TypeError(f"write_shards: sample {key!r} member {ext!r}: expected bytes, got {type(data).__name__}")
        size += _header_bytes(f"{key}.{ext}") + -(-len(data) // 512) * 512
    return size


def _header_bytes(name: str) -> int:
    """A member's header bytes: one ustar block when its UTF-8 name fits in the 100-byte name field, else a
    pax header (its block and its record ``"<n> path=<name>\\n"``, padded) before it."""
    n = len(name.encode())
    return 512 if n < 100 else 1024 + -(-(n + 16) // 512) * 512


def _check_prefix(prefix: str) -> None:
    if not isinstance(prefix, str) or not prefix or prefix in (".", "..") or any(c in prefix for c in "/\\\0"):
        raise ValueError(f"write_shards: prefix {prefix!r} must be a file name (no '/', '\\' or NUL; not '.' or "
                         "'..'): the shards are written in out_dir itself")


def write_shards(source: Any, out_dir: str | os.PathLike, *, shard_size: int = 100 << 20,
                 prefix: str = "shard", gzip: bool = False,
                 storage_options: Mapping[str, Any] | None = None) -> list[str]:
    """Packs ``source`` into tar shards of at most ``shard_size`` bytes each (a single sample larger than that
    gets a shard of its own) and writes ``out_dir/index.json``.

    Args:
        source: an ``ImageFolder`` (its files' encoded bytes as ``<key>.<ext>`` and the class index as
            ``<key>.cls``, in the dataset's order; nothing is decoded; key: the file's path from the root
            without its last suffix, dots in the file name written ``%2E``; ext: that suffix, lower case),
            or any iterable of
            ``(key, {ext: bytes})``: the members ``<key>.<ext>`` of one sample, in the given order.
        out_dir: a directory (created if missing) or an object prefix (``"s3://bucket/train/"``, ``gs://``,
            ``az://``; the bucket must exist); shards are ``<prefix>-000000.tar`` (``.tar.gz`` with
            ``gzip=True``).
        shard_size: bytes per shard (tar headers and padding included; uncompressed size for gzip); at most
            5 GiB for an object prefix (the largest object a server-side copy makes).
        prefix: the shards' file name start (a name, not a path: shards are written in ``out_dir``).
        storage_options: the object store's settings, as :class:`TarShardDataset`'s (the environment and the
            AWS files otherwise).

    Every file is first written under a temporary name in ``out_dir`` (``.<name>.<pid>.partial``; an object is
    uploaded as it is written, in parts of 8 MiB) and given its final name once the last sample is written, the
    index last; on an error nothing new is left behind (files of an earlier run stay as they were; an upload in
    progress is aborted, the temporary objects deleted), so no shard, table or index of a failed call is seen under
    its final name. Object stores have no rename: the final name is a server-side copy (no byte passes through
    this machine), then the temporary object is deleted; a process killed mid-write may leave ``.partial``
    objects (never read as shards).

    Returns:
        The shard paths (URLs for an object prefix), in order.

    Raises:
        ValueError: ``shard_size`` below 10240 bytes; a ``prefix`` that is not a plain file name; a key that
            is empty, contains a dot in its base name, NUL, a leading or trailing ``/``, an empty, ``.`` or
            ``..`` path part, or repeats the previous one; a sample without members; an extension that is
            empty or contains ``/`` or NUL; two ImageFolder files that differ only in their suffix. The
            message names the sample. Member names whose UTF-8 form does not fit in tar's 100-byte name field
            (long or non-ASCII keys) are written with a pax header, as tarfile and GNU tar read them.
        TypeError: a member's data is not bytes-like.
        ImportError: an object prefix without obstore installed (the ``cloud`` extra).
        OSError: a file cannot be written; the store refused an upload (a missing bucket, denied access: the URL,
            the status and the store's error code named).
    """
    if int(shard_size) < 10240:
        raise ValueError(f"write_shards: expected shard_size >= 10240 bytes, got {shard_size=}")
    _check_prefix(prefix)
    out = os.fspath(out_dir)
    if is_object_url(out):
        if int(shard_size) > MAX_OBJECT_SHARD:
            raise ValueError(f"write_shards: expected shard_size <= 5 GiB for an object prefix ({out}), got "
                             f"{shard_size=}")
        files: Any = _Objects(out, storage_options)
    else:
        files = _Files(out)
    writer = _Writer(files, prefix, ".tar.gz" if gzip else ".tar", gzip)
    try:
        prev_key = None
        for key, members in _samples_of(source):
            key = str(key)
            _check_key(key)
            if key == prev_key:
                raise ValueError(f"write_shards: sample key {key!r} repeats the previous sample's key")
            prev_key = key
            writer.add(key, members, _check_members(key, members), int(shard_size))
        writer.finish()
    except BaseException:
        writer.discard()
        raise
    return writer.paths


class _Files:
    """A local directory: temporary files renamed into place."""

    def __init__(self, out: str) -> None:
        os.makedirs(out, exist_ok=True)
        self.out = out

    def final(self, name: str) -> str:
        return os.path.join(self.out, name)

    def temp(self, final: str) -> str:
        return os.path.join(self.out, f".{os.path.basename(final)}.{os.getpid()}.partial")

    def create(self, temp: str) -> Any:
        return open(temp, "wb")

    def done(self, f: Any) -> int:
        size = f.tell()
        f.close()
        return size

    def abort(self, f: Any) -> None:
        f.close()

    def commit(self, temp: str, final: str) -> None:
        os.replace(temp, final)

    def remove(self, temp: str) -> None:
        try:
            os.remove(temp)
        except FileNotFoundError:
            pass


class _Objects:
    """An object prefix: temporary objects uploaded as written, copied to their final names, then deleted."""

    def __init__(self, out: str, storage_options: Mapping[str, Any] | None) -> None:
        from ._object_store import ObjectStoreFetch, require_obstore, split_url

        require_obstore(out)
        split_url(out)  # a bucket is named
        self.out = out.rstrip("/")
        self.client = ObjectStoreFetch(storage_options, timeout=120.0, retries=4)
        try:  # a missing bucket or bad credentials said before any sample is packed
            self.client.list(self.out + "/")
        except OSError as e:
            if "HTTP 403" not in str(e):  # a writer may lack the list permission only
                raise OSError(f"write_shards: {e}") from None

    def final(self, name: str) -> str:
        return f"{self.out}/{name}"

    def temp(self, final: str) -> str:
        head, _, name = final.rpartition("/")
        return f"{head}/.{name}.{os.getpid()}.partial"

    def create(self, temp: str) -> Any:
        return self.client.upload(temp, PART_BYTES)

    def done(self, f: Any) -> int:
        f.close()
        return f.tell()

    def abort(self, f: Any) -> None:
        f.abort()

    def commit(self, temp: str, final: str) -> None:
        self.client.copy(temp, final)
        self.client.delete(temp)

    def remove(self, temp: str) -> None:
        self.client.delete(temp)


class _Writer:
    """The shards of one ``write_shards`` call, each written to a temporary name beside its final one; the
    names change (shards, member tables, then the index) only in :meth:`finish`."""

    def __init__(self, files: Any, prefix: str, ext_name: str, gzip: bool) -> None:
        self.files, self.prefix, self.ext_name, self.gzip = files, prefix, ext_name, gzip
        self.paths: list[str] = []  # final names
        self.temps: list[tuple[str, str]] = []  # (temporary, final) of every file written
        self.index: list[dict[str, Any]] = []
        self.tar: tarfile.TarFile | None = None
        self.file: Any = None  # the open shard's file (or upload)
        self.gz: gzip_module.GzipFile | None = None  # its compressor (gzip=True)
        self.used = self.count = 0
        self.table: list[list[Any]] = []  # this shard's member table: [key, [ext], [data offset], [size]] per sample

    def _temp(self, final: str) -> str:
        temp = self.files.temp(final)
        self.temps.append((temp, final))
        return temp

    def _write_small(self, final: str, text: str) -> None:
        f = self.files.create(self._temp(final))
        try:
            f.write(text.encode())
        except BaseException:
            self.files.abort(f)
            raise
        self.files.done(f)

    def add(self, key: str, members: Mapping[str, Any], size: int, shard_size: int) -> None:
        # the end-of-archive blocks (1024 bytes) and tarfile's padding to whole 10240-byte records
        if self.tar is not None and self.count and -(-(self.used + size + 1024) // 10240) * 10240 > shard_size:
            self._close()
        if self.tar is None:
            self.paths.append(self.files.final(f"{self.prefix}-{len(self.paths):06d}{self.ext_name}"))
            self.file = self.files.create(self._temp(self.paths[-1]))
            out = self.file
            if self.gzip:  # no file name or time in the gzip header: the same samples give the same bytes
                out = self.gz = gzip_module.GzipFile(filename="", mode="wb", compresslevel=9, fileobj=self.file,
                                                     mtime=0)
            self.tar = tarfile.open(fileobj=out, mode="w", format=tarfile.USTAR_FORMAT)
            self.used = self.count = 0
        tar = self.tar
        row: list[Any] = [key, [], [], []]
        for ext, data in members.items():
            name = f"{key}.{ext}"
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mtime = 0
            info.mode = 0o644
            # ustar while the UTF-8 name fits its field (what the member table check reads), else pax
            tar.format = tarfile.USTAR_FORMAT if _header_bytes(name) == 512 else tarfile.PAX_FORMAT
            tar.addfile(info, io.BytesIO(bytes(data)))
            row[1].append(ext)
            row[2].append(tar.offset - -(-len(data) // 512) * 512)  # where the data starts (after its headers)
            row[3].append(len(data))
        self.table.append(row)
        self.used += size
        self.count += 1

    def _close(self) -> None:
        if self.tar is None:
            return
        self.tar.close()
        self.tar = None
        if self.gz is not None:
            self.gz.close()  # the gzip trailer; the file itself stays open
            self.gz = None
        f, self.file = self.file, None
        num_bytes = self.files.done(f)
        name = self.paths[-1].replace(os.sep, "/").rsplit("/", 1)[-1]
        entry = {"name": name, "num_samples": self.count, "num_bytes": num_bytes}
        if not self.gzip:  # offsets of an uncompressed archive: the reader then parses no header
            entry["members"] = entry["name"] + MEMBERS_SUFFIX
            self._write_small(self.paths[-1] + MEMBERS_SUFFIX, json.dumps({"format": INDEX_FORMAT, "samples": self.table},
                                                                          separators=(",", ":")))
        self.index.append(entry)
        self.table = []

    def finish(self) -> None:
        self._close()
        self._write_small(self.files.final(INDEX_NAME), json.dumps({"format": INDEX_FORMAT, "shards": self.index},
                                                                   indent=1))
        while self.temps:  # the index last: it names only shards already in place
            temp, final = self.temps[0]
            self.files.commit(temp, final)
            self.temps.pop(0)

    def discard(self) -> None:
        if self.tar is not None:
            try:
                self.tar.close()
            except Exception:  # noqa: BLE001 -- the file is removed anyway; the first error is the one raised
                pass
            self.tar = None
        if self.file is not None:
            try:
                self.files.abort(self.file)
            except Exception:  # noqa: BLE001 -- as above
                pass
            self.file = None
        for temp, _ in self.temps:
            try:
                self.files.remove(temp)
            except Exception:  # noqa: BLE001 -- best effort; the first error is the one raised
                pass
        self.temps = []
