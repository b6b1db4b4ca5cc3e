"""The documents in their place, by what belongs where: README.md holds what spdl_torch is, its set-up, a quickstart,
a feature table linking out and the headline benchmark; ARCHITECTURE.md the layer map, the path of a batch, the
concern table and where new code goes, every file it names existing; benchmarks/README.md the method and the
current tables, each naming its result file and date. Every relative link resolves, every file a document names
exists, and no tracked text (documents, code, comments, tests, build files) talks about issue numbers, sessions,
lent machines, helpers or paths outside the repository."""

import fnmatch
import re
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent.parent
TRACKED = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True).stdout.split()
TRACKED_DIRS = {"/".join(p.split("/")[:i]) for p in TRACKED for i in range(1, p.count("/") + 1)}
USER_DOCS = sorted(
    [REPO / "README.md", REPO / "ARCHITECTURE.md", REPO / "CHANGELOG.md", REPO / "CONTRIBUTING.md",
     REPO / "benchmarks" / "README.md", *(REPO / "docs").glob("*.md")]
)
MAPS = [REPO / p for p in TRACKED if p.endswith("README.md") and "/" in p and not p.startswith("benchmarks/")]
DOC_PAGES = ("dataloader", "images", "video", "audio", "shards", "cuda", "deploy", "errors", "reliability", "design",
             "api-names")
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def _rel(path: Path) -> str:
    return str(path.relative_to(REPO))


def _sections(text: str) -> dict[str, str]:
    """``## heading`` -> the text under it (up to the next ``## ``), in order."""
    parts = re.split(r"^## (.+)$", text, flags=re.M)
    return dict(zip(parts[1::2], parts[2::2]))


def _tables(text: str) -> list[tuple[str, list[str]]]:
    """Each markdown table: (the text between the previous table and it, its rows)."""
    out, before, rows = [], [], []
    for line in text.splitlines():
        if line.startswith("|"):
            rows.append(line)
            continue
        if rows:
            out.append(("\n".join(before), rows))
            before, rows = [], []
        before.append(line)
    if rows:
        out.append(("\n".join(before), rows))
    return out


# ---- README.md: what, set-up, quickstart, the feature table, the headline benchmark -------------------------------

README_SECTIONS = ["Set-up", "Quickstart", "Features", "Benchmark", "Licence", "Citation"]


def test_readme_has_its_fixed_sections_only():
    text = (REPO / "README.md").read_text()
    assert list(_sections(text)) == README_SECTIONS, "README.md: a new topic goes to a docs/ page, linked from Features"
    assert not re.search(r"^###", text, re.M), "README.md has no subsections: move the text into docs/"
    blocks = re.findall(r"```python\n", text)
    assert len(blocks) == 1 and "```python" in _sections(text)["Quickstart"], "one Python block: the quickstart"


def test_readme_feature_rows_link_out():
    rows = _tables(_sections((REPO / "README.md").read_text())["Features"])[0][1][2:]
    assert len(rows) >= len(DOC_PAGES)
    for row in rows:
        last = row.strip("|").split("|")[-1]
        targets = LINK.findall(last)
        assert targets and all((REPO / t).exists() for t in targets), f"README feature row links no page: {row}"


def test_every_topic_page_exists_and_the_readme_links_it():
    readme = (REPO / "README.md").read_text()
    linked = set(LINK.findall(readme))
    missing = [p for p in DOC_PAGES if not (REPO / "docs" / f"{p}.md").is_file()]
    assert not missing, f"docs pages missing: {missing}"
    unlinked = [p for p in DOC_PAGES if f"docs/{p}.md" not in linked]
    assert not unlinked, f"README.md does not link docs pages {unlinked}"


def test_readme_keeps_the_ci_test_command():
    readme = (REPO / "README.md").read_text()
    assert "make test" in readme and "make demo" in readme
    assert "pip install --no-build-isolation ." in readme


# ---- ARCHITECTURE.md: layers, the path of a batch, concerns, where new code goes ---------------------------------

ARCHITECTURE_SECTIONS = ["Layers", "From a path to a batch on the device", "The tree", "Tar shards and audio",
                         "Where each concern lives", "Where new code goes", "The CUDA layer", "Python import graph"]
# The kinds of new code "Where new code goes" must say the place of.
NEW_CODE_KINDS = ["A new decoder", "A new op", "A new augmentation op", "A new dataset", "A new pipeline stage kind",
                  "A new DataLoader feature", "A new fused transform"]


def test_architecture_has_its_fixed_sections():
    sections = _sections((REPO / "ARCHITECTURE.md").read_text())
    assert list(sections) == ARCHITECTURE_SECTIONS
    assert all(layer in sections["Layers"] for layer in ("csrc/core/", "csrc/ops/", "spdl_torch/"))
    steps = [int(n) for n in re.findall(r"^\s*(\d+)\. \*\*", sections["From a path to a batch on the device"], re.M)]
    assert steps == list(range(1, len(steps) + 1)) and len(steps) >= 8, "the path of a batch: numbered steps"


def test_every_concern_row_names_files():
    sections = _sections((REPO / "ARCHITECTURE.md").read_text())
    rows = _tables(sections["Where each concern lives"])[0][1][2:]
    assert len(rows) >= 10
    for row in rows:
        answer = row.strip("|").split("|", 1)[1]
        assert [t for t in re.findall(r"`([^`]+)`", answer) if _is_path(t)], f"a concern row names no file: {row}"
    kinds = re.findall(r"^- \*\*(.+?):?\*\*", sections["Where new code goes"], re.M)
    assert [k.rstrip(":") for k in kinds] == NEW_CODE_KINDS


# ---- benchmarks/README.md: the method and the current tables, each naming its result file and date ---------------

RESULTS = REPO / "benchmarks" / "results"
DATE = re.compile(r"\b20\d\d-\d\d-\d\d\b")


def _result_names(text: str) -> set[str]:
    return set(re.findall(r"results/([\w.*-]+\.(?:md|json|png))", text))


def test_benchmark_tables_name_their_result_file_and_date():
    sections = _sections((REPO / "benchmarks" / "README.md").read_text())
    assert list(sections)[0] == "Method" and list(sections)[-1] == "Other scripts"
    for name, body in sections.items():
        for before, rows in _tables(body):
            cited = _result_names(before) | {f"{s}.md" for s in re.findall(r"\| (20\d\d-\d\d-\d\d-[\w-]+) \|",
                                                                        "\n".join(rows))}
            assert cited and DATE.search(before), f"benchmarks/README.md, {name!r}: a table without its file and date"
            missing = [c for c in cited if not list(RESULTS.glob(c))]
            assert not missing, f"benchmarks/README.md, {name!r} names result files that do not exist: {missing}"


def test_every_current_result_file_is_cited():
    text = (REPO / "benchmarks" / "README.md").read_text()
    named = {n.split(".")[0] for n in re.findall(r"[\w-]*20\d\d-\d\d-\d\d[\w*-]*", text)}
    for f in RESULTS.iterdir():
        if f.is_file():
            assert any(fnmatch.fnmatch(f.name.split(".")[0], n) for n in named), (
                f"benchmarks/results/{f.name} is cited by no table: move it to results/archive/")


def test_no_document_links_the_archive():
    for path in TRACKED:
        if path.endswith(".md") and not path.startswith("benchmarks/results/"):
            text = (REPO / path).read_text()
            assert not [t for t in LINK.findall(text) if "archive/" in t] and "history.md" not in text, path


# ---- links and named files ------------------------------------------------------------------------------------

@pytest.mark.parametrize("doc", USER_DOCS + MAPS, ids=_rel)
def test_relative_links_resolve(doc):
    broken = [target for target in LINK.findall(doc.read_text())
              if not re.match(r"[a-z]+:", target) and not (doc.parent / target).exists()]
    assert not broken, f"{_rel(doc)}: links to missing files {broken}"


# Paths a document may name that are made at run time, not tracked.
RUNTIME = ("data/", "build/", ".stamps/", ".gpucheck/", ".whl/", ".venv", "/", "shards/", "photos/")
CODE_EXT = r"\.(?:py|cpp|h|cc|cu|sh|tsv|toml|ini|txt|\{[\w,]+\}|\*)$"


def _is_path(token: str) -> bool:
    """Whether a `code` token of a document names a repository file or folder."""
    if not re.fullmatch(r"[\w./*{},-]+", token) or token.startswith(RUNTIME + (".", "torch.")) or "//" in token:
        return False
    return "/" in token or bool(re.search(CODE_EXT, token))


def _expand(token: str) -> list[str]:
    m = re.search(r"\{([^}]*)\}", token)
    return [x for alt in m.group(1).split(",") for x in _expand(token[:m.start()] + alt + token[m.end():])] if m \
        else [token]


def _exists(token: str) -> bool:
    """Whether a file or folder of the repository ends with the path ``token`` (globs and ``{a,b}`` allowed)."""
    for t in _expand(token.rstrip("/")):
        if "*" in t:
            found = any(fnmatch.fnmatch(n, t) or fnmatch.fnmatch(n, "*/" + t) for n in _NAMES)
        else:
            found = t in _SUFFIXES
        if not found:
            return False
    return True


_NAMES = TRACKED + sorted(TRACKED_DIRS)
# Every path of the repository and each of its tails at a "/" ("csrc/core/x.cpp", "core/x.cpp", "x.cpp").
_SUFFIXES = {n.split("/", i)[-1] for n in _NAMES for i in range(n.count("/") + 1)}


def test_the_path_check():
    assert _is_path("csrc/core/batch_decoder.cpp") and _is_path("_fetch.py") and _is_path("ops/ffmpeg_stubs.cpp")
    assert _is_path("csrc/ops/error_translation.{h,cpp}") and _is_path("csrc/core/detail/pixels/pixel_limit.*")
    assert not _is_path("torch.ops.spdl_torch.*") and not _is_path("data/imagenet_like") and not _is_path("a b")
    assert not _is_path(".cu") and not _is_path("../") and not _is_path("index.json")
    assert _exists("detail/jpeg/jpeg_markers.cpp") and _exists("csrc/ops/error_translation.{h,cpp}")
    assert _exists("spdl_torch/transforms/_timm*.py") and _exists("csrc/core/augment/")
    assert not _exists("csrc/core/detail/jpeg_region_decoder.cpp") and not _exists("csrc/ops/error_translation.{h,x}")


@pytest.mark.parametrize("doc", [REPO / "ARCHITECTURE.md", REPO / "CONTRIBUTING.md", REPO / "benchmarks" / "README.md",
                                 *sorted((REPO / "docs").glob("*.md")), *MAPS], ids=_rel)
def test_named_files_exist(doc):
    missing = [t for t in sorted(set(re.findall(r"`([^`\n]+)`", doc.read_text()))) if _is_path(t) and not _exists(t)]
    assert not missing, f"{_rel(doc)} names files that do not exist: {missing}"


# ---- process words --------------------------------------------------------------------------------------------

PROCESS_WORDS = re.compile(
    r"(?<![a-z])issues?[_ ]?#?\d+|\b(?:the|this) issue\b"  # "issue #17", "Issue 3's", "test_issue16", "the issue's file"
    r"|(?<![\w&])#\d+\b"                     # "(#20)"
    r"|\.\./shared"                          # the workspace's shared folder
    r"|(?<![\w.\"'])(?<!aiohttp )(?<!client )(?<!HTTP )(?<!libjpeg )(?<!pytest )(?<!test )"
    r"(?<!decompression )"
    r"sessions?\b(?!\s*[=.(\[_\"'])"         # a "session" as a word; code's sessions (HTTP, libjpeg, pytest) pass
    r"|\blent\b"                             # a "lent" machine
    r"|\b(?:the|its|a) carry\b|\bcarry ?\[|\bcarry (?:alone|only)\b"   # what travels to a device, as a noun
    r"|(?<![\w.~}$-])/(?:work|root|home)/"   # absolute paths of a machine
    r"|(?<![\w.~}$-])/tmp/"
    r"|\bcoordinator\b|\b(?:another|other) helpers?\b|\bhelpers?(?:'s?)? (?:branch|brief|report|task|worktree)"
    r"|\bworktree\b|\bbranch(?:es)?\b(?![- ](?:free|less|prediction))",
    re.IGNORECASE)
# Words every alternative above contains (lower case), and "#" before a digit: a cheap first pass (substring
# tests), so that the full pattern runs on few lines.
CANDIDATE_WORDS = ("issue", "../shared", "session", "lent", "carry", "/work/", "/root/", "/home/", "/tmp/",
                   "coordinator", "helper", "worktree", "branch")
HASH_NUMBER = re.compile(r"#\d")


def _candidate(text: str) -> bool:
    low = text.lower()
    return any(w in low for w in CANDIDATE_WORDS) or bool(HASH_NUMBER.search(text))


# Lines that may hold a match, by file: what they name is legitimate there.
ALLOWED = {
    "benchmarks/gpu_check.sh": ("/tmp/site", "/tmp/gpu_check_bin"),  # scratch folders on the GPU machine
    "tests/datasets/shards/test_write_refusals.py": ("/tmp/abs",),  # an absolute path write_shards refuses
    "tests/reliability/data/hostile_outcomes.tsv": ("corrupt/issue70.jpg",),  # a file name of the media corpus
    "tools/fetch_media_corpus.py": ("issue70.jpg",),  # the same file, fetched
}
# Tracked files that are data, not text to read (raw benchmark records, their charts and the older runs), and this
# file, which spells the words out.
NOT_TEXT = ("benchmarks/results/archive/", "tests/project/test_docs.py")
SCANNED = [p for p in TRACKED if not p.startswith(NOT_TEXT) and not p.endswith((".png", ".json", ".txt"))
           and (REPO / p).is_file()]


def test_no_process_words():
    """One test over every scanned file (a test per file would cost more than the scan)."""
    assert len(SCANNED) > 300 and "spdl_torch/io/_batch.py" in SCANNED and "Makefile" in SCANNED
    hits = []
    for path in SCANNED:
        text = (REPO / path).read_text()
        if not _candidate(text):
            continue
        allowed = ALLOWED.get(path, ())
        hits += [f"{path}:{i}: {line.strip()}" for i, line in enumerate(text.splitlines(), 1)
                 if _candidate(line) and PROCESS_WORDS.search(line) and not any(a in line for a in allowed)]
    assert not hits, ("these lines mention issue numbers, sessions, lent machines, helpers or paths outside the "
                      "repository: state the fact (and name the test or benchmark that shows it)\n" + "\n".join(hits))


def test_the_process_word_pattern():
    for bad in ("## Video (issue #17)", "Issue 3's targets", "(#20)", "see " + "../" + "shared/DESIGN.md",
                "this session", "the sessions that found the defects", "once per session", "on a lent GPU",
                "built from the carry alone", "its carry", 'carry [".whl"]', "/work/main/benchmarks",
                "cd /root/x", "/home/user/data", "the issue's calibration file", "test_issue16_geometry", "out of /tmp/video_bench",
                "the coordinator merges",
                "another helper is replacing it", "the helper's branch", "code on a branch"):
        assert PROCESS_WORDS.search(bad) and _candidate(bad), bad
    for fine in ("the loader issues batch ops", "detail/libjpeg_session.cpp", "`#include`", "a `&#124;` cell",
                 '@pytest.fixture(scope="session")', "session = aiohttp.ClientSession()", "its aiohttp sessions",
                 "await self._session()", "the libjpeg session",
                 "one libjpeg decompression session", "once per test session", "files that carry tags", "carry over",
                 "carried to the consumer", "/proc/self/fd", "a setjmp helper", "the image helpers behind them",
                 "~/work/x", "branch-free", "repo/work/"):
        assert not PROCESS_WORDS.search(fine), fine
