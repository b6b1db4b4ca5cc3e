"""An ``index.json`` of shards, read as untrusted input: its entries are checked, the files it names resolve under
the index's own URL or directory, and every read of the index or of a file it names is bounded.

Rules for a shard's ``name`` and ``members`` (a path relative to the index): a non-empty string, not absolute,
without a ``..`` component (also percent-encoded, for URLs), without ``://`` (another scheme or host), a NUL or,
for URLs, a backslash. The index itself is read up to :data:`MAX_JSON_BYTES`; a member table up to its shard's
``num_bytes`` plus :data:`TABLE_SLACK_BYTES` (a member table is never larger than its shard), and at most
:data:`MAX_JSON_BYTES`. A longer file (``/dev/zero``, an endless HTTP body) is a ``ValueError`` naming it, read
no further.
"""

from __future__ import annotations

import json
import os
import posixpath
from collections.abc import Callable
from typing import Any
from urllib.parse import unquote

from ._tar import is_url
from ._write import INDEX_FORMAT

__all__ = ["MAX_JSON_BYTES", "TABLE_SLACK_BYTES", "IndexEntries", "load_index", "read_bounded_local", "resolve"]

MAX_JSON_BYTES = 256 << 20  # an index or a member table: at most this many bytes
TABLE_SLACK_BYTES = 1 << 20  # a member table may exceed its shard's num_bytes by this much (hand-written JSON)

# read(source, limit) -> at most limit + 1 bytes of source (one more than allowed tells "too long")
BoundedRead = Callable[[str, int], bytes]


class IndexEntries:
    """The shards an index lists: ``names`` (resolved paths or URLs), ``counts``, ``sizes`` (``num_bytes`` or
    None) and ``tables`` (resolved member-table paths or URLs, or None)."""

    def __init__(self, names: list[str], counts: list[int], sizes: list[int | None], tables: list[str | None]):
        self.names, self.counts, self.sizes, self.tables = names, counts, sizes, tables


def _refuse(index: str, entry: int, what: str, value: Any, reason: str) -> ValueError:
    return ValueError(f"TarShardDataset: {index}: shard entry {entry}: {what} {value!r:.200} {reason}")


def resolve(index: str, entry: int, what: str, name: Any) -> str:
    """``name`` (an index entry's ``name`` or ``members``) resolved under the index's URL or directory.

    Raises:
        ValueError: ``name`` is not a relative path below the index (see the module's rules); the message names
            the index, the entry and the value.
    """
    if not isinstance(name, str) or not name:
        raise _refuse(index, entry, what, name, "is not a non-empty string")
    url = is_url(index)
    plain = unquote(name) if url else name
    if "\0" in plain:
        raise _refuse(index, entry, what, name, "contains a NUL character")
    if "://" in plain or plain.startswith("//"):
        raise _refuse(index, entry, what, name, "names another scheme or host: only paths relative to the "
                                                "index are read")
    if url and "\\" in plain:
        raise _refuse(index, entry, what, name, "contains a backslash")
    if plain.startswith("/") or (not url and os.path.isabs(plain)):
        raise _refuse(index, entry, what, name, "is an absolute path: only paths relative to the index are read")
    parts = plain.replace(os.sep, "/").split("/") if not url else plain.split("/")
    if ".." in parts:
        raise _refuse(index, entry, what, name, "has a '..' component: only paths below the index are read")
    if url:
        parent = index.split("?", 1)[0].split("#", 1)[0].rsplit("/", 1)[0]
        return posixpath.join(parent, name)
    return os.path.join(os.path.dirname(index), name)


def _int(index: str, entry: int, what: str, value: Any, optional: bool = False) -> int | None:
    if value is None and optional:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise _refuse(index, entry, what, value, "is not an integer >= 0")
    return value


def read_bounded_local(path: str, limit: int) -> bytes:
    """At most ``limit + 1`` bytes of a local file (never more, whatever the file is)."""
    with open(path, "rb") as f:
        return f.read(limit + 1)


def checked_read(read: BoundedRead, source: str, limit: int, what: str) -> bytes:
    """``source``'s bytes, at most ``limit``.

    Raises:
        ValueError: ``source`` is longer than ``limit`` bytes (it is not read further).
    """
    data = read(source, limit)
    if len(data) > limit:
        raise ValueError(f"{what} {source} is longer than {limit} bytes (not read further)")
    return data


def table_limit(num_bytes: int | None) -> int:
    """The most bytes a member table of a shard of ``num_bytes`` bytes is read for."""
    return MAX_JSON_BYTES if num_bytes is None else min(MAX_JSON_BYTES, num_bytes + TABLE_SLACK_BYTES)


def load_index(index: str, read: BoundedRead) -> IndexEntries:
    """The entries of ``index`` (a path or URL), read with ``read`` up to :data:`MAX_JSON_BYTES`.

    Raises:
        ValueError: not an index of this format; an entry without a valid ``name`` / ``num_samples``, with a
            negative or non-integer ``num_bytes``, or naming a file outside the index's URL or directory; an
            index longer than :data:`MAX_JSON_BYTES`.
        OSError: the index cannot be read.
    """
    text = checked_read(read, index, MAX_JSON_BYTES, "TarShardDataset: the index")
    try:
        doc = json.loads(text)
    except (ValueError, UnicodeDecodeError) as e:
        raise ValueError(f"TarShardDataset: {index} is not a {INDEX_FORMAT} index (not JSON: {e})") from None
    shards = doc.get("shards") if isinstance(doc, dict) and doc.get("format") == INDEX_FORMAT else None
    if not isinstance(shards, list):
        raise ValueError(f"TarShardDataset: {index} is not a {INDEX_FORMAT} index")
    names, counts, sizes, tables = [], [], [], []
    for i, s in enumerate(shards):
        if not isinstance(s, dict):
            raise _refuse(index, i, "entry", s, "is not an object")
        names.append(resolve(index, i, "name", s.get("name")))
        counts.append(_int(index, i, "num_samples", s.get("num_samples")))
        sizes.append(_int(index, i, "num_bytes", s.get("num_bytes"), optional=True))
        members = s.get("members")
        tables.append(resolve(index, i, "members", members) if members else None)
    return IndexEntries(names, counts, sizes, tables)
