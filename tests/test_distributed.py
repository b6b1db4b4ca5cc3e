"""spdl_torch.distributed: rank sharding under torchrun (2 ranks, gloo, CPU) and the padding rules."""

import json
import os
import shutil
import socket
import subprocess
import sys

import pytest
import torch
from torch.utils.data.distributed import DistributedSampler

from spdl_torch import DataLoader
from spdl_torch.distributed import DistributedShard, shard_by_rank
from spdl_torch._ranks import rank_and_world_size

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

_RANK_SCRIPT = r"""
import json, sys
import torch
import torch.distributed as dist
from spdl_torch import DataLoader
from spdl_torch.distributed import DistributedShard, shard_by_rank

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
result = {}
for n, drop_last in [(24, False), (23, False), (23, True)]:
    ds = list(range(n))
    shard = DataLoader(DistributedShard(ds, shuffle=True, seed=1, drop_last=drop_last), batch_size=5, num_workers=2)
    sampler = shard_by_rank(ds, shuffle=True, seed=1, drop_last=drop_last)
    plain = DataLoader(ds, batch_size=5, sampler=sampler, num_workers=2)
    epochs = []
    for epoch in range(2):
        sampler.set_epoch(epoch)
        a = [b.tolist() for b in shard]
        b = [b.tolist() for b in plain]
        epochs.append({"shard": a, "sampler": b})
    result[f"{n}-{drop_last}"] = epochs
gathered = [None] * world
dist.all_gather_object(gathered, result)
if rank == 0:
    with open(sys.argv[1], "w") as f:
        json.dump(gathered, f)
dist.barrier()
dist.destroy_process_group()
"""


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_two_ranks_under_torchrun(tmp_path):
    torchrun = os.path.join(os.path.dirname(sys.executable), "torchrun")
    if not os.path.exists(torchrun):
        torchrun = shutil.which("torchrun")
    if torchrun is None:
        pytest.skip("torchrun not found")
    script, out = tmp_path / "rank.py", tmp_path / "out.json"
    script.write_text(_RANK_SCRIPT)
    env = dict(os.environ, PYTHONPATH=ROOT, OMP_NUM_THREADS="1")
    proc = subprocess.run(
        [torchrun, "--nproc_per_node=2", f"--master_port={_free_port()}", str(script), str(out)],
        capture_output=True, text=True, env=env, timeout=120,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    ranks = json.loads(out.read_text())
    assert len(ranks) == 2
    for key in ranks[0]:
        n, drop_last = int(key.split("-")[0]), key.endswith("True")
        for epoch in range(2):
            per_rank = [[x for b in r[key][epoch]["shard"] for x in b] for r in ranks]
            # DistributedShard == torch's DistributedSampler, batch for batch
            assert [r[key][epoch]["shard"] for r in ranks] == [r[key][epoch]["sampler"] for r in ranks]
            # equal batch counts on every rank
            assert len(ranks[0][key][epoch]["shard"]) == len(ranks[1][key][epoch]["shard"])
            assert len(per_rank[0]) == len(per_rank[1])
            both = per_rank[0] + per_rank[1]
            if n % 2 == 0 or drop_last:
                assert not set(per_rank[0]) & set(per_rank[1])  # disjoint
                assert len(both) == len(set(both)) == (n // 2) * 2
                if n % 2 == 0:
                    assert sorted(both) == list(range(n))  # covers the dataset
            else:
                assert sorted(set(both)) == list(range(n)) and len(both) == n + 1  # one padding sample
        assert ranks[0][key][0]["shard"] != ranks[0][key][1]["shard"]  # reshuffled per epoch


def test_shard_matches_distributed_sampler_and_set_epoch():
    ds = list(range(23))
    for rank in range(3):
        shard = DistributedShard(ds, rank=rank, world_size=3, seed=5)
        ref = DistributedSampler(ds, num_replicas=3, rank=rank, seed=5)
        for epoch in range(2):
            ref.set_epoch(epoch)
            shard.set_epoch(epoch)
            assert [shard[i] for i in range(len(shard))] == list(ref)
        # our DataLoader calls set_epoch itself every epoch
        loader = DataLoader(shard, batch_size=4, num_workers=2)
        for epoch in range(2):
            ref.set_epoch(epoch)
            assert [x for b in loader for x in b.tolist()] == list(ref)


def test_rank_from_env(monkeypatch):
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("WORLD_SIZE", "4")
    assert rank_and_world_size() == (1, 4)
    s = shard_by_rank(list(range(10)), shuffle=False)
    assert list(s) == [1, 5, 9]
    monkeypatch.setenv("RANK", "4")
    with pytest.raises(ValueError, match="invalid RANK=4"):
        rank_and_world_size()
    with pytest.raises(ValueError, match="rank=5 must be in"):
        DistributedShard([1], rank=5, world_size=2)
    monkeypatch.delenv("RANK")
    monkeypatch.delenv("WORLD_SIZE")
    assert rank_and_world_size() == (0, 1)
    assert torch.equal(torch.tensor(len(DistributedShard(list(range(7))))), torch.tensor(7))


def test_keep_threads_refuses_a_loader_accelerate_did_not_prepare():
    from spdl_torch.distributed import keep_threads

    with pytest.raises(TypeError, match="Accelerator.prepare"):
        keep_threads(DataLoader(list(range(4))))
