"""tools/fetch_media_corpus.py: its patterns match what bash's own globbing (globstar, nocaseglob) gives, and a
corpus is built from unpacked packages as links named after their package paths, with a manifest of sizes and
SHA-256s; the tests' corpus has every category of the tool."""

import hashlib
import shutil
import subprocess

import pytest

from tools import fetch_media_corpus as F

from tests._utils import corpus

TREE = ["pkg/a/x.png", "pkg/a/Y.PNG", "pkg/a/b/c/z.png", "pkg/a/.hidden/h.png", "pkg/a/.h.png", "pkg/a/n.jpg",
        "pkg/snake1.jpg", "pkg/snake.jpg", "pkg/f1-exif.jpg", "pkg/f12-exif.jpg", "pkg/premature-end.png",
        "pkg/large.jpg", "pkg/d/sub/e.wav", "pkg/en_US/x/y.WAV", "pkg/en/y.wav", "pkg/fr/y.wav"]
PATTERNS = ["pkg/a/**/*.png", "pkg/a/*.{png,jpg}", "pkg/snake*.jpg", "pkg/f?-exif.jpg",
            "pkg/{premature-end.*,large.jpg}", "pkg/en*/**/*.wav", "pkg/*/*", "pkg/**/*.wav", "pkg/a/X.PNG",
            "PKG/a/*.png"]
LITERAL_CASE = {"pkg/a/X.PNG", "PKG/a/*.png"}  # a component that does not glob keeps its case: nothing matches


@pytest.fixture
def tree(tmp_path):
    for rel in TREE:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_bytes(rel.encode())
    (tmp_path / "pkg" / "link.png").symlink_to(tmp_path / "pkg" / "a" / "x.png")  # links are not files
    return tmp_path


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
@pytest.mark.parametrize("pattern", PATTERNS)
def test_patterns_match_what_bash_globs(tree, pattern):
    script = (f'shopt -s nullglob globstar nocaseglob; cd "{tree}"; '
              f'for f in {pattern}; do [ -f "$f" ] && [ ! -L "$f" ] && echo "$f"; done; true')
    bash = set(subprocess.run(["bash", "-c", script], capture_output=True, text=True, check=True).stdout.split())
    rx = F.glob_regex(pattern)
    files = {str(p.relative_to(tree)) for p in tree.rglob("*") if p.is_file() and not p.is_symlink()}
    assert {f for f in files if rx.match(f)} == bash
    assert bool(bash) != (pattern in LITERAL_CASE)  # the others match something: the comparison says something


def test_corpus_from_unpacked_packages(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    gifs = cache / "x" / "gdk-pixbuf-tests" / "usr/libexec/installed-tests/gdk-pixbuf/test-images/gif-test-suite"
    gifs.mkdir(parents=True)
    for name in ("a.gif", "B.GIF", "notes.txt"):
        (gifs / name).write_bytes(name.encode() * 3)
    (cache / "x" / "gdk-pixbuf-tests" / ".unpacked").write_text("gdk-pixbuf-tests_1_amd64.deb")
    (cache / "gdk-pixbuf-tests_1_amd64.deb").write_bytes(b"")  # cached: nothing is downloaded or unpacked
    monkeypatch.setattr(F.subprocess, "run", lambda *a, **k: pytest.fail(f"ran {a}"))
    out = F.fetch_corpus(tmp_path / "corpus", cache, categories=("gif_suite",))
    links = sorted(p.name for p in (out / "gif_suite").iterdir())
    prefix = "gdk-pixbuf-tests__usr__libexec__installed-tests__gdk-pixbuf__test-images__gif-test-suite__"
    assert links == [prefix + "B.GIF", prefix + "a.gif"]
    assert all((out / "gif_suite" / n).resolve() == (gifs / n.split("__")[-1]).resolve() for n in links)
    rows = (out / F.MANIFEST).read_text().splitlines()
    assert rows[0] == "category\tbytes\tsha256\tpath"
    want = sorted(f"gif_suite\t{len(n) * 3}\t{hashlib.sha256(n.encode() * 3).hexdigest()}\t"
                  f"gdk-pixbuf-tests/usr/libexec/installed-tests/gdk-pixbuf/test-images/gif-test-suite/{n}"
                  for n in ("a.gif", "B.GIF"))
    assert rows[1:] == want
    (gifs / "c.gif").write_bytes(b"new")
    assert F.fetch_corpus(out, cache, categories=("gif_suite",)) == out  # the manifest marks it complete
    assert len(list((out / "gif_suite").iterdir())) == 2
    with pytest.raises(ValueError, match=r"unknown categories \['photos'\]"):
        F.fetch_corpus(tmp_path / "other", cache, categories=("photos",))


def test_the_tests_read_the_tools_categories():
    assert corpus.CATEGORIES == F.CATEGORIES
    with pytest.raises(ValueError, match="unknown media corpus category 'photos_jpeg'"):
        corpus.files("photos_jpeg")


def test_without_apt_get_the_corpus_tests_skip_naming_why(tmp_path, monkeypatch):
    monkeypatch.setattr(corpus, "CORPUS", tmp_path / "media_corpus")
    monkeypatch.setattr(corpus.shutil, "which", lambda name: None)
    corpus.corpus_dir.cache_clear()
    try:
        assert corpus.corpus_dir() is None and corpus.files("audio") == []
        (param,) = corpus.params([], prefix="corpus-")
        assert param.id == "corpus-no-corpus" and param.marks[0].kwargs["reason"] == corpus.UNAVAILABLE
        assert "apt-get and dpkg-deb" in corpus.UNAVAILABLE and "tools.fetch_media_corpus" in corpus.UNAVAILABLE
        with pytest.raises(pytest.skip.Exception, match="no media corpus: fetching it needs apt-get"):
            corpus.require_corpus()
    finally:
        corpus.corpus_dir.cache_clear()
