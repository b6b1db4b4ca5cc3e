"""The package's shape (ARCHITECTURE.md): no import cycle between spdl_torch's modules, nor between the
benchmarks'; no part of the package imports another part's private modules or names; the import graph that
ARCHITECTURE.md documents is the real one; every module states its one concern (a docstring) and is on its
folder's map (the nearest README.md); no module grows past a sanity bound. The tests' shape (CONTRIBUTING.md):
tests/ mirrors spdl_torch/, each test file named after the module or package it tests, the shared helpers in
tests/_utils/."""

import ast
import functools
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent.parent / "spdl_torch"
BENCHMARKS = PACKAGE.parent / "benchmarks"
ARCHITECTURE = PACKAGE.parent / "ARCHITECTURE.md"
TESTS = PACKAGE.parent / "tests"
# Test folders that test no single module: checks across the package (interpreter exit, faults, fork, hostile
# inputs, leaks) and of the repository itself (the build, documents and their snippets, this structure, the
# tools, the benchmark suite). Every other folder mirrors a package of spdl_torch/.
CROSS_CUTTING = {"reliability": "the package's behaviour under failure, across modules",
                 "project": "the repository: build, documents, structure, tools, benchmarks"}
# Beside the tests, a test folder holds only these; helpers are modules of tests/_utils/.
TEST_FOLDER_FILES = ("__init__.py", "conftest.py")
# Files are split by concern, not by size: a module holds one noun (``datasets/shards/_table.py``: the member
# table and the reads it allows), however long. This bound only catches a module that has quietly grown a
# second concern: the longest single-noun module is ~630 lines (``datasets/shards/_remote.py``: fetch, retries,
# HttpFetch, the local cache).
SANITY_MAX_LINES = 700
# Imports of another part's private module (or name), each with its reason.
PRIVATE_IMPORTS_ALLOWED = {
    # the datasets' repr and warnings (the loader's converter of user datasets too, through _fused.analysis_of) say
    # why a transform is not fused and which input its unfused part gets: transforms' analysis, which the public
    # fuse() (None when nothing fuses) does not carry
    ("spdl_torch.datasets._fused", "spdl_torch.transforms._fuse", "analyse"): "why a transform is not fused",
    # keep_threads builds a DataLoader inside a function; spdl_torch.DataLoader would close a cycle with the package
    ("spdl_torch.distributed", "spdl_torch.dataloader._loader", "DataLoader"): "the loader keep_threads builds",
}


def _module_name(path: Path, root: Path) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, root: Path, modules: set[str], lazy: bool) -> set[str]:
    """The ``modules`` that ``path`` (a module under the folder ``root``) imports: when it is imported, or
    with ``lazy`` also inside its functions. Imports under ``if TYPE_CHECKING:`` never run and are left
    out. ``from . import x`` of a submodule needs only the package's implicit import, not the package's
    ``__init__`` to have run."""
    name = _module_name(path, root)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = set()

    def visit(body):
        for node in body:
            if isinstance(node, ast.Import):
                out.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(anchor + ([base] if base else []))
                submodules = {f"{base}.{a.name}" for a in node.names} & modules
                out.update(submodules)
                if len(submodules) < len(node.names):  # names defined by the module ``base`` itself
                    out.add(base)
            elif isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                visit(node.orelse)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) and not lazy:
                continue
            else:
                visit(ast.iter_child_nodes(node))

    visit(ast.parse(path.read_text()).body)
    return {m for m in out if m in modules and m != name}


@functools.cache
def _graph(package: Path = PACKAGE, lazy: bool = False) -> dict[str, set[str]]:
    """module -> the modules of the same package it imports (computed once per package and kind: callers do not
    change it)."""
    paths = {_module_name(p, package.parent): p for p in package.rglob("*.py")}
    return {name: _imports(path, package.parent, set(paths), lazy) for name, path in paths.items()}


def _imported_names(path: Path, root: Path) -> list[tuple[str, str]]:
    """``(module, name)`` of every import in ``path`` (inside functions too; ``import a.b``: ``("a", "b")``),
    relative imports resolved."""
    name = _module_name(path, root)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            out += [(base, a.name) for a in node.names]
        elif isinstance(node, ast.Import):
            out += [tuple(a.name.rpartition(".")[::2]) for a in node.names]
    return out


def _part(module: str) -> str | None:
    """The part of the package a module belongs to: its subpackage or public top-level module
    (``pkg.datasets.shards._tar``: ``datasets``, ``pkg.distributed``: ``distributed``); ``None`` for the
    top-level private modules (``pkg._errors``: plumbing every part shares) and the package itself."""
    parts = module.split(".")
    if len(parts) < 2 or parts[1].startswith("_"):
        return None
    return parts[1]


def _private_imports(package: Path = PACKAGE) -> list[tuple[str, str, str]]:
    """``(importer, module, name)`` where one part of the package imports a private module (a ``_`` component
    below the part's name) or a private name (``_x``) of another part. The package's ``__init__`` (which gathers
    the top-level names from where they are defined) is no part."""
    found = []
    for path in sorted(package.rglob("*.py")):
        importer = _module_name(path, package.parent)
        if importer == package.name:
            continue
        for module, name in _imported_names(path, package.parent):
            if module != package.name and not module.startswith(package.name + "."):
                continue
            target = module if module != package.name else f"{module}.{name}"
            there = _part(target)
            if there is None or there == _part(importer):
                continue
            below = target.split(".")[2:] + ([name] if target == module else [])
            if any(part.startswith("_") for part in below):
                found.append((importer, module, name))
    return sorted(found)


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle per strongly connected component of more than one module (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def strong(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            strong(v)
    return found


@pytest.mark.parametrize("lazy", [False, True], ids=["module-level", "with-lazy-imports"])
def test_no_import_cycle(lazy):
    graph = _graph(lazy=lazy)
    assert "spdl_torch.io" in graph["spdl_torch"]  # the graph is read: the package imports its io module
    assert _cycles(graph) == []


@pytest.mark.parametrize("lazy", [False, True], ids=["module-level", "with-lazy-imports"])
def test_no_import_cycle_in_the_benchmarks(lazy):
    graph = _graph(BENCHMARKS, lazy=lazy)
    assert "benchmarks.workloads" in graph["benchmarks.peers"]  # the graph is read
    assert _cycles(graph) == []


def test_no_part_imports_another_ones_private_modules():
    found = _private_imports()
    assert [f for f in found if f not in PRIVATE_IMPORTS_ALLOWED] == []
    assert sorted(PRIVATE_IMPORTS_ALLOWED) == [f for f in found if f in PRIVATE_IMPORTS_ALLOWED]  # none stale


def test_private_import_finder_on_a_small_package(tmp_path):
    pkg = tmp_path / "pkg"
    for sub in ("a", "b"):
        (pkg / sub).mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "_shared.py").write_text("x = 1\n")
    (pkg / "a" / "__init__.py").write_text("from ._impl import y\n")
    (pkg / "a" / "_impl.py").write_text("y = 1\n_z = 2\n")
    (pkg / "b" / "__init__.py").write_text("from .. import _shared\n")
    (pkg / "b" / "_own.py").write_text("")
    (pkg / "b" / "_use.py").write_text("from .._shared import x\nfrom ..a import y\nfrom . import _own\n"
                                       "def f():\n    from ..a._impl import _z\n    from ..a import _impl\n"
                                       "    import pkg.a._impl\n")
    assert _private_imports(pkg) == [("pkg.b._use", "pkg.a", "_impl"), ("pkg.b._use", "pkg.a", "_impl"),
                                     ("pkg.b._use", "pkg.a._impl", "_z")]


def test_cycle_finder_finds_a_cycle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(graph) == [["a", "b", "c"]]


def test_import_graph_of_a_small_package(tmp_path):
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("from . import a\nfrom .b import thing\n")
    (pkg / "a.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .sub import c\n"
                              "def f():\n    from . import b\n")
    (pkg / "b.py").write_text("import os\nfrom .a import f\nthing = 1\n")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "c.py").write_text("from ..b import thing\nfrom .. import a\n")
    assert _graph(pkg) == {"pkg": {"pkg.a", "pkg.b"}, "pkg.a": set(), "pkg.b": {"pkg.a"}, "pkg.sub": set(),
                           "pkg.sub.c": {"pkg.a", "pkg.b"}}
    assert _cycles(_graph(pkg)) == []
    assert _graph(pkg, lazy=True)["pkg.a"] == {"pkg.b"}
    assert _cycles(_graph(pkg, lazy=True)) == [["pkg.a", "pkg.b"]]


def _unit(module: str) -> str:
    """The part of the package a module belongs to: ``spdl_torch`` (its ``__init__.py``), or the subpackage or
    top-level module under it (``io``, ``_errors``)."""
    parts = module.split(".")
    return parts[0] if len(parts) == 1 else parts[1]


def _unit_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """The module graph collapsed onto the package's parts: part -> the other parts its modules import."""
    out: dict[str, set[str]] = {}
    for module, deps in graph.items():
        out.setdefault(_unit(module), set()).update(_unit(d) for d in deps)
    return {u: deps - {u} for u, deps in out.items()}


def _table(graph: dict[str, tuple[set[str], set[str]]]) -> str:
    names = lambda s: ", ".join(f"`{n}`" for n in sorted(s)) or "none"  # noqa: E731
    return "\n".join(f"| `{u}` | {names(a)} | {names(b)} |" for u, (a, b) in sorted(graph.items()))


def _documented_graph(text: str) -> dict[str, tuple[set[str], set[str]]]:
    """The table of ARCHITECTURE.md's "Python import graph": part -> (imports when imported, more inside functions)."""
    section = text.split("## Python import graph", 1)[1].split("\n## ", 1)[0]
    out = {}
    for row in re.findall(r"^\| `(\w+)` \|(.*)\|(.*)\|$", section, re.M):
        out[row[0]] = (set(re.findall(r"`(\w+)`", row[1])), set(re.findall(r"`(\w+)`", row[2])))
    return out


def test_the_documented_import_graph_is_the_real_one():
    eager, lazy = _unit_graph(_graph(lazy=False)), _unit_graph(_graph(lazy=True))  # the cycle tests' graphs
    real = {u: (eager[u], lazy[u] - eager[u]) for u in eager}
    assert _documented_graph(ARCHITECTURE.read_text()) == real, (
        "ARCHITECTURE.md's import graph differs from the code's; the real table:\n" + _table(real))


def test_the_import_graph_table_reads_back():
    graph = {"spdl_torch": ({"io"}, set()), "io": ({"_errors"}, {"cuda"}), "_errors": (set(), set())}
    assert _documented_graph("## Python import graph\n\n" + _table(graph) + "\n\n## Next\n| `x` | `y` | none |") == graph
    assert _unit_graph({"p": {"p.io"}, "p.io": {"p.io._a", "p._e"}, "p.io._a": set(), "p._e": set()}) == {
        "p": {"io"}, "io": {"_e"}, "_e": set()}


MODULES = sorted(PACKAGE.rglob("*.py"))


def _folder_map(path: Path) -> Path:
    """The README.md that maps ``path``'s folder: its own, else the nearest one above it."""
    folder = path.parent
    while not (folder / "README.md").exists():
        folder = folder.parent
    return folder / "README.md"


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_module_states_its_concern_and_is_on_the_map(path):
    rel = path.relative_to(PACKAGE.parent)
    assert ast.get_docstring(ast.parse(path.read_text())), f"{rel}: no module docstring saying what it holds"
    if path.name != "__init__.py":
        readme = _folder_map(path)
        assert path.stem in readme.read_text(), f"{rel} is not named in {readme.relative_to(PACKAGE.parent)}"


def test_the_map_finds_the_nearest_readme():
    shards = PACKAGE / "datasets" / "shards"
    assert _folder_map(shards / "_table.py") == shards / "README.md"
    assert _folder_map(PACKAGE / "io" / "_image.py") == PACKAGE / "README.md"


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_module_length_sanity_bound(path):
    lines = len(path.read_text().splitlines())
    assert lines <= SANITY_MAX_LINES, f"{path.relative_to(PACKAGE.parent)}: {lines} lines; does it hold two concerns?"


def _mirror_problems(tests: Path = TESTS, package: Path = PACKAGE, cross_cutting=CROSS_CUTTING) -> list[str]:
    """What breaks the mirror: a test file ``tests/<area>/test_<name>.py`` whose ``<name>`` is not a module or
    subpackage of ``spdl_torch/<area>`` (underscore dropped), alone or followed by ``_<aspect>``; a test folder
    that is no package of spdl_torch; a helper module outside tests/_utils/."""
    problems = []
    for path in sorted(tests.rglob("*.py")):
        rel = path.relative_to(tests)
        area = rel.parts[:-1]
        if "__pycache__" in area or (area and (area[0] in cross_cutting or area[0] == "_utils")):
            continue
        if not path.name.startswith("test_"):
            if path.name not in TEST_FOLDER_FILES:
                problems.append(f"tests/{rel}: a helper beside the tests (helpers are modules of tests/_utils/)")
            continue
        folder = package.joinpath(*area)
        if not (folder / "__init__.py").is_file():
            problems.append(f"tests/{rel}: spdl_torch/{'/'.join(area)} is no package")
            continue
        names = {p.stem.lstrip("_") for p in folder.glob("*.py") if p.name != "__init__.py"}
        names |= {p.name for p in folder.iterdir() if (p / "__init__.py").is_file()}
        stem = path.stem[len("test_"):]
        if not any(stem == n or stem.startswith(n + "_") for n in names):
            problems.append(f"tests/{rel}: names no module or package of spdl_torch/{'/'.join(area)}")
    return problems


def test_tests_mirror_the_package():
    assert _mirror_problems() == []
    assert (TESTS / "io" / "test_image.py").is_file() and (PACKAGE / "io" / "_image.py").is_file()  # it reads both


def test_the_mirror_check_on_a_small_tree(tmp_path):
    pkg, tests = tmp_path / "pkg", tmp_path / "tests"
    for f in ("__init__.py", "_errors.py", "io/__init__.py", "io/_video_clips.py", "io/_video.py", "sub/__init__.py",
              "sub/inner/__init__.py"):
        (pkg / f).parent.mkdir(parents=True, exist_ok=True)
        (pkg / f).write_text("")
    good = ["test_errors.py", "test_sub.py", "io/test_video.py", "io/test_video_clips_layout.py", "io/test_video_seek.py",
            "sub/test_inner.py", "reliability/test_anything.py", "_utils/images.py", "io/conftest.py", "io/__init__.py"]
    bad = ["test_error.py", "io/test_image.py", "io/test_videos.py", "widgets/test_widgets.py", "io/helpers.py"]
    for f in good + bad:
        (tests / f).parent.mkdir(parents=True, exist_ok=True)
        (tests / f).write_text("")
    assert _mirror_problems(tests, pkg, {"reliability": ""}) == [
        "tests/io/helpers.py: a helper beside the tests (helpers are modules of tests/_utils/)",
        "tests/io/test_image.py: names no module or package of spdl_torch/io",
        "tests/io/test_videos.py: names no module or package of spdl_torch/io",
        "tests/test_error.py: names no module or package of spdl_torch/",
        "tests/widgets/test_widgets.py: spdl_torch/widgets is no package",
    ]


# ---------------------------------------------------------------------------------------------- the public names

README = PACKAGE / "README.md"
# The bound on the public surface: every name is one more a user must learn and the project must keep
MAX_PUBLIC_NAMES = 60


def _public_modules(package: Path = PACKAGE) -> list[str]:
    """The modules a user imports (no ``_`` component below the package: ``spdl_torch``, its namespaces,
    ``spdl_torch.datasets.shards``, ``spdl_torch.deploy``, ...), sorted."""
    names = {_module_name(p, package.parent) for p in package.rglob("*.py")}
    return sorted(n for n in names if not any(part.startswith("_") for part in n.split(".")))


def _exports() -> dict[str, list[str]]:
    """Public module -> its ``__all__`` minus the submodules it lists (``spdl_torch.__all__`` names its
    namespaces), each module imported."""
    import importlib
    import types

    out = {}
    for name in _public_modules():
        module = importlib.import_module(name)
        assert hasattr(module, "__all__"), f"{name} has no __all__"
        out[name] = [n for n in module.__all__ if not isinstance(getattr(module, n, None), types.ModuleType)]
    return out


def _readme_table(text: str) -> dict[str, list[str]]:
    """namespace -> the backquoted names of its row in the table under "## The public names"."""
    section = text.split("## The public names", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 2 and re.fullmatch(r"`[\w.]+`", cells[0]):
            rows[cells[0].strip("`")] = re.findall(r"`(\w+)`", cells[1])
    return rows


def test_public_modules_are_the_namespaces():
    assert _public_modules() == ["spdl_torch", "spdl_torch.cuda", "spdl_torch.dataloader", "spdl_torch.datasets",
                                 "spdl_torch.datasets.shards", "spdl_torch.deploy", "spdl_torch.distributed",
                                 "spdl_torch.io", "spdl_torch.pipeline", "spdl_torch.transforms"]


def test_every_public_name_imports_and_is_exported_from_one_place():
    import importlib

    where: dict[str, list[str]] = {}
    for module, names in _exports().items():
        assert len(names) == len(set(names)), f"{module}.__all__ lists a name twice"
        for n in names:
            assert hasattr(importlib.import_module(module), n), f"{module}.__all__ lists {n}, which is not there"
            exec(f"from {module} import {n}", {})  # the import a user writes
            where.setdefault(n, []).append(module)
    twice = {n: ms for n, ms in where.items() if len(ms) > 1}
    assert twice == {}, f"names exported from more than one place: {twice}"
    assert len(where) <= MAX_PUBLIC_NAMES, f"{len(where)} public names (at most {MAX_PUBLIC_NAMES}): {sorted(where)}"


def test_the_readme_table_lists_exactly_the_exports():
    table, exports = _readme_table(README.read_text()), _exports()
    assert sorted(table) == sorted(exports), "spdl_torch/README.md's namespaces differ from the public modules"
    for module, names in exports.items():
        assert sorted(table[module]) == sorted(names), (
            f"spdl_torch/README.md's row of {module}: missing {sorted(set(names) - set(table[module]))}, "
            f"not exported {sorted(set(table[module]) - set(names))}")
        assert len(table[module]) == len(set(table[module])), f"spdl_torch/README.md's row of {module} repeats a name"


def test_the_readme_table_reader_on_a_small_table():
    text = ("# x\n\n## The public names\n\n| namespace | names |\n|---|---|\n| `pkg` | `A`, `b` |\n"
            "| `pkg.io` | images: `decode`, `Mode`; limits: `limits` |\n\n## The modules\n\n| `pkg.other` | `X` |\n")
    assert _readme_table(text) == {"pkg": ["A", "b"], "pkg.io": ["decode", "Mode", "limits"]}
