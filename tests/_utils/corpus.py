"""Real media for tests, pulled from Debian packages by ../shared/tools/fetch_media_corpus.sh.

The corpus is fetched once into ``data/media_corpus`` (ignored by git) and reused. Where ``../shared`` is
absent (a user's clone), tests that need it skip with the reason.
"""

import functools
import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent.parent
SHARED = REPO.parent / "shared"
FETCH_SCRIPT = SHARED / "tools" / "fetch_media_corpus.sh"
CORPUS = REPO / "data" / "media_corpus"
# A package of the "tests" set, used to tell whether apt's package lists need an update first.
_PROBE_PACKAGE = "gdk-pixbuf-tests"
# Categories the tests read; each must be non-empty for the corpus to count as complete.
CATEGORIES = ("pngsuite", "png_other", "photos_png", "gif_suite", "jpeg_variants", "webp_tiff_bmp_gif", "corrupt",
              "video", "audio")
# The fetch script's sets that fill CATEGORIES.
SETS = ("tests", "video", "audio")
# The fetch script tests availability with `apt-cache show PKG | grep -q ...` under pipefail: when grep
# exits early, apt-cache dies of SIGPIPE and the package is wrongly skipped as "not in this release".
# This stand-in buffers apt-cache's output so that the pipeline's status is apt-cache's own.
_APT_CACHE_SHIM = '#!/bin/sh\nout=$(/usr/bin/apt-cache "$@"); rc=$?\nprintf "%s\\n" "$out" || true\nexit $rc\n'


def _complete() -> bool:
    """Every category present, with files, and no link dangling (a corpus linked from a removed checkout
    would otherwise silently shrink to its resolvable files)."""
    return (CORPUS / "MANIFEST.tsv").is_file() and all(
        (CORPUS / c).is_dir() and any((CORPUS / c).iterdir()) and all(p.exists() for p in (CORPUS / c).iterdir())
        for c in CATEGORIES
    )


@functools.cache
def corpus_dir() -> Path | None:
    """The corpus folder, fetched on first use; None when ../shared/tools is not available."""
    if _complete():
        return CORPUS
    if not FETCH_SCRIPT.is_file():
        return None
    known = subprocess.run(["apt-cache", "show", _PROBE_PACKAGE], capture_output=True).returncode == 0
    if not known:
        subprocess.run(["apt-get", "update", "-qq"], check=True, capture_output=True)
    shim = CORPUS.parent / "apt_cache_shim"
    shim.mkdir(parents=True, exist_ok=True)
    (shim / "apt-cache").write_text(_APT_CACHE_SHIM)
    (shim / "apt-cache").chmod(0o755)
    env = dict(os.environ, PATH=f"{shim}:{os.environ['PATH']}")
    subprocess.run(["bash", str(FETCH_SCRIPT), str(CORPUS), *SETS], check=True, capture_output=True, env=env)
    if not _complete():
        raise RuntimeError(f"the media corpus in {CORPUS} is incomplete after running {FETCH_SCRIPT}")
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


def params(paths: list[Path], marks: list = (), prefix: str = "") -> list:
    """pytest parameters with readable ids (``prefix`` + the file's name), each with ``marks``; one skipped
    parameter when there is no corpus."""
    if not paths:
        reason = f"no media corpus: {FETCH_SCRIPT} is absent (a clone without ../shared)"
        return [pytest.param(None, marks=[*marks, pytest.mark.skip(reason=reason)], id=f"{prefix}no-corpus")]
    return [pytest.param(p, id=prefix + short_name(p), marks=list(marks)) for p in paths]


def require_corpus() -> Path:
    root = corpus_dir()
    if root is None:
        pytest.skip(f"no media corpus: {FETCH_SCRIPT} is absent (a clone without ../shared)")
    return root
