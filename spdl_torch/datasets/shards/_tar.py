"""Reading WebDataset tar shards with Python's :mod:`tarfile`: members grouped into samples by key, each member's
bytes read once into its own buffer and handed on as a uint8 tensor view of it (``torch.frombuffer``, no copy);
with a member table (:class:`TableCursor`), a sample's bytes are read once into one buffer, members views of it.

A sample is a run of consecutive file members with the same key: the member path up to the first dot of its
base name (``dir/n0001.jpg`` and ``dir/n0001.cls`` are sample ``dir/n0001`` with members ``jpg`` and ``cls``), as
WebDataset writes them. Plain and gzip tars are read (the compression is detected); local files are opened
seekable, so a skipped sample costs no read of its data; streams (remote shards) are read through.
"""

from __future__ import annotations

import dataclasses
import gzip
import io
import os
import tarfile
import zlib
from collections.abc import Callable, Iterator
from typing import Any, BinaryIO

import torch

from ...errors import DecodeError

__all__ = ["Sample", "ShardCursor", "TableCursor", "count_samples", "sample_span", "split_name", "split_sample"]

# what damaged data raises (an OSError of reading the file or of a remote fetch is passed on as it is)
_DATA_ERRORS = (tarfile.TarError, EOFError, gzip.BadGzipFile, zlib.error)


class _StrictTarInfo(tarfile.TarInfo):
    """:mod:`tarfile` takes a damaged or cut header after the first for the end of the archive and drops the
    rest without a word (GNU tar reports it); here it is an error. A zero block still ends the archive, as does
    the end of the data at a header boundary."""

    @classmethod
    def fromtarfile(cls, tf: tarfile.TarFile) -> tarfile.TarInfo:
        try:
            return super().fromtarfile(tf)
        except (tarfile.InvalidHeaderError, tarfile.TruncatedHeaderError) as e:
            raise tarfile.ReadError(f"bad tar header at byte {tf.offset}: {e}") from None


def split_name(name: str) -> tuple[str, str]:
    """``(key, ext)`` of a member path: ``"a/b.seg.png"`` -> ``("a/b", "seg.png")`` (WebDataset's rule)."""
    head, sep, base = name.rpartition("/")
    stem, dot, ext = base.partition(".")
    return head + sep + stem, ext


@dataclasses.dataclass
class Sample:
    """One sample of a shard: ``key``, its position ``index`` in the shard (0-based) and ``members``:
    extension -> Tensor[num_bytes] (uint8, a view of the member's own read buffer); ``None`` when the sample
    was only skipped over."""

    key: str
    index: int
    members: dict[str, torch.Tensor] | None


def _error(shard: str, key: str | None, member: str | None, reason: str) -> DecodeError:
    where = shard if key is None else f"{shard}: sample {key!r}" + (f", member {member!r}" if member else "")
    return DecodeError(f"{where}: {reason}", path=shard, reason=reason)


def _read_member(tf: tarfile.TarFile, info: tarfile.TarInfo) -> torch.Tensor:
    """The member's bytes in one buffer of exactly its size, as a uint8 tensor view of it."""
    size = info.size
    if size == 0:
        return torch.empty(0, dtype=torch.uint8)
    buf = bytearray(size)
    view = memoryview(buf)
    f = tf.extractfile(info)
    got = 0
    while got < size:
        n = f.readinto(view[got:])
        if not n:
            raise EOFError(f"unexpected end of data after {got} of {size} bytes")
        got += n
    return torch.frombuffer(buf, dtype=torch.uint8)


class ShardCursor:
    """Reads the samples of one shard in order, keeping the tar open between calls, so consecutive ranges
    (``read(0, 10)``, then ``read(10, 25)``) read the shard once, sequentially.

    Args:
        name: the shard's name in error messages (its path or URL).
        opener: ``opener() -> (binary file object, seekable)``; called again when an earlier sample is asked for.
        on_error: called with each :class:`spdl_torch.DecodeError` of a damaged shard (truncated data, bad
            header); it raises it (policy "raise") or returns to end the shard there (policy "skip").
    """

    def __init__(self, name: str, opener: Callable[[], tuple[BinaryIO, bool]]) -> None:
        self.name = name
        self._opener = opener
        self._tar: tarfile.TarFile | None = None
        self._file: BinaryIO | None = None
        self._gzip: gzip.GzipFile | None = None  # a gzip shard's decompressor (its CRC checked at the end)
        self._pending: tarfile.TarInfo | None = None  # first member of the next sample, already read
        self._next = 0  # index of the next sample
        self._done = False

    def close(self) -> None:
        if self._tar is not None:
            self._tar.close()
        if self._gzip is not None:
            self._gzip.close()
        if self._file is not None:
            self._file.close()
        self._tar = self._gzip = self._file = self._pending = None
        self._next, self._done = 0, False

    def _open(self) -> None:
        self.close()
        f, seekable = self._opener()
        self._file = f
        try:
            if f.peek(2)[:2] == b"\x1f\x8b":  # gzip: through GzipFile, which checks the CRC and length at the end
                self._gzip = gzip.GzipFile(fileobj=f, mode="rb")
                self._tar = tarfile.open(fileobj=self._gzip, mode="r:" if seekable else "r|", tarinfo=_StrictTarInfo)
            else:
                self._tar = tarfile.open(fileobj=f, mode="r:*" if seekable else "r|*", tarinfo=_StrictTarInfo)
        except _DATA_ERRORS as e:
            raise _error(self.name, None, None, f"not a readable tar file ({e})") from None

    def _check_end(self) -> None:
        """At the end of the archive: a gzip shard's data is read to its end, so a damaged stream (CRC,
        length) is an error rather than members with wrong bytes and no word (it is found only there, after
        the shard's samples were read)."""
        if self._gzip is None:
            return
        try:
            while self._gzip.read(1 << 16):
                pass
        except _DATA_ERRORS as e:
            raise _error(self.name, None, None, f"damaged gzip data, found at its end: the samples read from "
                                                f"this shard may be wrong ({e})") from None

    def _next_member(self, key: str | None, last: str | None) -> tarfile.TarInfo | None:
        """The next file member, or None at the end of the archive (``last``: the member before, for errors)."""
        while True:
            try:
                info = self._tar.next()
            except _DATA_ERRORS as e:
                self._done = True
                raise _error(self.name, key, last, f"truncated or damaged tar after this member ({e})") from None
            if info is None:
                self._done = True
                self._check_end()
            if info is None or info.isfile():
                return info

    def read(self, start: int, stop: int, want: Callable[[int], bool] | None = None) -> Iterator[Sample]:
        """Yields samples ``start <= index < stop`` in order (fewer when the shard has fewer). Samples for
        which ``want(index)`` is false come with ``members=None`` and their data is not kept (nor read, when
        the file is seekable).

        Raises:
            spdl_torch.DecodeError: the tar is damaged (truncated member, bad header); names the shard, the
                sample and the member.
        """
        if self._tar is None or start < self._next:
            self._open()
        prev_key = prev_member = None
        while self._next < stop and not self._done:
            info = self._pending if self._pending is not None else self._next_member(prev_key, prev_member)
            self._pending = None
            if info is None:
                self._done = True
                return
            key, _ = split_name(info.name)
            index = self._next
            keep = index >= start and (want is None or want(index))
            members: dict[str, torch.Tensor] | None = {} if keep else None
            while info is not None:
                k, ext = split_name(info.name)
                if k != key:
                    self._pending = info
                    break
                if keep:
                    try:
                        members[ext] = _read_member(self._tar, info)
                    except _DATA_ERRORS as e:
                        self._done = True
                        raise _error(self.name, key, info.name, f"truncated member ({e})") from None
                prev_member = info.name
                info = self._next_member(key, prev_member)
            if info is None:
                self._done = True
            self._next = index + 1
            prev_key = key
            if index >= start:
                yield Sample(key, index, members)


def count_samples(name: str, opener: Callable[[], tuple[BinaryIO, bool]]) -> int:
    """Number of samples of a shard (reads its headers; a stream is read through).

    Raises:
        spdl_torch.DecodeError: the tar is damaged.
    """
    cursor = ShardCursor(name, opener)
    try:
        n = 0
        for _ in cursor.read(0, 1 << 62, want=lambda i: False):
            n += 1
        return n
    finally:
        cursor.close()


def local_opener(path: str) -> Callable[[], tuple[BinaryIO, bool]]:
    """An opener of a local shard: the file, seekable (a gzip tar is decompressed as it is read)."""

    def open_() -> tuple[BinaryIO, bool]:
        return open(path, "rb", buffering=io.DEFAULT_BUFFER_SIZE * 16), True

    return open_


def is_url(source: Any) -> bool:
    return isinstance(source, str) and source.startswith(("http://", "https://"))


def source_name(source: str | os.PathLike) -> str:
    return source if is_url(source) else os.fspath(source)


class TableCursor:
    """Reads the samples of a local plain tar by the member table ``write_shards`` wrote beside it: each sample
    with one positioned read (``os.preadv``) of its headers and data into one buffer, each member's data a uint8
    tensor view of it; no header is parsed, only checked against the table (name and size), so a table that
    does not match its shard is an error, not silent garbage. Same interface as :class:`ShardCursor`."""

    def __init__(self, name: str, path: str, table: list) -> None:
        self.name, self._path, self._table = name, path, table
        self._fd: int | None = None
        self._file_size = 0

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def _read(self, key: str, exts: list, offsets: list, sizes: list) -> dict[str, torch.Tensor]:
        """The sample's members with one positioned read (they are consecutive in the archive: from the first
        header to the end of the last member's data) into one uninitialised buffer; members are views of it."""
        first, end = sample_span(offsets, sizes)
        if end > self._file_size or first < 0:
            raise _error(self.name, key, f"{key}.{exts[-1]}", f"truncated member (the shard ends at byte "
                                                             f"{self._file_size}, the member at {end})")
        buf = torch.empty(end - first, dtype=torch.uint8)
        got = os.preadv(self._fd, [buf.numpy()], first)
        if got != end - first:
            raise _error(self.name, key, f"{key}.{exts[-1]}", f"truncated member (read {got} of {end - first} bytes)")
        return split_sample(self.name, key, exts, offsets, sizes, buf, first)

    def sample(self, index: int) -> Sample | None:
        """Sample ``index`` read now (random access), or None past the table's end."""
        if self._fd is None:
            self._fd = os.open(self._path, os.O_RDONLY)
            self._file_size = os.fstat(self._fd).st_size
        if not 0 <= index < len(self._table):
            return None
        key, exts, offsets, sizes = self._table[index]
        return Sample(key, index, self._read(key, exts, offsets, sizes))

    def read(self, start: int, stop: int, want: Callable[[int], bool] | None = None) -> Iterator[Sample]:
        if self._fd is None:
            self._fd = os.open(self._path, os.O_RDONLY)
            self._file_size = os.fstat(self._fd).st_size
        for index in range(start, min(stop, len(self._table))):
            key, exts, offsets, sizes = self._table[index]
            if want is not None and not want(index):
                yield Sample(key, index, None)
                continue
            yield Sample(key, index, self._read(key, exts, offsets, sizes))


def sample_span(offsets: list, sizes: list) -> tuple[int, int]:
    """A table row's bytes in the shard: from its first member's header to the end of its last member's data."""
    return offsets[0] - 512, offsets[-1] + sizes[-1]


def split_sample(name: str, key: str, exts: list, offsets: list, sizes: list, buf: torch.Tensor,
                 first: int) -> dict[str, torch.Tensor]:
    """The members of a sample read into ``buf`` (its bytes from shard offset ``first`` on), as views of it,
    after checking each member's header against the table (name and size): a table that does not match its
    shard is a :class:`spdl_torch.DecodeError`, not silent garbage."""
    raw = buf.numpy()
    out = {}
    for ext, offset, size in zip(exts, offsets, sizes):
        member = f"{key}.{ext}"
        h = offset - 512 - first
        encoded = member.encode()
        if h < 0 or len(encoded) < 100 and (raw[h:h + len(encoded)].tobytes() != encoded or raw[h + len(encoded)] != 0
                                            or _octal(raw[h + 124:h + 136].tobytes()) != size):
            raise _error(name, key, member, "the member table does not match the shard (rewrite it with "
                                            "write_shards, or remove the index's 'members' entry)")
        out[ext] = buf[h + 512:h + 512 + size]
    return out


def _octal(field: bytes) -> int:
    text = bytes(field).split(b"\0", 1)[0].strip()
    try:
        return int(text or b"0", 8)
    except ValueError:
        return -1
