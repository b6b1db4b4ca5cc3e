"""Reading WebDataset tar shards with Python's :mod:`tarfile`: members grouped into samples by key, each member's
bytes read once into a uint8 tensor of its own (in bounded pieces: a forged header's size costs no memory the
data does not fill); the reads by a member table are in ``_table.py``. Members that are not regular files (links,
directories, FIFOs, devices, other types) are passed over, as WebDataset does, with one warning per shard that
names their kinds and counts. A member whose data would end past the archive (a local plain tar's size, else the
largest file offset) is a truncated member, found from its header before tarfile seeks past its data.

A sample is a run of consecutive file members with the same key: the member path up to the first dot of its
base name (``dir/n0001.jpg`` and ``dir/n0001.cls`` are sample ``dir/n0001`` with members ``jpg`` and ``cls``), as
WebDataset writes them. Plain and gzip tars are read (the compression is detected); local files are opened
seekable, so a skipped sample costs no read of its data; streams (remote shards) are read through.
"""

from __future__ import annotations

import dataclasses
import gzip
import io
import lzma
import os
import tarfile
import warnings
import zlib
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any, BinaryIO

import torch

from ..._errors import DecodeError

__all__ = ["Sample", "ShardCursor", "count_samples", "is_url", "local_opener", "more_samples_error", "source_name",
           "split_name"]

# what damaged data raises (an OSError of reading the file or of a remote fetch is passed on as it is)
_DATA_ERRORS = (tarfile.TarError, EOFError, gzip.BadGzipFile, zlib.error, lzma.LZMAError)

# A member's data is read in pieces of at most this many bytes, into a buffer that grows only as data arrives
# (up to the declared size): a header that declares more than the archive holds costs no more memory than the
# data that is there.
_PIECE = 16 << 20

# The most bytes of a metadata member (a pax header, a GNU long name): tarfile reads one in a single call of its
# declared size.
_MAX_META = 1 << 20

_META_TYPES = (tarfile.GNUTYPE_LONGNAME, tarfile.GNUTYPE_LONGLINK, tarfile.XHDTYPE, tarfile.XGLTYPE,
               tarfile.SOLARIS_XHDTYPE)

# The kinds of the members that are not regular files, as the warning names them (others: "type 'V'", ...).
_KINDS = {tarfile.LNKTYPE: "hard link", tarfile.SYMTYPE: "symbolic link", tarfile.DIRTYPE: "directory",
          tarfile.FIFOTYPE: "FIFO", tarfile.CHRTYPE: "character device", tarfile.BLKTYPE: "block device"}

# No file's data reaches past this offset (a seek there is an OSError or an OverflowError of the platform).
_MAX_OFFSET = (1 << 63) - 1


class _StrictTarInfo(tarfile.TarInfo):
    """:mod:`tarfile` takes a damaged or cut header after the first for the end of the archive and drops the
    rest without a word (GNU tar reports it); here it is an error. A zero block still ends the archive, as does
    the end of the data at a header boundary. A metadata member (pax header, GNU long name) declaring more than
    :data:`_MAX_META` bytes is an error (tarfile would allocate its declared size at once), and so are a negative
    size (in the header's base-256 form or a pax record: tarfile would step back to the same header forever, or
    read a metadata member to the end of the data) and a header that makes tarfile's parser itself fail (an
    index or value error on a forged field)."""

    @classmethod
    def fromtarfile(cls, tf: tarfile.TarFile) -> tarfile.TarInfo:
        try:
            info = super().fromtarfile(tf)
        except (tarfile.InvalidHeaderError, tarfile.TruncatedHeaderError) as e:
            raise tarfile.ReadError(f"bad tar header at byte {tf.offset}: {e}") from None
        except (IndexError, ValueError, OverflowError, UnicodeError) as e:  # tarfile's parser on a forged field
            raise tarfile.ReadError(f"bad tar header at byte {tf.offset}: {type(e).__name__}: {e}") from None
        _refuse_negative_size(info)  # a size a pax record set
        return info

    def _proc_member(self, tf: tarfile.TarFile) -> tarfile.TarInfo:
        _refuse_negative_size(self)
        if self.type in _META_TYPES and self.size > _MAX_META:
            raise tarfile.ReadError(f"bad tar header at byte {self.offset}: a metadata member of {self.size} bytes "
                                    f"(at most {_MAX_META})")
        return super()._proc_member(tf)


def _refuse_negative_size(info: tarfile.TarInfo) -> None:
    if info.size < 0:
        raise tarfile.ReadError(f"bad tar header at byte {info.offset} (member {info.name!r}): a negative size "
                                f"({info.size} bytes)")


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


def _read_member(tf: tarfile.TarFile, info: tarfile.TarInfo, available: int | None) -> torch.Tensor:
    """The member's bytes as a uint8 tensor of exactly its size, read in pieces of at most :data:`_PIECE`
    bytes. ``available``: the bytes the archive holds from the member's data on, when known (a local plain
    tar): a larger declared size is an error before anything is allocated; otherwise the buffer starts at one
    piece and doubles as data arrives, so a forged size costs no more than the data that is there.

    Raises:
        EOFError: the data ends before the declared size.
    """
    size = info.size
    if available is not None and size > available:
        raise EOFError(f"the header declares {size} bytes, the archive holds {max(available, 0)} after it")
    out = torch.empty(size if available is not None else min(size, _PIECE), dtype=torch.uint8)
    f = tf.extractfile(info)
    got = 0
    while True:
        view = memoryview(out.numpy()).cast("B")
        while got < len(view):
            n = f.readinto(view[got:got + _PIECE])
            if not n:
                raise EOFError(f"unexpected end of data after {got} of {size} bytes")
            got += n
        del view
        if got == size:
            return out
        out.resize_(min(size, 2 * got))  # keeps the bytes read; no view of the old buffer is left


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
        self._stream = False  # read through (tarfile's "r|" mode)
        self._file_size: int | None = None  # a local plain tar's size: declared member sizes are checked against it
        self._passed: Counter[str] = Counter()  # members that are not regular files passed over, by kind
        self._last: tarfile.TarInfo | None = None  # the member tarfile read last (its data is skipped next)
        self._passed_told = False

    def close(self) -> None:
        self._tell_passed()
        if self._tar is not None:
            self._tar.close()
        if self._gzip is not None:
            self._gzip.close()
        if self._file is not None:
            self._file.close()
        self._tar = self._gzip = self._file = self._pending = self._last = None
        self._next, self._done = 0, False
        self._passed.clear()

    def _open(self) -> None:
        self.close()
        f, seekable = self._opener()
        self._file, self._stream, self._file_size = f, not seekable, None
        try:
            if f.peek(2)[:2] == b"\x1f\x8b":  # gzip: through GzipFile, which checks the CRC and length at the end
                self._gzip = gzip.GzipFile(fileobj=f, mode="rb")
                self._tar = tarfile.open(fileobj=self._gzip, mode="r:" if seekable else "r|", tarinfo=_StrictTarInfo)
            else:
                self._tar = tarfile.open(fileobj=f, mode="r:*" if seekable else "r|*", tarinfo=_StrictTarInfo)
        except _DATA_ERRORS as e:
            raise _error(self.name, None, None, f"not a readable tar file ({e})") from None
        if seekable and self._tar.fileobj is f:  # a plain tar (not one tarfile decompresses)
            try:
                self._file_size = os.fstat(f.fileno()).st_size
            except (AttributeError, OSError, io.UnsupportedOperation):
                pass

    def _tell_passed(self) -> None:
        """One warning per shard naming the kinds and counts of the members that were not regular files and
        were passed over: like WebDataset, a sample gets only its regular file members, but not without a word."""
        if self._passed and not self._passed_told:
            self._passed_told = True
            kinds = ", ".join(f"{kind}: {n}" for kind, n in self._passed.items())
            hint = ""
            if self._passed["hard link"] or self._passed["symbolic link"]:
                hint = "; store linked data as regular files: tar --hard-dereference, or write_shards"
            warnings.warn(f"TarShardDataset: {self.name}: {self._passed.total()} member(s) that are not regular files "
                          f"passed over ({kinds}): a sample gets only its regular file members, as in WebDataset"
                          f"{hint}", RuntimeWarning, stacklevel=2)

    def _check_data_end(self, info: tarfile.TarInfo) -> None:
        """A member whose data tarfile reads or skips over (a regular file, or a type it does not know) must end
        within the archive: a local plain tar's size, else the largest file offset (a seek past it is an
        OSError or OverflowError of the platform, naming no file). Checked before tarfile seeks past it: the
        samples before it are kept."""
        if not (info.isreg() or info.type not in tarfile.SUPPORTED_TYPES):
            return
        limit = _MAX_OFFSET if self._file_size is None else self._file_size
        if info.offset_data + info.size > limit:
            self._done = True
            held = "more than any file holds" if self._file_size is None else \
                f"the archive holds {max(limit - info.offset_data, 0)} after it"
            raise _error(self.name, split_name(info.name)[0], info.name,
                         f"truncated member (the header declares {info.size} bytes, {held})")

    def _skip_streamed(self) -> None:
        """Streamed: the data of the member before, as far as it was not read, is read through here in
        bounded pieces (tarfile would loop over its declared size in 10 KB steps even past the end of the data)."""
        tf = self._tar
        if not self._stream or tf.firstmember is not None:
            return
        left = tf.offset - tf.fileobj.tell()
        while left > 0:
            n = len(tf.fileobj.read(min(left, 1 << 20)))
            if not n:
                raise tarfile.ReadError(f"unexpected end of data ({left} bytes short)")
            left -= n

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
            if self._last is not None:
                self._check_data_end(self._last)
            try:
                self._skip_streamed()
                info = self._tar.next()
            except _DATA_ERRORS as e:
                self._done = True
                raise _error(self.name, key, last, f"truncated or damaged tar after this member ({e})") from None
            if info is None:
                self._done = True
                self._tell_passed()
                self._check_end()
                return None
            if info.issparse():  # its data would be expanded to the declared size, holes as zeros
                self._done = True
                raise _error(self.name, split_name(info.name)[0], info.name, "a sparse member (not supported)")
            self._last = info
            if info.isfile():
                return info
            self._passed[_KINDS.get(info.type, f"type {info.type.decode('latin-1')!r}")] += 1

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
                    available = None if self._file_size is None else self._file_size - info.offset_data
                    try:
                        members[ext] = _read_member(self._tar, info, available)
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


    def key_after(self, index: int) -> str | None:
        """The key of the sample after sample ``index`` when the shard has one, else None; call it right after
        reading up to sample ``index`` (None when the cursor is elsewhere)."""
        if self._tar is None or self._next != index + 1 or self._pending is None:
            return None
        return split_name(self._pending.name)[0]


def more_samples_error(name: str, count: int, key: str) -> DecodeError:
    """The error of a shard that holds more samples than its index says (a stale index)."""
    return _error(name, None, None, f"has more samples than its count in the index ({count}): sample {count} "
                                    f"({key!r}) and any after it are not read (the index is stale: write it again)")


def count_samples(name: str, opener: Callable[[], tuple[BinaryIO, bool]],
                  on_damage: Callable[[DecodeError], None] | None = None) -> int:
    """Number of samples of a shard (reads its headers; a stream is read through). A damaged tar: with
    ``on_damage``, the samples before the damage (the sample it is in and the rest are not counted, so never
    read), after ``on_damage(error)``; without it, the error.

    Raises:
        spdl_torch.DecodeError: the tar is damaged and no ``on_damage`` was given.
    """
    cursor = ShardCursor(name, opener)
    n = 0
    try:
        for _ in cursor.read(0, 1 << 62, want=lambda i: False):
            n += 1
        return n
    except DecodeError as e:
        if on_damage is None:
            raise
        on_damage(e)
        return n
    finally:
        cursor.close()


def local_opener(path: str) -> Callable[[], tuple[BinaryIO, bool]]:
    """An opener of a local shard: the file, seekable (a gzip tar is decompressed as it is read)."""

    def open_() -> tuple[BinaryIO, bool]:
        return open(path, "rb", buffering=io.DEFAULT_BUFFER_SIZE * 16), True

    return open_


URL_SCHEMES = ("http://", "https://", "s3://", "gs://", "az://", "abfs://", "abfss://")


def is_url(source: Any) -> bool:
    """Whether ``source`` is an ``http(s)://`` or object (``s3://``, ``gs://``, ``az://``, ``abfs[s]://``) URL."""
    return isinstance(source, str) and source.startswith(URL_SCHEMES)


def source_name(source: str | os.PathLike) -> str:
    return source if is_url(source) else os.fspath(source)
