"""One rank of tests/datasets/shards/test_dataset_torchrun.py, started twice by ``torchrun --nproc-per-node 2``:

    torchrun --standalone --nproc-per-node 2 run_shard_rank.py INDEX_JSON OUT_DIR

With a gloo process group (CPU), iterates one epoch of ``TarShardDataset(INDEX_JSON)`` (rank and world size from
the process group) through ``spdl_torch.DataLoader(num_workers=2, batch_size=4)``, then consumes 3 batches of
the next epoch and gathers every rank's loader state; writes ``OUT_DIR/rank<r>.json``: the sample indices, the
batch count, ``len(dataset)``, the indices consumed in the second epoch and (rank 0) the merged state.
"""

import json
import os
import sys

import torch
import torch.distributed as dist

import spdl_torch
from spdl_torch.datasets import TarShardDataset


def _indices(batch):
    return torch.tensor([s["__index__"] for s in batch])


def main(index: str, out_dir: str) -> None:
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    ds = TarShardDataset(index, shuffle_buffer=16, seed=3)
    loader = spdl_torch.DataLoader(ds, batch_size=4, num_workers=2, collate_fn=_indices)
    seen, batches = [], 0
    for b in loader:
        seen += b.tolist()
        batches += 1
    it = iter(loader)  # epoch 1: consume 3 batches, then save
    consumed = [i for _ in range(3) for i in next(it).tolist()]
    state = loader.state_dict()
    del it
    states = [None] * dist.get_world_size()
    dist.all_gather_object(states, state)
    out = {"rank": rank, "world": dist.get_world_size(), "seen": seen, "batches": batches, "len": len(ds),
           "consumed": consumed, "merged": TarShardDataset.merge_states(states) if rank == 0 else None}
    with open(os.path.join(out_dir, f"rank{rank}.json"), "w") as f:
        json.dump(out, f)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
