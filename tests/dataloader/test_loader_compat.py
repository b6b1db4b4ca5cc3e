"""spdl_torch.DataLoader vs torch.utils.data.DataLoader: the intent of PyTorch's own DataLoader tests
(test/test_dataloader.py) that apply to threads: IterableDataset sharding and batching, samplers,
collate of dicts / namedtuples / numpy, attribute freezing, persistent workers, process-only arguments."""

import collections
import gc
import os
import subprocess
import sys
import threading
import time
import warnings

import numpy as np
import pytest
import torch
import torch.utils.data as tud

import spdl_torch.dataloader as dl
from spdl_torch import get_worker_info

from tests._utils.loaders import ThreadLoader as DataLoader  # this file is about thread workers

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def flat(batches):
    return [int(x) for b in batches for x in torch.as_tensor(b).reshape(-1).tolist()]


class ShardedRange(tud.IterableDataset):
    """torch's doc example: each worker yields its own slice of [start, end)."""

    def __init__(self, start, end):
        self.start, self.end = start, end

    def __len__(self):
        return self.end - self.start

    def __iter__(self):
        info = get_worker_info()
        if info is None:
            return iter(range(self.start, self.end))
        per = -(-(self.end - self.start) // info.num_workers)
        lo = self.start + info.id * per
        return iter(range(lo, min(lo + per, self.end)))


class UnshardedRange(tud.IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        return iter(range(self.n))


@pytest.mark.parametrize("num_workers", [0, 1, 2, 4])
def test_iterable_sharded_each_item_once(num_workers):
    out = list(DataLoader(ShardedRange(0, 10), batch_size=2, num_workers=num_workers))
    assert sorted(flat(out)) == list(range(10))


def test_iterable_round_robin_order_matches_torch():
    # workers hold [0..2], [3..5], [6..8], [9]: batches alternate between workers like torch's
    ours = list(DataLoader(ShardedRange(0, 10), batch_size=2, num_workers=4))
    assert [b.tolist() for b in ours] == [[0, 1], [3, 4], [6, 7], [9], [2], [5], [8]]


@pytest.mark.parametrize("drop_last", [False, True])
def test_iterable_batching_per_worker_like_torch(drop_last):
    ours = list(DataLoader(ShardedRange(0, 10), batch_size=2, num_workers=4, drop_last=drop_last))
    sizes = sorted(len(b) for b in ours)
    assert sizes == ([2, 2, 2] if drop_last else [1, 1, 1, 1, 2, 2, 2])  # per-worker remainders


@pytest.mark.parametrize("num_workers", [2, 3])
def test_iterable_unsharded_yields_duplicates_like_torch(num_workers):
    out = flat(DataLoader(UnshardedRange(5), batch_size=None, num_workers=num_workers))
    assert sorted(out) == sorted(list(range(5)) * num_workers)


def test_iterable_rejects_sampler_and_shuffle_like_torch():
    for kwargs, match in [(dict(shuffle=True), "expected unspecified shuffle"),
                          (dict(sampler=[0]), "expected unspecified sampler"),
                          (dict(batch_sampler=[[0]]), "expected unspecified batch_sampler")]:
        for cls in (DataLoader, tud.DataLoader):
            with pytest.raises(ValueError, match=match):
                cls(ShardedRange(0, 4), **kwargs)


def test_iterable_len_and_warning_like_torch():
    loader = DataLoader(UnshardedRange(4), batch_size=3, num_workers=2)
    with pytest.raises(TypeError):
        len(loader)  # no __len__, like torch
    ds = ShardedRange(0, 6)
    loader = DataLoader(UnshardedRange(6), batch_size=None, num_workers=2)
    loader = DataLoader(ds, batch_size=4, num_workers=0)
    assert len(loader) == len(tud.DataLoader(ds, batch_size=4)) == 2

    class Liar(ShardedRange):
        def __iter__(self):
            return iter(range(8))

    loader = DataLoader(Liar(0, 2), batch_size=None, num_workers=1)
    assert len(loader) == 2
    with pytest.warns(UserWarning, match="was reported to be 2"):
        list(loader)


def test_iterable_worker_info_and_exception():
    class DS(tud.IterableDataset):
        def __iter__(self):
            info = get_worker_info()
            yield (info.id, info.num_workers)
            raise KeyError("iterable failed")

    it = iter(DataLoader(DS(), batch_size=None, num_workers=2))
    got = {tuple(next(it))}
    with pytest.raises(KeyError, match="iterable failed") as e:
        for _ in range(3):
            got.add(tuple(next(it)))
    assert "in DataLoader worker thread" in str(e.value)


@pytest.mark.parametrize("num_workers", [0, 2])
def test_samplers_from_torch(num_workers):
    ds = list(range(20))
    for make in (
        lambda g: tud.WeightedRandomSampler([1.0] * 10 + [5.0] * 10, 15, generator=g),
        lambda g: tud.SubsetRandomSampler([1, 3, 5, 7, 9], generator=g),
        lambda g: tud.RandomSampler(ds, replacement=True, num_samples=40, generator=g),
    ):
        ours = list(DataLoader(ds, batch_size=4, sampler=make(torch.Generator().manual_seed(3)),
                               num_workers=num_workers))
        ref = list(tud.DataLoader(ds, batch_size=4, sampler=make(torch.Generator().manual_seed(3))))
        assert [b.tolist() for b in ours] == [b.tolist() for b in ref]
    bs = tud.BatchSampler(tud.SequentialSampler(ds), 6, drop_last=True)
    assert [b.tolist() for b in DataLoader(ds, batch_sampler=bs, num_workers=num_workers)] == [
        list(range(0, 6)), list(range(6, 12)), list(range(12, 18))]


def test_global_rng_shuffle_matches_torch():
    ds = list(range(30))
    torch.manual_seed(5)
    ours = [b.tolist() for b in DataLoader(ds, batch_size=7, shuffle=True, num_workers=2)]
    after_ours = torch.rand(1)
    torch.manual_seed(5)
    ref = [b.tolist() for b in tud.DataLoader(ds, batch_size=7, shuffle=True, num_workers=0)]
    assert ours == ref and torch.equal(after_ours, torch.rand(1))


Point = collections.namedtuple("Point", "x y")


@pytest.mark.parametrize("num_workers", [0, 2])
def test_collate_dict_namedtuple_numpy_like_torch(num_workers):
    ds = [{"p": Point(np.float32(i), np.arange(3) + i), "s": f"n{i}", "t": (i, float(i))} for i in range(5)]
    ours = list(DataLoader(ds, batch_size=2, num_workers=num_workers))
    ref = list(tud.DataLoader(ds, batch_size=2))
    for a, b in zip(ours, ref, strict=True):
        assert isinstance(a["p"], Point) and a["s"] == b["s"]
        assert torch.equal(a["p"].x, b["p"].x) and torch.equal(a["p"].y, b["p"].y)
        assert all(torch.equal(u, v) for u, v in zip(a["t"], b["t"]))


def test_attributes_frozen_after_init_like_torch():
    ours, ref = DataLoader(list(range(4))), tud.DataLoader(list(range(4)))
    for attr in ("batch_size", "batch_sampler", "sampler", "drop_last", "dataset", "persistent_workers"):
        for loader in (ours, ref):
            with pytest.raises(ValueError, match=f"{attr} attribute should not be set after"):
                setattr(loader, attr, None)
    ours.num_workers = 2  # not frozen in torch either
    assert [b.tolist() for b in ours] == [[0], [1], [2], [3]]


def test_multiprocessing_context_warns_once_and_uses_threads(monkeypatch):
    monkeypatch.setattr(dl._loader, "_warned_mp_context", False)
    with pytest.warns(UserWarning, match="threads"):
        loader = DataLoader(list(range(4)), num_workers=2, multiprocessing_context="spawn")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        DataLoader(list(range(4)), num_workers=2, multiprocessing_context="fork")
    assert flat(loader) == [0, 1, 2, 3]


def _worker_threads(exclude=frozenset()):
    """Live loader worker threads, except those in ``exclude`` (other tests' loaders not yet collected)."""
    return [t for t in threading.enumerate()
            if t.name.startswith("spdl_torch-DataLoader-worker") and t.ident not in exclude]


def test_persistent_workers_keep_threads_and_init_once():
    gc.collect()
    others = frozenset(t.ident for t in _worker_threads())
    calls = []
    loader = DataLoader(list(range(12)), batch_size=3, num_workers=2, persistent_workers=True,
                        worker_init_fn=calls.append, pin_memory=True)
    threads = set()
    for epoch in range(3):
        if torch.accelerator.is_available():
            batches = list(loader)
            assert all(b.is_pinned() for b in batches)
        elif epoch == 0:  # like torch: warned when the (persistent) iterator is created
            with pytest.warns(UserWarning, match="no accelerator is found"):
                batches = list(loader)
        else:
            batches = list(loader)
        assert flat(batches) == list(range(12))
        threads.add(frozenset(t.ident for t in _worker_threads(others)))
    assert sorted(calls) == [0, 1] and len(threads) == 1  # same two threads for all epochs
    # a new iter() before the old one finished resets the old iterator, like torch
    it1 = iter(loader)
    next(it1)
    it2 = iter(loader)
    assert it2 is it1 and flat(it2) == list(range(12))
    del loader, it1, it2
    deadline = time.monotonic() + 10
    while _worker_threads(others) and time.monotonic() < deadline:
        gc.collect()
        time.sleep(0.01)
    assert not _worker_threads(others)


def test_non_persistent_new_iter_is_independent():
    loader = DataLoader(list(range(8)), batch_size=2, num_workers=2)
    it1 = iter(loader)
    assert next(it1).tolist() == [0, 1]
    it2 = iter(loader)
    assert it1 is not it2 and flat(it2) == list(range(8)) and flat(it1) == list(range(2, 8))


def test_per_thread_rngs_and_sample_generator():
    class DS(tud.Dataset):
        def __len__(self):
            return 16

        def __getitem__(self, i):
            info = get_worker_info()
            assert isinstance(info.rng.random_generator.random(), float)
            assert info.rng.numpy_generator is not None and info.rng.torch_generator is not None
            return torch.rand(2, generator=info.sample_generator(i))

    runs = [torch.cat(list(DataLoader(DS(), batch_size=4, num_workers=n, generator=torch.Generator().manual_seed(1))))
            for n in (1, 2, 3)]
    assert torch.equal(runs[0], runs[1]) and torch.equal(runs[0], runs[2])  # independent of thread count


@pytest.mark.parametrize("num_workers", [0, 1])
def test_set_epoch_hook_called_each_epoch(num_workers):
    """The loader's dataset and each worker's copy get set_epoch(epoch) once per epoch."""
    calls = []

    class DS(tud.Dataset):
        def set_epoch(self, e):
            calls.append((self is ds, e))

        def __len__(self):
            return 2

        def __getitem__(self, i):
            return i

    ds = DS()
    loader = DataLoader(ds, num_workers=num_workers, persistent_workers=num_workers > 0)
    for _ in range(3):
        list(loader)
    assert [e for main, e in calls if main] == [0, 1, 2]
    if num_workers:
        assert [e for main, e in calls if not main] == [0, 1, 2]


class EpochDataset(tud.IterableDataset):
    """Yields the epoch its worker's copy holds, as a seeded shuffle would use it."""

    def __init__(self):
        self.epoch = 0

    def set_epoch(self, epoch):
        self.epoch = epoch

    def __iter__(self):
        info = tud.get_worker_info()
        ds = self if info is None else info.dataset
        if info is None or info.id == 0:
            yield ds.epoch


@pytest.mark.parametrize("num_workers", [0, 2])
@pytest.mark.parametrize("persistent", [False, True])
def test_a_users_set_epoch_is_the_next_epoch(num_workers, persistent):
    """torch's loop calls dataset.set_epoch(e) (the DistributedSampler convention, e.g. from a checkpoint's
    epoch): the loader's own count used to override it with 0, 1, ... The same epochs as torch's DataLoader
    (whose persistent workers keep their first copy's epoch: ours follow the call)."""
    if persistent and not num_workers:
        pytest.skip("persistent workers need num_workers > 0")
    runs = {tud.DataLoader: [5, 6, 9]}
    for DL in (DataLoader,) if persistent else (tud.DataLoader, DataLoader):
        ds = EpochDataset()
        loader = DL(ds, batch_size=None, num_workers=num_workers, persistent_workers=persistent)
        got = []
        for e in (5, 6, 9):  # resumed at epoch 5, then one skipped
            ds.set_epoch(e)
            got += list(loader)
        runs[DL] = got
    assert runs[tud.DataLoader] == runs[DataLoader] == [5, 6, 9]
    ds = EpochDataset()
    loader = DataLoader(ds, batch_size=None, num_workers=num_workers, persistent_workers=persistent)
    got = list(loader)
    ds.set_epoch(7)
    got += list(loader) + list(loader)  # without further calls the count goes on from the user's epoch
    assert got == [0, 7, 8] and ds.epoch == 8


def test_device_cuda_without_cuda_raises_clearly():
    if torch.cuda.is_available():
        out = list(DataLoader([torch.ones(2)] * 4, batch_size=2, num_workers=1, device="cuda"))
        assert all(b.is_cuda for b in out)
    else:
        with pytest.raises(ValueError, match="no CUDA device is available"):
            DataLoader([1, 2], device="cuda")
    assert flat(DataLoader([1, 2], device="cpu", num_workers=1)) == [1, 2]


_TIMEOUT_SCRIPT = """
import threading, torch
from spdl_torch import DataLoader

class Forever:
    def __len__(self):
        return 4
    def __getitem__(self, i):
        threading.Event().wait()  # blocks forever

try:
    next(iter(DataLoader(Forever(), batch_size=2, num_workers=2, timeout=2, worker_mode="thread")))
except RuntimeError as e:
    assert "DataLoader timed out after 2 seconds" in str(e), e
else:
    raise SystemExit("no timeout")
"""


@pytest.mark.slow
def test_timeout_blocked_forever_raises_and_process_exits_cleanly(tmp_path):
    script = tmp_path / "timeout_script.py"
    script.write_text(_TIMEOUT_SCRIPT)
    env = dict(os.environ, PYTHONPATH=ROOT)
    # A hang at exit (threads blocked forever) shows as subprocess's TimeoutExpired: no timed assertion, which a
    # loaded machine would fail.
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "" and proc.stderr == ""


_EXIT_PERSISTENT_SCRIPT = """
import warnings
warnings.filterwarnings("ignore", "This DataLoader will create")  # torch's warning: more workers than cores
import torch, torch.utils.data as tud
from spdl_torch import DataLoader, get_worker_info

class Stream(tud.IterableDataset):
    def __iter__(self):
        i = get_worker_info().id
        while True:
            t = torch.zeros(100)
            for _ in range(200):
                t = t + 1
            yield i

persistent = DataLoader(list(range(1000)), batch_size=4, num_workers=2, persistent_workers=True,
                        worker_mode="thread")
list(persistent)
it = iter(persistent)
next(it)
stream = iter(DataLoader(Stream(), batch_size=8, num_workers=3, worker_mode="thread"))
next(stream)
"""


@pytest.mark.slow
def test_interpreter_exit_with_persistent_and_iterable_workers_is_clean(tmp_path):
    script = tmp_path / "exit_persistent.py"
    script.write_text(_EXIT_PERSISTENT_SCRIPT)
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=ROOT), timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "" and proc.stderr == ""
