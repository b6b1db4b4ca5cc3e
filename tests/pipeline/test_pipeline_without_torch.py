"""The engine (spdl_torch.pipeline) imports no torch: it runs in a process where torch cannot be imported, and it
offers no torch-facing name (PipelineDataset, a pipeline as a torch IterableDataset, is in spdl_torch.datasets)."""

import ast
import subprocess
import sys
from pathlib import Path

import torch

import spdl_torch.datasets
import spdl_torch.pipeline

ROOT = Path(__file__).resolve().parents[2]
ENGINE = ROOT / "spdl_torch" / "pipeline"

# torch blocked (import fails); the spdl_torch package stood in by a bare package object, so that its
# __init__ (which loads the ops through torch) does not run and only the engine's own imports happen.
CHILD = r"""
import sys, types
sys.modules["torch"] = None
root = sys.argv[1]
pkg = types.ModuleType("spdl_torch")
pkg.__path__ = [root + "/spdl_torch"]
sys.modules["spdl_torch"] = pkg
from spdl_torch.pipeline import PipelineBuilder
p = PipelineBuilder().add_source(range(10)).pipe(lambda x: x * x, concurrency=3).aggregate(4).add_sink(2).build(num_threads=2)
print([sorted(b) for b in p])
print(sorted(m for m, v in sys.modules.items() if v is not None and (m == "torch" or m.startswith("torch."))))
import spdl_torch.pipeline as engine
print(sorted(engine.__all__))
"""


def test_engine_runs_with_torch_blocked():
    out = subprocess.run([sys.executable, "-c", CHILD, str(ROOT)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    batches, torch_modules, names = out.stdout.splitlines()
    assert batches == "[[0, 1, 4, 9], [16, 25, 36, 49], [64, 81]]"
    assert torch_modules == "[]"
    assert names == "['Pipeline', 'PipelineBuilder', 'PipelineFailure']"


def _imported_roots(path: Path) -> set[str]:
    """Top-level package names imported anywhere in the file (module level and inside functions)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def test_engine_sources_import_no_torch_or_numpy():
    files = sorted(ENGINE.glob("*.py"))
    assert len(files) >= 8  # the engine's modules are read
    for path in files:
        assert not _imported_roots(path) & {"torch", "numpy"}, path.name


def test_pipeline_dataset_is_in_the_datasets_only():
    assert issubclass(spdl_torch.datasets.PipelineDataset, torch.utils.data.IterableDataset)
    assert "PipelineDataset" in spdl_torch.datasets.__all__
    assert not hasattr(spdl_torch.pipeline, "PipelineDataset") and not hasattr(spdl_torch.pipeline.Pipeline, "as_dataset")
