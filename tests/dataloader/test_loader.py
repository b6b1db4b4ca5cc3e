"""Tests of spdl_torch.DataLoader (thread workers), checked against torch.utils.data.DataLoader."""

import gc
import threading
import time

import pytest
import torch
import torch.utils.data as tud

from spdl_torch import get_worker_info

from tests._utils.loaders import ThreadLoader as DataLoader  # this file is about thread workers

WORKERS = [0, 1, 2]


class RangeDataset(tud.Dataset):
    """Sample ``i`` is ``{"x": tensor([i, i*i]), "i": i}``."""

    def __init__(self, n=23):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return {"x": torch.tensor([i, i * i]), "i": i}


def assert_same_batches(ours, ref):
    assert len(ours) == len(ref)
    for a, b in zip(ours, ref):
        if isinstance(a, dict):
            assert a.keys() == b.keys()
            for k in a:
                assert torch.equal(torch.as_tensor(a[k]), torch.as_tensor(b[k]))
        else:
            assert torch.equal(torch.as_tensor(a), torch.as_tensor(b))


def _our_threads():
    """Worker threads and pipeline schedulers of loaders (they exit shortly after an epoch ends)."""
    return [t for t in threading.enumerate()
            if t.name.startswith("spdl_torch-DataLoader-worker") or t.name == "spdl_torch.pipeline-scheduler"]


def baseline_threads(limit_s=10.0):
    """The threads alive once workers of earlier iterators (e.g. kept alive by a traceback cycle) are gone."""
    deadline = time.monotonic() + limit_s
    gc.collect()
    while _our_threads() and time.monotonic() < deadline:
        gc.collect()
        time.sleep(0.01)
    return frozenset(threading.enumerate())


def threads_left(baseline, limit_s=10.0):
    """The threads started since ``baseline`` that are still alive after a bounded wait for them to finish
    exiting (no assumption on how fast). Threads of earlier tests that exit meanwhile do not count."""
    deadline = time.monotonic() + limit_s
    while True:
        new = [t for t in threading.enumerate() if t not in baseline]
        if not new or time.monotonic() > deadline:
            return new
        gc.collect()
        time.sleep(0.01)


@pytest.mark.parametrize("num_workers", WORKERS)
@pytest.mark.parametrize("batch_size,drop_last", [(1, False), (4, False), (4, True), (23, False), (30, True)])
def test_matches_torch_sequential(num_workers, batch_size, drop_last):
    ds = RangeDataset()
    ours = list(DataLoader(ds, batch_size=batch_size, drop_last=drop_last, num_workers=num_workers))
    ref = list(tud.DataLoader(ds, batch_size=batch_size, drop_last=drop_last))
    assert_same_batches(ours, ref)
    seen = torch.cat([b["i"] for b in ours]).tolist() if ours else []
    expected_n = (23 // batch_size) * batch_size if drop_last else 23
    assert seen == list(range(expected_n))
    assert len(DataLoader(ds, batch_size=batch_size, drop_last=drop_last)) == len(ref)


@pytest.mark.parametrize("num_workers", WORKERS)
def test_matches_torch_shuffle_with_generator(num_workers):
    ds = RangeDataset(50)
    g_ours, g_ref = torch.Generator().manual_seed(123), torch.Generator().manual_seed(123)
    loader = DataLoader(ds, batch_size=6, shuffle=True, generator=g_ours, num_workers=num_workers)
    ref_loader = tud.DataLoader(ds, batch_size=6, shuffle=True, generator=g_ref)
    epochs_ours = [list(loader) for _ in range(2)]
    epochs_ref = [list(ref_loader) for _ in range(2)]
    for ours, ref in zip(epochs_ours, epochs_ref):
        assert_same_batches(ours, ref)
        assert sorted(torch.cat([b["i"] for b in ours]).tolist()) == list(range(50))
    # A new iterator re-draws the permutation.
    assert not torch.equal(
        torch.cat([b["i"] for b in epochs_ours[0]]), torch.cat([b["i"] for b in epochs_ours[1]])
    )


@pytest.mark.parametrize("num_workers", WORKERS)
def test_sampler_and_batch_sampler(num_workers):
    ds = RangeDataset(20)
    sampler = [3, 1, 4, 1, 5, 9, 2, 6]
    ours = list(DataLoader(ds, batch_size=3, sampler=sampler, num_workers=num_workers))
    ref = list(tud.DataLoader(ds, batch_size=3, sampler=sampler))
    assert_same_batches(ours, ref)

    batches = [[0, 1], [5], [19, 2, 3]]
    loader = DataLoader(ds, batch_sampler=batches, num_workers=num_workers)
    assert loader.batch_size is None and len(loader) == 3
    assert [b["i"].tolist() for b in loader] == batches


@pytest.mark.parametrize("num_workers", WORKERS)
def test_batch_size_none_uses_default_convert(num_workers):
    ds = [torch.full((2,), i) for i in range(7)]  # a list is a valid map-style dataset
    ours = list(DataLoader(ds, batch_size=None, num_workers=num_workers))
    ref = list(tud.DataLoader(ds, batch_size=None))
    assert len(ours) == 7
    assert_same_batches(ours, ref)

    np = pytest.importorskip("numpy")
    arrays = [np.arange(3) + i for i in range(4)]
    out = list(DataLoader(arrays, batch_size=None, num_workers=num_workers))
    assert all(isinstance(t, torch.Tensor) for t in out)  # default_convert: numpy -> tensor, no batch dim
    assert [t.tolist() for t in out] == [a.tolist() for a in arrays]


@pytest.mark.parametrize("num_workers", WORKERS)
def test_custom_collate_fn(num_workers):
    ds = RangeDataset(10)
    loader = DataLoader(
        ds, batch_size=4, num_workers=num_workers, collate_fn=lambda samples: [s["i"] for s in samples]
    )
    assert list(loader) == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]


class GetItemsDataset(RangeDataset):
    def __init__(self, n):
        super().__init__(n)
        self.calls = []
        self.lock = threading.Lock()

    def __getitem__(self, i):
        raise AssertionError("__getitem__ must not be used when __getitems__ exists")

    def __getitems__(self, indices):
        with self.lock:
            self.calls.append(list(indices))
        return [{"x": torch.tensor([i, i * i]), "i": i} for i in indices]


@pytest.mark.parametrize("num_workers", WORKERS)
def test_getitems_used_when_present(num_workers):
    ds = GetItemsDataset(10)
    out = list(DataLoader(ds, batch_size=4, num_workers=num_workers))
    assert sorted(ds.calls) == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert [b["i"].tolist() for b in out] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]


class FailingDataset(RangeDataset):
    def __getitem__(self, i):
        if i == 7:
            raise ValueError("bad sample")
        return super().__getitem__(i)


@pytest.mark.parametrize("num_workers", [1, 2])
def test_worker_exception_reraised_with_type_index_and_traceback(num_workers):
    loader = DataLoader(FailingDataset(12), batch_size=4, num_workers=num_workers)
    it = iter(loader)
    assert next(it)["i"].tolist() == [0, 1, 2, 3]
    with pytest.raises(ValueError) as info:
        next(it)
    msg = str(info.value)
    assert "Caught ValueError in DataLoader worker thread" in msg
    assert "sample indices [4, 5, 6, 7]" in msg
    assert "bad sample" in msg and "Traceback" in msg and "__getitem__" in msg
    # Like torch, the iterator can go on after a failed batch.
    assert next(it)["i"].tolist() == [8, 9, 10, 11]
    with pytest.raises(StopIteration):
        next(it)


@pytest.mark.parametrize("num_workers", [0, 2])
def test_exception_unbatched_names_index(num_workers):
    with pytest.raises(ValueError, match="bad sample") as info:
        list(DataLoader(FailingDataset(12), batch_size=None, num_workers=num_workers))
    text = str(info.value) + "".join(getattr(info.value, "__notes__", []))
    assert "sample index 7" in text
    if num_workers:
        assert "in DataLoader worker thread" in text


@pytest.mark.parametrize("num_workers", [0, 2])
def test_a_decode_error_keeps_its_path_and_reason_through_the_workers(num_workers, tmp_path):
    """torch's re-raise rebuilds the exception from its message: DecodeError.path was None and .reason the
    whole traceback text; OSError.errno None."""
    import errno

    from spdl_torch.datasets import FileListDataset
    from spdl_torch import DecodeError

    bad = tmp_path / "bad.jpg"
    bad.write_bytes(b"\xff\xd8\xff\xe0 not a jpeg at all" * 8)
    with pytest.raises(DecodeError) as info:
        list(DataLoader(FileListDataset([str(bad)]), batch_size=1, num_workers=num_workers))
    assert info.value.path == str(bad)
    assert info.value.reason and "Traceback" not in info.value.reason and info.value.reason in str(info.value)
    if num_workers:
        assert "Caught DecodeError in DataLoader worker thread" in str(info.value)

    class Missing(RangeDataset):
        def __getitem__(self, i):
            raise FileNotFoundError(errno.ENOENT, "No such file or directory", f"/data/{i}.jpg")

    with pytest.raises(FileNotFoundError) as info:
        next(iter(DataLoader(Missing(3), num_workers=num_workers)))
    assert info.value.errno == errno.ENOENT and "/data/0.jpg" in str(info.value)
    if num_workers:  # torch's message, unchanged by the attribute
        assert str(info.value).startswith("Caught FileNotFoundError in DataLoader worker thread")


def test_exception_type_that_cannot_be_rebuilt_becomes_runtime_error():
    class OddError(Exception):
        def __init__(self, a, b):
            super().__init__(a, b)

    class DS(RangeDataset):
        def __getitem__(self, i):
            raise OddError(1, 2)

    with pytest.raises(RuntimeError, match="Caught OddError in DataLoader worker thread 0"):
        next(iter(DataLoader(DS(3), num_workers=1)))


class BlockingDataset(RangeDataset):
    def __init__(self, n, event):
        super().__init__(n)
        self.event = event

    def __getitem__(self, i):
        self.event.wait()
        return super().__getitem__(i)


@pytest.mark.slow
def test_timeout():
    baseline = baseline_threads()
    release = threading.Event()
    loader = DataLoader(BlockingDataset(4, release), batch_size=2, num_workers=2, timeout=1)
    it = iter(loader)
    try:
        with pytest.raises(RuntimeError, match="DataLoader timed out after 1 seconds"):
            next(it)
    finally:
        release.set()
    del it
    assert threads_left(baseline) == []


@pytest.mark.parametrize("num_workers", [1, pytest.param(3, marks=pytest.mark.slow)])
def test_early_break_and_consumer_exception_leave_no_threads(num_workers):
    baseline = baseline_threads()
    loader = DataLoader(RangeDataset(200), batch_size=2, num_workers=num_workers)
    for i, _ in enumerate(loader):
        if i == 3:
            break
    assert threads_left(baseline) == []

    def consume(batches):
        for i, _ in enumerate(batches):
            if i == 2:
                raise KeyError("consumer failed")

    with pytest.raises(KeyError):
        consume(loader)
    assert threads_left(baseline) == []

    it = iter(loader)
    next(it)
    del it, loader
    assert threads_left(baseline) == []

    # A fully consumed epoch also stops its threads.
    list(DataLoader(RangeDataset(10), batch_size=2, num_workers=num_workers))
    assert threads_left(baseline) == []


class CountingDataset(RangeDataset):
    """Counts fetched samples and lets the test wait for a count."""

    def __init__(self, n):
        super().__init__(n)
        self.counter = [0]  # a member: shared by the workers' copies of the dataset
        self.changed = threading.Condition()

    def __getitem__(self, i):
        with self.changed:
            self.counter[0] += 1
            self.changed.notify_all()
        return super().__getitem__(i)

    def wait_until(self, count, limit_s=10.0):
        with self.changed:
            self.changed.wait_for(lambda: self.counter[0] >= count, timeout=limit_s)
            return self.counter[0]

    def count_after_idle(self, idle_s=0.2):
        """The count once nothing was fetched for ``idle_s`` (gives a runaway prefetch time to show)."""
        with self.changed:
            while self.changed.wait(idle_s):
                pass
            return self.counter[0]


@pytest.mark.parametrize("num_workers,prefetch_factor", [(1, 1), pytest.param(2, 2, marks=pytest.mark.slow),
                                                       pytest.param(3, 1, marks=pytest.mark.slow)])  # ~1.2 s each
def test_bounded_prefetch(num_workers, prefetch_factor):
    ds = CountingDataset(100)
    loader = DataLoader(ds, batch_size=1, num_workers=num_workers, prefetch_factor=prefetch_factor)
    bound = prefetch_factor * num_workers
    it = iter(loader)
    for consumed in range(6):
        if consumed:
            assert next(it)["i"].item() == consumed - 1
        # It fetches ahead up to the bound (reached, however slow the machine)...
        assert ds.wait_until(consumed + bound) >= consumed + bound
        # ... and never beyond it while the consumer does not advance.
        assert ds.count_after_idle() == consumed + bound
    del it


def test_get_worker_info_and_worker_init_fn():
    calls = []
    lock = threading.Lock()

    def init_fn(worker_id):
        info = get_worker_info()
        with lock:
            calls.append((worker_id, threading.get_ident(), info.id, info.num_workers, info.seed))

    class InfoDataset(RangeDataset):
        def __getitem__(self, i):
            info = get_worker_info()
            return (info.id, info.seed, info.dataset is self)

    ds = InfoDataset(40)
    gen = torch.Generator().manual_seed(7)
    expected_base_seed = torch.empty((), dtype=torch.int64).random_(generator=torch.Generator().manual_seed(7)).item()
    batches = list(DataLoader(ds, batch_size=2, num_workers=3, worker_init_fn=init_fn, generator=gen,
                              collate_fn=lambda x: x))
    assert sorted(c[0] for c in calls) == [0, 1, 2]  # once per thread, distinct ids
    assert len({c[1] for c in calls}) == 3  # on three distinct threads
    for worker_id, _, info_id, num_workers, seed in calls:
        assert info_id == worker_id and num_workers == 3 and seed == expected_base_seed + worker_id
    for batch in batches:
        for worker_id, seed, same_dataset in batch:
            assert 0 <= worker_id < 3 and seed == expected_base_seed + worker_id and same_dataset
    assert get_worker_info() is None  # main thread


def test_get_worker_info_none_without_workers():
    class DS(RangeDataset):
        def __getitem__(self, i):
            return get_worker_info() is None

    assert list(DataLoader(DS(3), batch_size=None)) == [True, True, True]


def test_worker_init_fn_error_is_reraised():
    def init_fn(worker_id):
        raise OSError("init failed")

    baseline = baseline_threads()
    it = iter(DataLoader(RangeDataset(4), num_workers=2, worker_init_fn=init_fn))
    with pytest.raises(OSError, match="init failed") as info:
        next(it)
    assert "Caught OSError in DataLoader worker thread" in str(info.value)
    assert "worker_init_fn" in str(info.value)
    with pytest.raises(StopIteration):  # the epoch is over
        next(it)
    del info
    assert threads_left(baseline) == []


def test_in_order_false_returns_every_batch():
    ds = RangeDataset(30)
    out = list(DataLoader(ds, batch_size=3, num_workers=3, in_order=False))
    assert sorted(torch.cat([b["i"] for b in out]).tolist()) == list(range(30))


@pytest.mark.parametrize(
    "kwargs,exc,match",
    [
        (dict(num_workers=-1), ValueError, "num_workers option should be non-negative"),
        (dict(timeout=-1), ValueError, "timeout option should be non-negative"),
        (dict(prefetch_factor=2), ValueError, "prefetch_factor option could only be specified"),
        (dict(num_workers=1, prefetch_factor=-1), ValueError, "prefetch_factor option should be non-negative"),
        (dict(persistent_workers=True), ValueError, "persistent_workers option needs num_workers > 0"),
        (dict(sampler=[0, 1], shuffle=True), ValueError, "sampler option is mutually exclusive with shuffle"),
        (dict(batch_sampler=[[0]], batch_size=2), ValueError, "batch_sampler option is mutually exclusive"),
        (dict(batch_sampler=[[0]], drop_last=True), ValueError, "batch_sampler option is mutually exclusive"),
        (dict(batch_size=None, drop_last=True), ValueError, "batch_size=None option disables auto-batching"),
        (dict(multiprocessing_context="spawn"), ValueError, "multiprocessing_context can only be used"),
        (dict(num_workers=1, multiprocessing_context="nope"), ValueError, "should specify a valid start method"),
        (dict(num_workers=1, multiprocessing_context=3), TypeError, "should be a valid context"),
    ],
)
def test_argument_validation_like_torch(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        DataLoader(RangeDataset(4), **kwargs)
    if exc in (ValueError, TypeError):
        with pytest.raises(exc, match=match):
            tud.DataLoader(RangeDataset(4), **kwargs)


def test_pin_memory_without_accelerator_warns():
    if torch.accelerator.is_available():
        out = list(DataLoader(RangeDataset(4), batch_size=2, pin_memory=True, num_workers=1))
        assert all(b["x"].is_pinned() for b in out)
    else:
        with pytest.warns(UserWarning, match="no accelerator is found"):
            out = list(DataLoader(RangeDataset(4), batch_size=2, pin_memory=True, num_workers=1))
        assert len(out) == 2


_EXIT_SCRIPT = """
import warnings
warnings.filterwarnings("ignore", "This DataLoader will create")  # torch's warning: more workers than cores
import sys, torch
from spdl_torch import DataLoader

class Busy:
    def __len__(self):
        return 1000
    def __getitem__(self, i):
        t = torch.zeros(100)
        for _ in range(500):
            t = t + 1  # workers are inside native torch code when the interpreter exits
        return t

it = iter(DataLoader(Busy(), batch_size=4, num_workers=4, worker_mode="thread"))
next(it)
for x in DataLoader(Busy(), batch_size=4, num_workers=2, worker_mode="thread"):
    break
loader = DataLoader(Busy(), batch_size=4, num_workers=2, worker_mode="thread")
for i, x in enumerate(loader):
    if i == 3:
        break
del loader, x
"""


@pytest.mark.slow
def test_interpreter_exit_with_live_workers_is_clean(tmp_path):
    import os
    import subprocess
    import sys

    script = tmp_path / "exit_script.py"
    script.write_text(_EXIT_SCRIPT)
    repo_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [repo_root, os.environ.get("PYTHONPATH")])))
    for _ in range(5):  # the abort this guards against ("terminate called ...") was intermittent
        proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=120)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout == "" and proc.stderr == ""
