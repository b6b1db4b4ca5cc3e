"""The DataLoader under real frameworks: PyTorch Lightning's DDP Trainer and Hugging Face Accelerate's ``prepare``
re-create a DataLoader from its constructor arguments to inject a distributed sampler. With 2 ranks (CPU,
gloo, ``torchrun --nproc-per-node 2``) each rank must see a disjoint half of the samples, and where the
framework keeps the loader's class, it stays an ``spdl_torch.DataLoader`` whose workers are threads.

Each case starts two processes of ``tests/_utils/run_framework_rank.py`` and takes ~20 s: the tests are
marked ``frameworks``, a tier of their own (``make test-frameworks``), which ``make test`` leaves out.
"""

import json
import os
import subprocess
import sys

import pytest

from tests._utils.loaders import OUR_THREAD_PREFIX

pytestmark = pytest.mark.frameworks  # ~80 s in all (2-process torchrun): `make test-frameworks`

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RANK_SCRIPT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "_utils",
                           "run_framework_rank.py")
N = 16  # run_framework_rank.N


def _write_folder(out_dir):
    """A torchvision ImageFolder tree: file ``i`` solid of value ``10 i`` (the rank script reads the index back)."""
    import numpy as np
    from PIL import Image

    (out_dir / "folder" / "c").mkdir(parents=True)
    for i in range(N):
        Image.fromarray(np.full((12, 10, 3), 10 * i, dtype=np.uint8)).save(out_dir / "folder" / "c" / f"{i:02d}.png")


def _run_two_ranks(framework, which, out_dir):
    if which == "spdl-folder":
        _write_folder(out_dir)
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2", RANK_SCRIPT,
           framework, which, str(out_dir)]
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""), OMP_NUM_THREADS="1")
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=REPO, timeout=600)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    ranks = [json.load(open(os.path.join(out_dir, f"rank{r}.json"))) for r in (0, 1)]
    assert [r["rank"] for r in ranks] == [0, 1]
    return ranks


def _assert_sharded(ranks):
    seen = [r["seen"] for r in ranks]
    assert all(len(s) == N // 2 for s in seen), seen  # each rank a half ...
    assert set(seen[0]).isdisjoint(seen[1]), seen  # ... disjoint ...
    assert sorted(seen[0] + seen[1]) == list(range(N)), seen  # ... and together every sample once


def _framework(name):
    pytest.importorskip({"lightning": "pytorch_lightning", "accelerate": "accelerate"}[name])


def _assert_processes(ranks):
    """``worker_mode="process"`` kept in the loader the framework built: loaded in worker processes."""
    assert all(r["is_spdl"] and r["mode"] == "process" for r in ranks), ranks
    assert all(r["threads"] == ["MainThread"] and r["pid"] not in r["pids"] for r in ranks), ranks


@pytest.mark.parametrize("which", ["torch", "spdl", "spdl-process", "spdl-folder"])
def test_lightning_ddp_two_ranks_see_disjoint_halves(which, tmp_path):
    _framework("lightning")
    ranks = _run_two_ranks("lightning", which, tmp_path)
    _assert_sharded(ranks)
    assert all(r["sampler"] == "DistributedSampler" for r in ranks)
    if which in ("spdl", "spdl-folder"):  # Lightning re-creates the loader with its own class: still ours, on threads
        assert all(r["is_spdl"] for r in ranks), ranks
        assert all(t.startswith(OUR_THREAD_PREFIX) for r in ranks for t in r["threads"]), ranks
    if which == "spdl-process":
        _assert_processes(ranks)


@pytest.mark.parametrize("which", ["torch", "spdl", "spdl-process", "spdl-folder"])
def test_accelerate_prepare_two_ranks_shard(which, tmp_path):
    _framework("accelerate")
    ranks = _run_two_ranks("accelerate", which, tmp_path)
    _assert_sharded(ranks)
    # Accelerate re-creates every loader as its own DataLoaderShard over a new torch DataLoader; with ours,
    # spdl_torch.distributed.keep_threads puts a spdl_torch.DataLoader back inside: sharded, and threads
    if which in ("spdl", "spdl-folder"):  # a torchvision ImageFolder: converted in the re-created loader too
        assert all(r["is_spdl"] for r in ranks), ranks
        assert all(t.startswith(OUR_THREAD_PREFIX) for r in ranks for t in r["threads"]), ranks
    if which == "spdl-process":  # keep_threads(like=loader) keeps worker_mode="process"
        _assert_processes(ranks)
