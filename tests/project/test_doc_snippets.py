"""Every Python snippet of README.md and docs/*.md is part of a runnable example in examples/ (the README's in
``quickstart.py``, a page's in ``docs_<page>.py``), and every example runs, on the tiny inputs
``examples/_inputs.py`` makes (photos named as the snippets name them, a short video and audio files made with
the ffmpeg CLI). An example binds the names a snippet leaves to the reader before it and asserts what the
snippet's comments promise after it, so running the examples runs the documentation as written."""

import re
import runpy
import sys
from pathlib import Path

import pytest
import torch

REPO = Path(__file__).resolve().parent.parent.parent
EXAMPLES = REPO / "examples"
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
sys.path.insert(0, str(EXAMPLES))
import _inputs  # noqa: E402  (examples/_inputs.py)

# (page, block) -> the example holding it, where it is not the page's own (quickstart.py, docs_<page>.py).
HOME = {
    ("shards.md", 1): "docs_shards_media.py",
    ("shards.md", 2): "docs_shards_s3.py",
    ("deploy.md", 1): "docs_deploy_export.py",
    ("dataloader.md", 3): "docs_dataloader_hf.py",
}
# (page, block) -> lines the example leaves out: they name a host the snippet only illustrates.
DROP = {
    ("shards.md", 0): ("https://host/",),
    ("shards.md", 2): ("{000000..000999}",),  # a thousand shards: the tiny inputs make one
}
# example -> why the fast tier does not run it (None: it runs), or what it needs.
NEEDS_FFMPEG = {"docs_video.py", "docs_audio.py", "docs_shards_media.py"}
NEEDS_MODULE = {"docs_dataloader_hf.py": "datasets"}  # an optional dependency (the "hf" extra)
SLOW = {"docs_deploy_export.py": "torch.export + AOTInductor: about a minute of g++",
        "docs_shards_s3.py": "starts a local S3 server (moto, ~3 s)"}


def _blocks():
    for page in PAGES:
        for i, code in enumerate(re.findall(r"```python\n(.*?)```", page.read_text(), re.S)):
            yield page.name, i, code


def _home(page: str, block: int) -> str:
    return HOME.get((page, block), "quickstart.py" if page == "README.md" else f"docs_{page[:-3]}.py")


def _lines(code: str) -> list[str]:
    return [ln.strip() for ln in code.splitlines() if ln.strip()]


def _contains(haystack: list[str], needle: list[str]) -> bool:
    return any(haystack[i:i + len(needle)] == needle for i in range(len(haystack) - len(needle) + 1))


@pytest.mark.parametrize(("page", "block", "code"), [pytest.param(*b, id=f"{b[0][:-3]}-{b[1]}") for b in _blocks()])
def test_every_snippet_is_in_its_example(page, block, code):
    example = EXAMPLES / _home(page, block)
    assert example.exists(), f"{page}'s snippet {block} has no example: write {example.relative_to(REPO)}"
    wanted = [ln for ln in _lines(code) if not any(d in ln for d in DROP.get((page, block), ()))]
    assert _contains(_lines(example.read_text()), wanted), (
        f"{example.relative_to(REPO)} does not hold {page}'s snippet {block} as written (indentation aside)")


def test_every_example_holds_a_snippet_and_the_check_can_fail():
    homes = {_home(page, block) for page, block, _ in _blocks()}
    assert {p.name for p in EXAMPLES.glob("docs_*.py")} | {"quickstart.py"} == homes
    assert not _contains(["a", "b", "c"], ["a", "c"]) and _contains(["a", "b", "c"], ["b", "c"])


EXAMPLE_FILES = sorted({_home(page, block) for page, block, _ in _blocks()})


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """A folder holding every input the snippets name."""
    return _inputs.make_inputs(tmp_path_factory.mktemp("snippets"))


@pytest.mark.filterwarnings("ignore:This DataLoader will create:UserWarning")  # num_workers=4 on 2 cores
@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n in SLOW else n for n in EXAMPLE_FILES])
def test_example_runs(name, world, monkeypatch):
    if name == "docs_cuda.py" and not torch.cuda.is_available():
        pytest.skip("needs a CUDA device (the tests marked cuda run these calls on one)")
    if name in NEEDS_FFMPEG and not _inputs.FFMPEG:
        pytest.skip("the ffmpeg CLI makes this example's inputs (apt-get install ffmpeg)")
    if name in NEEDS_MODULE:
        pytest.importorskip(NEEDS_MODULE[name])
    monkeypatch.chdir(world)
    monkeypatch.setattr(sys, "argv", [name, "--in", str(world)])
    runpy.run_path(str(EXAMPLES / name), run_name="__main__")  # the example asserts what its snippets promise
