"""The global order, its split over ranks and worker threads, and resume (same split and another one)."""

import collections
import pickle

import pytest
import torch

import spdl_torch
from spdl_torch.datasets import TarShardDataset
from spdl_torch.datasets.shards._order import Split, subtract

from tests._utils.shards import index_of

N = 240
pytestmark = pytest.mark.filterwarnings("ignore:This DataLoader will create")


def _ds(d, **kw):
    kw.setdefault("shuffle_buffer", 16)
    return TarShardDataset(index_of(d), **kw)


def _indices(batches):
    return [i for b in batches for i in b["__index__"].tolist()]


def _keys(batch):
    return {"__index__": torch.tensor([s["__index__"] for s in batch])}


def _loader(ds, workers, batch=4, **kw):
    return spdl_torch.DataLoader(ds, batch_size=batch, num_workers=workers, collate_fn=_keys, **kw)


def _check_rank(got, mine, workers):
    """``got`` (what a rank's loader yielded) is ``mine`` (its slice of the order) split into ``workers``
    contiguous parts, each delivered in order (the loader interleaves the workers' batches)."""
    assert sorted(got) == sorted(mine)
    q, rem = divmod(len(mine), workers)
    lo = 0
    for t in range(workers):
        part = mine[lo:lo + q + (t < rem)]
        lo += len(part)
        assert [i for i in got if i in set(part)] == part


def test_global_order_is_a_seeded_permutation(shard_dir):
    d, _, _ = shard_dir
    ds = _ds(d, seed=3)
    g0, g1 = ds.global_order(0), ds.global_order(1)
    assert sorted(g0) == list(range(N)) and sorted(g1) == list(range(N))
    assert g0 != g1 and g0 != list(range(N))
    assert _ds(d, seed=3).global_order(0) == g0
    assert _ds(d, seed=4).global_order(0) != g0
    assert _ds(d, shuffle=False).global_order(5) == list(range(N))
    # one block of the shuffle buffer holds 16 consecutive samples of the permuted shards
    lay = ds.layout(0)
    x = [lay.x_of(p) for p in range(N)]
    assert all(sorted(x[k:k + 16]) == list(range(k, min(k + 16, N))) for k in range(0, N, 16))


def test_one_reader_delivers_the_global_order(shard_dir):
    d, _, samples = shard_dir
    ds = _ds(d, seed=1)
    ds.set_epoch(2)
    out = list(ds)
    assert [o["__index__"] for o in out] == ds.global_order(2)
    assert [o["__key__"] for o in out] == [samples[i][0] for i in ds.global_order(2)]


@pytest.mark.parametrize("world, workers", [(1, 1), (1, 3), (2, 2), (3, 1), (4, 3)])
def test_ranks_and_threads_split_the_same_global_order(shard_dir, world, workers):
    d, _, _ = shard_dir
    g = _ds(d, seed=7).global_order(0)
    per_rank = []
    for r in range(world):
        ds = _ds(d, seed=7, rank=r, world_size=world)
        got = _indices(_loader(ds, workers))
        assert len(got) == len(ds)
        per_rank.append(got)
    n = -(-N // world)
    assert all(len(p) == n for p in per_rank)  # equal counts (padding as DistributedSampler)
    padded = (g + g)[: n * world]
    for r, got in enumerate(per_rank):
        _check_rank(got, padded[r * n:(r + 1) * n], workers)
    assert sorted(i for p in per_rank for i in p) == sorted(padded)
    if N % world == 0:
        assert sum(len(set(p)) for p in per_rank) == N  # disjoint


def test_drop_last_drops_the_tail_of_the_order(shard_dir):
    d, _, _ = shard_dir
    g = _ds(d).global_order(0)
    got = [_indices(_loader(_ds(d, rank=r, world_size=7, drop_last=True), 2)) for r in range(7)]
    assert [len(x) for x in got] == [N // 7] * 7
    assert sorted(i for x in got for i in x) == sorted(g[: (N // 7) * 7])


def test_completion_order_does_not_change_what_a_worker_delivers(shard_dir):
    d, _, _ = shard_dir
    a = _indices(_loader(_ds(d, seed=2), 3))
    b = _indices(_loader(_ds(d, seed=2), 3, in_order=False))
    assert sorted(a) == sorted(b) == list(range(N))


def test_resume_same_split_continues_exactly_mid_shard(shard_dir):
    d, _, _ = shard_dir
    full = _indices(_loader(_ds(d, seed=5), 2, batch=3))
    loader = _loader(_ds(d, seed=5), 2, batch=3)
    it = iter(loader)
    head = _indices(next(it) for _ in range(7))  # 21 samples: inside a shard (shards hold 8-20 samples)
    state = loader.state_dict()
    del it
    assert len(pickle.dumps(state["iter_states"])) < 1500  # our part: a few integers per worker
    resumed = _loader(_ds(d, seed=5), 2, batch=3)
    resumed.load_state_dict(state)
    tail = _indices(resumed)
    assert head + tail == full


def test_resume_across_world_sizes_delivers_every_remaining_sample_once(shard_dir):
    d, _, _ = shard_dir
    # two ranks with two workers each consume a few batches
    consumed, states = [], []
    for r, k in ((0, 5), (1, 2)):
        loader = _loader(_ds(d, seed=9, rank=r, world_size=2), 2, batch=4)
        it = iter(loader)
        consumed += _indices(next(it) for _ in range(k))
        states.append(loader.state_dict())
        del it
    merged = TarShardDataset.merge_states(states)
    assert len(pickle.dumps(merged)) < 3000
    remaining = sorted(set(range(N)) - set(consumed))
    # resume on three ranks with one worker each, then on one rank with three workers
    for world, workers in ((3, 1), (1, 3)):
        out = []
        counts = []
        per_rank = []
        for r in range(world):
            ds = _ds(d, seed=9, rank=r, world_size=world)
            ds.load_state_dict(merged)
            got = _indices(_loader(ds, workers, batch=4))
            counts.append(len(got))
            per_rank.append(got)
            out += got
        assert len(set(counts)) == 1
        pad = counts[0] * world - len(remaining)
        assert sorted(set(out)) == remaining  # every remaining sample, none consumed before
        assert len(out) - len(set(out)) == pad < world  # repeats only as padding
        # the remainder keeps G's order, split anew: rank r's contiguous slice of it, per worker in order
        g = _ds(d, seed=9).global_order(0)
        rest = [i for i in g if i in set(remaining)]
        n = counts[0]
        rest = (rest + rest)[: n * world]
        for r, got in enumerate(per_rank):
            _check_rank(got, rest[r * n:(r + 1) * n], workers)


def test_after_a_merged_resume_the_next_epoch_is_whole(shard_dir):
    d, _, _ = shard_dir
    loader = _loader(_ds(d, seed=1), 2)
    it = iter(loader)
    first = _indices(next(it) for _ in range(3))
    state = loader.state_dict()
    del it
    for workers in (1, 2):
        ds = _ds(d, seed=1)
        ds.load_state_dict(TarShardDataset.merge_states([state]))
        loader = _loader(ds, workers)
        assert len(ds) == N - len(first)
        rest = _indices(loader)
        assert sorted(first + rest) == list(range(N))
        nxt = []
        for batch in loader:  # the dataset's epoch follows the loader's (its len() too)
            assert len(ds) == N and ds.epoch == 1
            nxt += _indices([batch])
        if workers == 1:
            assert nxt == ds.global_order(1)
        assert sorted(nxt) == list(range(N))


def test_state_of_another_split_is_refused(shard_dir):
    d, _, _ = shard_dir
    loader = _loader(_ds(d), 2)
    it = iter(loader)
    next(it)
    state = loader.state_dict()
    del it
    other = _loader(_ds(d), 3)
    other.load_state_dict(state)
    with pytest.raises(Exception, match="merge_states"):
        list(other)
    with pytest.raises(ValueError, match="not a"):
        _ds(d).load_state_dict({"format": "x"})
    with pytest.raises(ValueError, match="no worker state"):
        TarShardDataset.merge_states([])


def test_split_and_subtract_rules():
    s = Split(3, 1, 2, 1, False)
    assert s.rank_size(10) == 4 and s.part([(0, 10)]) == [(6, 8)]
    assert Split(3, 2, 1, 0, False).part([(0, 10)]) == [(8, 10), (0, 2)]  # padded from the start
    assert Split(3, 2, 1, 0, True).part([(0, 10)]) == [(6, 9)]
    assert subtract([(0, 10), (20, 30)], [(2, 4), (8, 22)]) == [(0, 2), (4, 8), (22, 30)]
    assert collections.Counter() == collections.Counter()


def test_dataset_is_a_pipeline_source(shard_dir):
    from spdl_torch.pipeline import PipelineBuilder

    d, _, _ = shard_dir
    ds = _ds(d, seed=4)
    pipeline = (PipelineBuilder().add_source(ds).pipe(lambda s: s["__index__"], concurrency=2)
                .aggregate(8).add_sink(2).build(num_threads=2))
    got = [i for batch in pipeline for i in batch]
    assert got == ds.global_order(0)


@pytest.fixture(scope="module")
def three_hundred(tmp_path_factory):
    from spdl_torch.datasets import write_shards

    from tests._utils.shards import make_samples

    d = tmp_path_factory.mktemp("s300")
    write_shards(make_samples(300, seed=7), d, shard_size=40_000)
    return d


def _stopped_in_epoch_1(d):
    """An unbroken run's orders of epochs 0-3 (one worker: G's order), and the merged state of a run with two
    workers stopped after 7 batches of epoch 1 (with the indices it had consumed of that epoch)."""
    ref = _loader(_ds(d, seed=3), 1)
    unbroken = [_indices(ref) for _ in range(4)]
    assert unbroken == [_ds(d, seed=3).global_order(e) for e in range(4)]
    assert len({tuple(o) for o in unbroken}) == 4  # four different orders
    loader = _loader(_ds(d, seed=3), 2)
    assert sorted(_indices(loader)) == list(range(300))
    it = iter(loader)
    head = _indices(next(it) for _ in range(7))
    state = loader.state_dict()
    del it
    return unbroken, head, TarShardDataset.merge_states([state])


def test_a_merged_resume_is_consumed_once_then_rebuilt_loaders_get_whole_epochs(three_hundred):
    unbroken, head, merged = _stopped_in_epoch_1(three_hundred)
    rest_order = [i for i in unbroken[1] if i not in set(head)]
    # a trainer that rebuilds its loader each epoch and sets the epoch (the loader's own count when not)
    ds = _ds(three_hundred, seed=3)
    ds.load_state_dict(merged)
    assert len(ds) == 300 - len(head)
    got = []
    for epoch in (1, 2, 3):
        loader = _loader(ds, 1)
        ds.set_epoch(epoch)
        got.append(_indices(loader))
    assert got[0] == rest_order and sorted(head + got[0]) == list(range(300))  # exactly the remainder
    assert got[1:] == unbroken[2:]  # whole epochs, each sample once, in the unbroken run's orders
    # rebuilt loaders that never set the epoch: the remainder once, then whole epochs (the loader's count)
    ds = _ds(three_hundred, seed=3)
    ds.load_state_dict(merged)
    loader = _loader(ds, 1)
    assert _indices(loader) == rest_order
    assert _indices(loader) == unbroken[2]  # the same loader's next epoch
    for _ in range(2):
        again = _indices(_loader(ds, 2))  # a new loader: counts from 0 again, the saved epoch, now whole
        assert sorted(again) == list(range(300)) and len(ds) == 300
    assert _indices(_loader(ds, 1)) == unbroken[1]


def test_a_merged_resume_without_loader_epochs_is_consumed_by_the_first_iteration(three_hundred):
    unbroken, head, merged = _stopped_in_epoch_1(three_hundred)
    rest_order = [i for i in unbroken[1] if i not in set(head)]
    ds = _ds(three_hundred, seed=3)
    ds.load_state_dict(merged)
    assert [s["__index__"] for s in ds] == rest_order  # iterated directly: the saved epoch's remainder
    assert [s["__index__"] for s in ds] == unbroken[1]  # then whole
    ds = _ds(three_hundred, seed=3)
    ds.load_state_dict(merged)
    torch_loader = torch.utils.data.DataLoader(ds, batch_size=4, collate_fn=_keys)
    assert _indices(torch_loader) == rest_order
    ds.set_epoch(2)
    assert _indices(torch_loader) == unbroken[2]
    # torch's worker processes: the main process sees the epochs through set_epoch
    ds = _ds(three_hundred, seed=3)
    ds.load_state_dict(merged)
    torch_loader = torch.utils.data.DataLoader(ds, batch_size=4, collate_fn=_keys, num_workers=2)
    got = []
    for epoch in (1, 2):
        ds.set_epoch(epoch)
        got.append(_indices(torch_loader))
    assert sorted(got[0]) == sorted(rest_order) and sorted(got[1]) == list(range(300))
