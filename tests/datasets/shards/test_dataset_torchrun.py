"""Two real ranks: ``torchrun --nproc-per-node 2`` (gloo, CPU) over shards whose sample count is odd, so the ranks
need padding: disjoint halves (but for the padding), every sample covered, equal batch counts; then a resume of
the gathered state on one rank delivers every sample the two ranks had not consumed, once.

It starts two Python processes (~30 s on 2 busy cores): marked ``torchrun``, a tier of its own
(``make test-torchrun``), which ``make test`` leaves out; ``test_order.py`` checks the same rules with ranks
given explicitly, in ``make test``.
"""

import json
import os
import subprocess
import sys

import pytest

import spdl_torch
from spdl_torch.datasets import TarShardDataset, write_shards

from tests._utils.shards import make_samples

pytestmark = pytest.mark.torchrun

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
RANK_SCRIPT = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "_utils",
                           "run_shard_rank.py")
N = 101


def test_two_ranks_disjoint_cover_equal_and_resume(tmp_path):
    write_shards(make_samples(N), tmp_path / "s", shard_size=20_000)
    index = str(tmp_path / "s" / "index.json")
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2", RANK_SCRIPT,
           index, str(tmp_path)]
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""), OMP_NUM_THREADS="1")
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=REPO, timeout=600)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    r0, r1 = (json.load(open(tmp_path / f"rank{r}.json")) for r in (0, 1))
    assert (r0["rank"], r1["rank"], r0["world"]) == (0, 1, 2)
    half = -(-N // 2)
    assert len(r0["seen"]) == len(r1["seen"]) == r0["len"] == half  # equal counts, padded
    assert r0["batches"] == r1["batches"]
    assert sorted(set(r0["seen"]) | set(r1["seen"])) == list(range(N))  # coverage
    assert len(set(r0["seen"]) & set(r1["seen"])) == 2 * half - N  # disjoint but for the padding
    g = TarShardDataset(index, shuffle_buffer=16, seed=3).global_order(0)
    assert sorted(r0["seen"]) == sorted(g[:half]) and sorted(r1["seen"]) == sorted((g + g)[half:2 * half])
    # resume epoch 1 on a single rank from the merged state of both ranks
    ds = TarShardDataset(index, shuffle_buffer=16, seed=3, rank=0, world_size=1)
    ds.load_state_dict(r0["merged"])
    rest = [s["__index__"] for s in spdl_torch.DataLoader(ds, batch_size=None, num_workers=2)]
    consumed = r0["consumed"] + r1["consumed"]
    assert len(consumed) == 24 == len(set(consumed))
    assert sorted(rest + consumed) == list(range(N))  # every sample of epoch 1 once, across the two runs
