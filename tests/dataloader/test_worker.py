"""Worker threads that look like torch's worker processes to the code they run (spdl_torch/dataloader/_worker.py):
type identity, ``torch.utils.data.get_worker_info()``, a dataset object per worker (state a
``worker_init_fn`` stores on it stays that worker's), and global RNGs that worker code cannot re-seed for the
consumer. Every test runs against torch's DataLoader (the reference) too."""

import random
import threading
import time
import typing
import uuid
import warnings

import numpy as np
import pytest
import torch
import torch.utils.data as tud

import spdl_torch

from tests._utils.loaders import ThreadLoader, both, collect

# -- item 1: type identity ---------------------------------------------------------------------------------


@both()
def test_is_a_torch_dataloader(DL):
    loader = DL(list(range(4)), batch_size=2)
    assert isinstance(loader, tud.DataLoader)
    assert issubclass(DL, tud.DataLoader)


@both()
def test_subscriptable_for_typing(DL):
    alias = DL[list[torch.Tensor]]
    assert typing.get_origin(alias) is DL
    assert typing.get_args(alias) == (list[torch.Tensor],)

    def make(train: bool) -> DL[int]:  # an annotation as in torch's test_typing
        return DL(list(range(3)))

    assert [int(x) for x in make(True)] == [0, 1, 2]


# -- item 2: torch.utils.data.get_worker_info() inside the workers, None outside ---------------------------


class InfoDataset(tud.Dataset):
    """Item ``i`` is what ``torch.utils.data.get_worker_info()`` says while loading it."""

    def __init__(self, n=8):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        info = tud.get_worker_info()
        if info is None:
            return None
        return {"i": i, "id": info.id, "num_workers": info.num_workers, "seed": info.seed,
                "dataset_type": type(info.dataset).__name__}


@both()
def test_get_worker_info_in_workers(DL):
    g = torch.Generator().manual_seed(11)
    base_seed = int(torch.empty((), dtype=torch.int64).random_(generator=torch.Generator().manual_seed(11)).item())
    got = list(DL(InfoDataset(), batch_size=None, num_workers=2, generator=g))
    assert all(d is not None for d in got), got
    assert [d["i"] for d in got] == list(range(8))
    for d in got:
        assert d["id"] in (0, 1) and d["num_workers"] == 2
        assert d["seed"] == base_seed + d["id"]  # seed = base_seed (first draw of generator) + id, as torch
        assert d["dataset_type"] == "InfoDataset"


@both()
def test_get_worker_info_is_none_outside_the_workers(DL):
    """In the consumer (before, while and after iterating) and in any other thread it is None (guards the
    fix: the mechanism that makes it answer inside our threads must stay scoped to them)."""
    seen_elsewhere = []
    stop = threading.Event()

    def other_thread():
        while not stop.is_set():
            seen_elsewhere.append(tud.get_worker_info())
            stop.wait(0.001)

    t = threading.Thread(target=other_thread, name="not-a-worker")
    t.start()
    try:
        assert tud.get_worker_info() is None
        it = iter(DL(InfoDataset(16), batch_size=None, num_workers=2))
        for _ in it:
            assert tud.get_worker_info() is None
        assert tud.get_worker_info() is None
    finally:
        stop.set()
        t.join()
    assert seen_elsewhere and all(x is None for x in seen_elsewhere)


def test_ours_get_worker_info_matches_torchs_in_threads():
    """spdl_torch.get_worker_info() and torch's answer the same inside our threads (one source of truth)."""

    class DS(InfoDataset):
        def __getitem__(self, i):
            ours, theirs = spdl_torch.get_worker_info(), tud.get_worker_info()
            return (ours.id, ours.seed) if ours else None, (theirs.id, theirs.seed) if theirs else None

    got = list(ThreadLoader(DS(6), batch_size=None, num_workers=2))
    assert len(got) == 6
    assert all(a is not None and a == b for a, b in got), got


# -- item 3: a dataset object per worker -------------------------------------------------------------------


class PerWorkerDataset(tud.Dataset):
    """``worker_init_fn`` stores the worker id on ``get_worker_info().dataset``; items report it and the id of
    the worker that loads them. A lazily opened "handle" is opened on first use by each dataset copy."""

    def __init__(self, n=16):
        self.n = n
        self.worker_id = None
        self.handle = None
        self.big = list(range(100_000))  # a big member: shared by the copies, not copied

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if self.handle is None:
            self.handle = uuid.uuid4().hex  # e.g. open(path) / a DB connection, opened per worker
        info = tud.get_worker_info()
        return self.worker_id, info.id if info else None, self.handle


def _store_on_dataset(worker_id):
    tud.get_worker_info().dataset.worker_id = worker_id


@both()
def test_worker_init_fn_state_is_per_worker_and_main_dataset_untouched(DL):
    ds = PerWorkerDataset()
    got = collect(DL(ds, batch_size=None, num_workers=2, worker_init_fn=_store_on_dataset))
    assert len(got) == 16
    assert all(stored == loader_id and loader_id in (0, 1) for stored, loader_id, _ in got), got
    assert ds.worker_id is None and ds.handle is None  # the main process's dataset is untouched


@both()
def test_lazily_opened_handle_is_not_shared_between_workers(DL):
    ds = PerWorkerDataset()
    got = list(DL(ds, batch_size=None, num_workers=2))
    workers_of_handle = {}
    for _, wid, handle in got:
        workers_of_handle.setdefault(handle, set()).add(wid)
    assert all(len(w) == 1 for w in workers_of_handle.values()), workers_of_handle  # one worker per handle
    assert len(workers_of_handle) == len({wid for _, wid, _ in got})  # one handle per worker that loaded
    assert ds.handle is None


@both(torch_skip="torch pickles the dataset into each worker process: nothing is shared", threads=True)
def test_dataset_copy_is_shallow(DL):
    ds = PerWorkerDataset(8)
    seen = []

    def init(worker_id):
        d = tud.get_worker_info().dataset
        seen.append((d is not ds, d.big is ds.big, type(d) is type(ds)))

    collect(DL(ds, batch_size=None, num_workers=2, worker_init_fn=init))
    assert seen == [(True, True, True)] * 2  # a copy per worker, its big members the main dataset's own


@both(torch_skip="dataset_per_worker is an spdl_torch keyword")
def test_dataset_per_worker_false_shares_the_loaders_dataset(DL):
    ds = PerWorkerDataset(8)
    seen = []

    def init(worker_id):
        seen.append(tud.get_worker_info().dataset)

    loader = DL(ds, batch_size=None, num_workers=2, worker_init_fn=init, dataset_per_worker=False)
    got = list(loader)
    assert len(got) == 8
    assert len(seen) == 2 and all(d is loader.dataset for d in seen)
    assert ds.handle is not None  # opened on the shared object


# -- item 4: global RNG isolation --------------------------------------------------------------------------


def _reseed_all(worker_id):
    torch.manual_seed(1234 + worker_id)
    random.seed(1234 + worker_id)
    np.random.seed(1234 + worker_id)


def _epochs(DL, init):
    torch.manual_seed(0)
    random.seed(5)
    np.random.seed(5)
    py_state, np_state = random.getstate(), np.random.get_state()
    loader = DL(list(range(12)), batch_size=None, shuffle=True, num_workers=2, worker_init_fn=init)
    orders = [[int(x) for x in loader] for _ in range(3)]
    return orders, torch.get_rng_state(), torch.initial_seed(), (random.getstate() == py_state,
                                                                  np.array_equal(np.random.get_state()[1], np_state[1]))


@both(torch_slow=True)
def test_reseeding_worker_init_fn_has_no_effect_on_the_consumer(DL):
    """The consumer's RNGs after three shuffled epochs are the same with and without a worker_init_fn that
    re-seeds torch/random/numpy, and so are the shuffle orders (which differ from epoch to epoch)."""
    ref_orders, ref_state, _, _ = _epochs(DL, None)
    orders, state, initial_seed, (py_same, np_same) = _epochs(DL, _reseed_all)
    assert len({tuple(o) for o in orders}) == 3
    assert orders == ref_orders
    assert torch.equal(state, ref_state)
    assert initial_seed == 0
    assert py_same and np_same  # random's and numpy's global states untouched


class Draws(tud.Dataset):
    """Each sample draws from torch's global RNG (as augmentations without a generator do)."""

    def __len__(self):
        return 48

    def __getitem__(self, i):
        return torch.randn(1)


def _slow_init_of_worker_1(worker_id):
    if worker_id == 1:
        time.sleep(0.3)  # worker 0 would be fetching meanwhile


@pytest.mark.parametrize("init", [None, _slow_init_of_worker_1])
def test_workers_draws_are_not_taken_for_another_workers_init_fn(init):
    """No worker fetches while another worker's worker_init_fn runs: its global-RNG check saw worker 0's
    draws as the init_fn's (a false warning, seen in a clean-clone run with no init_fn at all), and undoing
    them rewound torch's RNG, so later samples repeated earlier draws."""
    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        values = torch.cat(list(spdl_torch.DataLoader(Draws(), batch_size=4, num_workers=2, worker_init_fn=init, worker_mode="thread")))
    assert values.shape == (48, 1)
    assert len(set(values.flatten().tolist())) == 48  # no draw repeated


class SeedReport(tud.Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        info = tud.get_worker_info()
        return torch.initial_seed(), (info.seed if info else None), (info.id if info else None)


@both()
def test_worker_initial_seed_is_base_seed_plus_id(DL):
    base_seed = int(torch.empty((), dtype=torch.int64).random_(generator=torch.Generator().manual_seed(3)).item())
    got = list(DL(SeedReport(), batch_size=None, num_workers=2, generator=torch.Generator().manual_seed(3)))
    for initial, seed, wid in got:
        assert wid in (0, 1)
        assert initial == seed == base_seed + wid


def test_default_collate_in_our_threads_does_not_use_shared_memory():
    """torch's default_collate stacks into shared memory when get_worker_info() answers (for the IPC of a worker
    process); in our threads the batch is ordinary memory, and torch.stack's own error names a shape mismatch."""
    from spdl_torch import DataLoader

    batch = next(iter(DataLoader([torch.zeros(3)] * 4, batch_size=4, num_workers=1, worker_mode="thread")))
    assert not batch.is_shared()

    class Ragged(tud.Dataset):
        def __len__(self):
            return 2

        def __getitem__(self, i):
            return torch.zeros(2 + i)

    with pytest.raises(RuntimeError, match="stack expects each tensor to be equal size"):
        next(iter(DataLoader(Ragged(), batch_size=2, num_workers=1, worker_mode="thread")))


def _info():
    """torch's worker info, else ours: the test checks the per-worker dataset copy whichever function answers."""
    return tud.get_worker_info() or spdl_torch.get_worker_info()


class WorkerIdDataset(tud.Dataset):
    worker_id = None

    def __len__(self):
        return 8

    def __getitem__(self, i):
        info = _info()
        return self.worker_id, (None if info is None else info.id)


def _store_worker_id(worker_id):
    _info().dataset.worker_id = worker_id  # the docs' pattern: configure worker_info.dataset


@both()
def test_worker_state_per_worker(DL):
    ds = WorkerIdDataset()
    got = collect(DL(ds, batch_size=None, num_workers=2, worker_init_fn=_store_worker_id))
    assert len(got) == 8
    for stored, loading in got:
        assert stored == loading  # each item sees the value its own worker stored
        assert loading in (0, 1)
    assert ds.worker_id is None  # the main process's dataset is untouched


def _reseed_everything(worker_id):
    torch.manual_seed(1234 + worker_id)
    random.seed(1234 + worker_id)
    np.random.seed(1234 + worker_id)


@both()
def test_worker_init_reseeding_leaves_the_consumer_alone(DL):
    torch.manual_seed(0)
    loader = DL(list(range(10)), batch_size=None, shuffle=True, num_workers=2, worker_init_fn=_reseed_everything)
    epochs = [[int(x) for x in loader] for _ in range(3)]
    assert all(sorted(e) == list(range(10)) for e in epochs)
    assert len({tuple(e) for e in epochs}) == 3  # a new order every epoch
    assert torch.initial_seed() == 0  # the consumer's seed is not changed by the workers
