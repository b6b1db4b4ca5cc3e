"""Brace expansion as bash does it: ``{a..b}`` integer ranges (zero-padded to the wider bound when a bound has a
leading zero; descending when ``a > b``; ``{a..b..step}``), ``{x,y,z}`` lists (nested too), several groups as
their product, in order; a brace without a range or a comma stays as it is.

The standard library only, and no import of the package: ``tools/fetch_media_corpus.py`` loads this file by its
path (before the extension is built); the tar shards' sources (``datasets/shards/_sources.py``) import it.
"""

from __future__ import annotations

import re

__all__ = ["expand_braces"]

MAX_NAMES = 10_000_000

_RANGE = re.compile(r"(-?\d+)\.\.(-?\d+)(?:\.\.(-?\d+))?")


def _alternatives(body: str) -> list[str] | None:
    """The words a brace body stands for, or None when it is not a pattern (no range, no top-level comma)."""
    m = _RANGE.fullmatch(body)
    if m is not None:
        a, b = int(m.group(1)), int(m.group(2))
        step = abs(int(m.group(3) or 1)) or 1
        pad = max(len(m.group(1)), len(m.group(2))) if re.match(r"-?0\d", m.group(1) + " ") or \
            re.match(r"-?0\d", m.group(2) + " ") else 0
        seq = range(a, b + 1, step) if a <= b else range(a, b - 1, -step)
        return [f"{v:0{pad}d}" if pad else str(v) for v in seq]
    parts, depth, start = [], 0, 0
    for i, c in enumerate(body):
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
        elif c == "," and depth == 0:
            parts.append(body[start:i])
            start = i + 1
    if not parts:
        return None
    parts.append(body[start:])
    return [w for p in parts for w in expand_braces(p)]


def expand_braces(pattern: str) -> list[str]:
    """The names a brace pattern stands for, in order (see the module); a name without one: itself.

    Raises:
        ValueError: a pattern that expands to more than 10 million names.
    """
    depth, open_at = 0, -1
    for i, c in enumerate(pattern):
        if c == "{":
            if depth == 0:
                open_at = i
            depth += 1
        elif c == "}" and depth:
            depth -= 1
            if depth == 0:
                words = _alternatives(pattern[open_at + 1:i])
                if words is None:
                    continue
                head, tails = pattern[:open_at], expand_braces(pattern[i + 1:])
                if len(words) * len(tails) > MAX_NAMES:
                    raise ValueError(f"{pattern!r:.200} expands to over 10 million names")
                return [head + w + t for w in words for t in tails]
    return [pattern]
