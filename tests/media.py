"""Real media for tests, pulled from Debian packages by ../shared/tools/fetch_media_corpus.sh.

The corpus is fetched once into ``data/media_corpus`` (ignored by git) and reused. Where ``../shared`` is
absent (a user's clone), tests that need it skip with the reason.
"""

import functools
import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"
FETCH_SCRIPT = SHARED / "tools" / "fetch_media_corpus.sh"
CORPUS = REPO / "data" / "media_corpus"
# A package of the "tests" set, used to tell whether apt's package lists need an update first.
_PROBE_PACKAGE = "gdk-pixbuf-tests"


@functools.cache
def corpus_dir() -> Path | None:
    """The corpus folder, fetched on first use; None when ../shared/tools is not available."""
    if (CORPUS / "MANIFEST.tsv").is_file() and any((CORPUS / "pngsuite").glob("*.png")):
        return CORPUS
    if not FETCH_SCRIPT.is_file():
        return None
    known = subprocess.run(["apt-cache", "show", _PROBE_PACKAGE], capture_output=True).returncode == 0
    if not known:
        subprocess.run(["apt-get", "update", "-qq"], check=True, capture_output=True)
    subprocess.run(["bash", str(FETCH_SCRIPT), str(CORPUS), "tests"], check=True, capture_output=True)
    return CORPUS


def files(category: str, *suffixes: str) -> list[Path]:
    """Files of one corpus category (links resolved), optionally filtered by suffix; [] without a corpus."""
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


def params(paths: list[Path]) -> list:
    """pytest parameters with readable ids; one skipped parameter when there is no corpus."""
    if not paths:
        reason = f"no media corpus: {FETCH_SCRIPT} is absent (a clone without ../shared)"
        return [pytest.param(None, marks=pytest.mark.skip(reason=reason), id="no-corpus")]
    return [pytest.param(p, id=short_name(p)) for p in paths]


def require_corpus() -> Path:
    root = corpus_dir()
    if root is None:
        pytest.skip(f"no media corpus: {FETCH_SCRIPT} is absent (a clone without ../shared)")
    return root
