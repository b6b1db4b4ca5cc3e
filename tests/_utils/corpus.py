"""Real media for tests: files of Debian packages, fetched by the project's ``tools/fetch_media_corpus.py``.

The corpus is fetched once into ``data/media_corpus`` (ignored by git; ``make test`` does it as set-up) and
reused. On a machine without ``apt-get`` and ``dpkg-deb`` (not Debian), tests that need it skip with the
reason.
"""

import functools
import shutil
from pathlib import Path

import pytest

from tools.fetch_media_corpus import CATEGORIES, MANIFEST, fetch_corpus

REPO = Path(__file__).resolve().parent.parent.parent
CORPUS = REPO / "data" / "media_corpus"
UNAVAILABLE = ("no media corpus: fetching it needs apt-get and dpkg-deb (Debian 12 or 13): "
               "python -m tools.fetch_media_corpus --out data/media_corpus")


def _complete() -> bool:
    """The manifest (written last) present, every category's folder too, and no link dangling (a corpus linked
    from a removed cache would otherwise silently shrink to its resolvable files)."""
    return (CORPUS / MANIFEST).is_file() and all(
        (CORPUS / c).is_dir() and all(p.exists() for p in (CORPUS / c).iterdir()) for c in CATEGORIES
    )


@functools.cache
def corpus_dir() -> Path | None:
    """The corpus folder, fetched on first use; None where it cannot be fetched (no apt-get or dpkg-deb)."""
    if _complete():
        return CORPUS
    if not (shutil.which("apt-get") and shutil.which("dpkg-deb")):
        return None
    (CORPUS / MANIFEST).unlink(missing_ok=True)  # links that dangle: fetched again
    fetch_corpus(CORPUS)
    if not _complete():
        raise RuntimeError(f"the media corpus in {CORPUS} is incomplete after tools/fetch_media_corpus.py")
    return CORPUS


def files(category: str, *suffixes: str) -> list[Path]:
    """Files of one corpus category (links resolved), optionally filtered by suffix; [] without a corpus."""
    if category not in CATEGORIES:
        raise ValueError(f"unknown media corpus category {category!r}: expected one of {CATEGORIES}")
    root = corpus_dir()
    if root is None:
        return []
    out = sorted(p for p in (root / category).iterdir() if p.exists())
    if suffixes:
        out = [p for p in out if p.suffix.lower() in suffixes]
    return out


def short_name(path: Path) -> str:
    """The file's own name (the corpus names links after their full package path)."""
    return path.name.split("__")[-1]


def params(paths: list[Path], marks: list = (), prefix: str = "") -> list:
    """pytest parameters with readable ids (``prefix`` + the file's name), each with ``marks``; one skipped
    parameter when there is no file."""
    if not paths:
        reason = UNAVAILABLE if corpus_dir() is None else "no such file in the media corpus of this Debian release"
        return [pytest.param(None, marks=[*marks, pytest.mark.skip(reason=reason)], id=f"{prefix}no-corpus")]
    return [pytest.param(p, id=prefix + short_name(p), marks=list(marks)) for p in paths]


def require_corpus() -> Path:
    root = corpus_dir()
    if root is None:
        pytest.skip(UNAVAILABLE)
    return root
