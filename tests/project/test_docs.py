"""The documents in their place: README.md, ARCHITECTURE.md and benchmarks/README.md stay short, the README
links every docs/ page, every relative link of the documents resolves, and no user-facing document talks about issue numbers, sessions or paths outside
the repository."""

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent.parent
# The user-facing documents that must not carry process words.
USER_DOCS = sorted(
    [REPO / "README.md", REPO / "ARCHITECTURE.md", REPO / "CHANGELOG.md", REPO / "CONTRIBUTING.md",
     REPO / "benchmarks" / "README.md", *(REPO / "docs").glob("*.md")]
)
DOC_PAGES = ("dataloader", "images", "video", "audio", "shards", "cuda", "deploy", "errors", "reliability", "design",
             "api-names")
# "issue #17", "Issue 3's", "(#20)", a path into the folder beside the repository, a "session" as a word (a name
# such as libjpeg_session is code).
PROCESS_WORDS = re.compile(r"\bissues? ?#?\d+|(?<![\w&])#\d+\b|\.\./shared|(?<![\w.])sessions?\b|\bno GPU was lent",
                           re.IGNORECASE)
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def _rel(path: Path) -> str:
    return str(path.relative_to(REPO))


@pytest.mark.parametrize(("name", "limit_kib"), [("README.md", 10), ("ARCHITECTURE.md", 15),
                                                 ("benchmarks/README.md", 10)])
def test_document_size(name, limit_kib):
    size = (REPO / name).stat().st_size
    assert size <= limit_kib * 1024, f"{name} is {size} bytes, over {limit_kib} KiB: move text into docs/"


def test_every_topic_page_exists_and_the_readme_links_it():
    readme = (REPO / "README.md").read_text()
    linked = set(LINK.findall(readme))
    missing = [p for p in DOC_PAGES if not (REPO / "docs" / f"{p}.md").is_file()]
    assert not missing, f"docs pages missing: {missing}"
    unlinked = [p for p in DOC_PAGES if f"docs/{p}.md" not in linked]
    assert not unlinked, f"README.md does not link docs pages {unlinked}"


MAPS = [REPO / "csrc" / "README.md", REPO / "spdl_torch" / "README.md",
        REPO / "spdl_torch" / "datasets" / "shards" / "README.md"]


@pytest.mark.parametrize("doc", USER_DOCS + MAPS, ids=_rel)
def test_relative_links_resolve(doc):
    broken = [target for target in LINK.findall(doc.read_text())
              if not re.match(r"[a-z]+:", target) and not (doc.parent / target).exists()]
    assert not broken, f"{_rel(doc)}: links to missing files {broken}"


@pytest.mark.parametrize("doc", USER_DOCS, ids=_rel)
def test_no_process_words(doc):
    hits = [f"{i}: {line.strip()}" for i, line in enumerate(doc.read_text().splitlines(), 1)
            if PROCESS_WORDS.search(line)]
    assert not hits, f"{_rel(doc)} mentions issue numbers, sessions or paths outside the repository:\n" + "\n".join(hits)


def test_the_process_word_pattern():
    for bad in ("## Video (issue #17)", "Issue 3's targets", "(#20)", "see ../shared/DESIGN.md", "this session",
                "no GPU was lent so far"):
        assert PROCESS_WORDS.search(bad), bad
    for fine in ("the loader issues batch ops", "detail/libjpeg_session.cpp", "`#include`", "a `&#124;` cell"):
        assert not PROCESS_WORDS.search(fine), fine


def test_readme_keeps_the_ci_test_command():
    readme = (REPO / "README.md").read_text()
    assert "make test" in readme and "make demo" in readme
    assert "pip install --no-build-isolation ." in readme
