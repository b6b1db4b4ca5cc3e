"""A shard's member table (``<shard>.members.json``, written by ``write_shards``) held compactly: a few flat
arrays instead of Python lists per sample.

Why: a table of n samples parsed as JSON rows is about 7n lists that live as long as the shard is read. In a
process that imported torch and torchvision, each full collection of Python's cyclic garbage collector scans
every live container, about 170 ms with the GIL held (measured: parsing one 2,000-sample table tipped a full
collection that cost the first batch of an epoch 0.17 s). Here the rows are parsed with the collector paused
and converted at once to arrays of untracked objects (str, int), so a loaded table adds a handful of
containers whatever its size.
"""

from __future__ import annotations

import gc
import json
from array import array

__all__ = ["MemberTable"]


class MemberTable:
    """Rows ``(key, exts, offsets, sizes)`` of a shard's samples: ``exts`` a tuple of the members' extensions,
    ``offsets`` / ``sizes`` lists of their data offsets and sizes in bytes (a member's 512-byte header precedes
    its data).

    Raises:
        ValueError: the text is not a member table of ``format`` with ``num_samples`` rows, or (``num_bytes``
            given) one of its members ends past the shard's size.
    """

    __slots__ = ("_keys", "_exts", "_first", "_offsets", "_sizes")

    def __init__(self, text: str | bytes, *, format: str, num_samples: int, num_bytes: int | None = None) -> None:
        enabled = gc.isenabled()
        gc.disable()
        try:
            doc = json.loads(text)
            rows = doc.get("samples") if isinstance(doc, dict) and doc.get("format") == format else None
            if not isinstance(rows, list) or len(rows) != num_samples:
                got = "no table" if rows is None else f"{len(rows)} samples"
                raise ValueError(f"not a {format} member table of {num_samples} samples ({got})")
            try:
                self._keys = [str(r[0]) for r in rows]
                shared: dict[tuple, tuple] = {}
                self._exts = [shared.setdefault(t, t) for t in (tuple(str(e) for e in r[1]) for r in rows)]
                self._first = array("q", [0])
                self._offsets, self._sizes = array("q"), array("q")
                for r in rows:
                    if not len(r[1]) == len(r[2]) == len(r[3]) > 0:
                        raise ValueError(f"not a {format} member table: row {r[0]!r} has {len(r[1])} extensions, "
                                         f"{len(r[2])} offsets and {len(r[3])} sizes")
                    self._offsets.extend(r[2])
                    self._sizes.extend(r[3])
                    self._first.append(len(self._offsets))
            except (TypeError, IndexError, KeyError, OverflowError) as e:
                raise ValueError(f"not a {format} member table: a row is not [key, [ext], [offset], [size]] "
                                 f"({type(e).__name__}: {e})") from None
            if self._offsets and (min(self._offsets) < 512 or min(self._sizes) < 0):
                raise ValueError(f"not a {format} member table: an offset below 512 or a negative size")
            if num_bytes is not None and self._offsets:
                end = max(o + n for o, n in zip(self._offsets, self._sizes))
                if end > num_bytes:  # nothing is allocated or fetched for a member the shard cannot hold
                    raise ValueError(f"a member ends at byte {end}, past the shard's {num_bytes} bytes")
            del doc, rows
        finally:
            if enabled:
                gc.enable()

    def __len__(self) -> int:
        return len(self._keys)

    def __getitem__(self, i: int) -> tuple[str, tuple, list[int], list[int]]:
        a, b = self._first[i], self._first[i + 1]
        return self._keys[i], self._exts[i], self._offsets[a:b].tolist(), self._sizes[a:b].tolist()
