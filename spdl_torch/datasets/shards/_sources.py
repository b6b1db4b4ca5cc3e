"""What ``TarShardDataset(sources)`` names: an ``index.json``, shards (paths, ``http(s)://`` or object URLs), brace
patterns of shards as WebDataset writes them (``shard-{000000..000999}.tar``, ``{a,b}``), or a directory / object
prefix (ending in ``/``; a local directory too), which stands for its ``index.json`` when it holds one, else for its
``*.tar`` and ``*.tar.gz`` in name order (what lies directly in it, not below).

Brace patterns expand as bash does: ``{a..b}`` integer ranges (zero-padded to the wider bound when a bound has a
leading zero; descending when ``a > b``; ``{a..b..step}``), ``{x,y,z}`` lists, several groups as their product, in
order; a brace without a range or a comma stays as it is.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from typing import Any

from ... import _braces as braces
from ._tar import is_url

__all__ = ["Resolved", "expand_braces", "resolve_sources"]

SHARD_SUFFIXES = (".tar", ".tar.gz", ".tgz")
INDEX_NAME = "index.json"

def expand_braces(pattern: str) -> list[str]:
    """The names a brace pattern stands for, in order (bash's rules: :mod:`spdl_torch._braces`); a name without
    one: itself.

    Raises:
        ValueError: a pattern that expands to more than 10 million names.
    """
    try:
        return braces.expand_braces(pattern)
    except ValueError as e:
        raise ValueError(f"TarShardDataset: {e}") from None


class Resolved:
    """The sources resolved: ``index`` (the index path or URL) or ``names`` and ``sizes`` (bytes, None unknown)."""

    def __init__(self, index: str | None = None, names: list[str] | None = None,
                 sizes: list[int | None] | None = None) -> None:
        self.index, self.names = index, names or []
        self.sizes = sizes if sizes is not None else [None] * len(self.names)


def _is_prefix(name: str) -> bool:
    if is_url(name):
        return name.endswith("/") or re.fullmatch(r"[a-z0-9]+://[^/]+", name) is not None
    return os.path.isdir(name)


def _is_shard(name: str) -> bool:
    return name.endswith(SHARD_SUFFIXES)


def resolve_sources(sources: Any, list_prefix: Callable[[str], list[tuple[str, int]]]) -> Resolved:
    """``sources`` as an index or a list of shards (see the module); ``list_prefix(url)`` lists an object prefix as
    ``(url, size)`` pairs.

    Raises:
        ValueError: no shard; an ``http(s)://`` prefix (a web server cannot be listed); a prefix or directory
            without an index or shards; a list that names a prefix or an index among shards.
        OSError: a prefix cannot be listed.
    """
    if isinstance(sources, (str, os.PathLike)):
        name = os.fspath(sources)
        if isinstance(name, bytes):
            name = os.fsdecode(name)
        expanded = expand_braces(name)
        if len(expanded) == 1 and expanded[0] == name:
            if name.endswith(".json"):
                return Resolved(index=name)
            if _is_prefix(name):
                return _listed(name, list_prefix)
        sources = expanded
    if isinstance(sources, (bytes, Mapping)) or not hasattr(sources, "__iter__"):
        raise TypeError(f"TarShardDataset: sources should be a path, a URL or a list of them, got "
                        f"{type(sources).__name__}")
    names: list[str] = []
    for s in sources:
        if not isinstance(s, (str, os.PathLike)):
            raise TypeError(f"TarShardDataset: a source should be a path or a URL, got {type(s).__name__}: {s!r:.100}")
        s = os.fspath(s)
        for n in expand_braces(s):
            if n.endswith(".json") or (is_url(n) and n.endswith("/")):
                raise ValueError(f"TarShardDataset: {n!r:.200} in a list of shards: an index or a prefix is given "
                                 "alone (TarShardDataset('.../index.json'))")
            names.append(n)
    return Resolved(names=names)


def _listed(prefix: str, list_prefix: Callable[[str], list[tuple[str, int]]]) -> Resolved:
    if is_url(prefix) and prefix.startswith(("http://", "https://")):
        raise ValueError(f"TarShardDataset: {prefix} is an http(s) prefix: a web server cannot be listed; give its "
                         f"{INDEX_NAME} or the shard URLs (a brace pattern: shard-{{000000..000009}}.tar)")
    if is_url(prefix):
        url = prefix if prefix.endswith("/") else prefix + "/"
        entries = list_prefix(url)
    else:
        url = prefix
        entries = sorted((os.path.join(prefix, n), None) for n in os.listdir(prefix)
                         if os.path.isfile(os.path.join(prefix, n)))
    base = {e[0].rsplit("/", 1)[-1] if is_url(url) else os.path.basename(e[0]): e for e in entries}
    if INDEX_NAME in base:
        return Resolved(index=base[INDEX_NAME][0])
    shards = [(n, size) for n, size in entries if _is_shard(n)]
    if not shards:
        raise ValueError(f"TarShardDataset: {prefix}: no {INDEX_NAME}, *.tar or *.tar.gz in it ({len(entries)} "
                         "other objects or files)")
    return Resolved(names=[n for n, _ in shards], sizes=[s for _, s in shards])
