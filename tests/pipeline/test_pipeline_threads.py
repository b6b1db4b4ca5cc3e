"""Pipeline engine hooks used by spdl_torch.DataLoader: per-thread initializer, thread names,
persistent threads across runs, and a per-item timeout on iteration."""

import threading
import time

import pytest

from spdl_torch.pipeline import PipelineBuilder


def _ident(x):
    return (x, getattr(_local, "index", None), threading.current_thread().name)


_local = threading.local()


def test_thread_initializer_runs_once_per_thread_with_index():
    calls = []
    lock = threading.Lock()

    def init(i):
        _local.index = i
        with lock:
            calls.append((i, threading.get_ident()))

    p = (PipelineBuilder().add_source(range(20)).pipe(_ident, concurrency=3)
         .build(num_threads=3, thread_initializer=init, thread_name="t-hook"))
    out = list(p)
    assert [x for x, _, _ in out] == list(range(20))
    assert sorted(i for i, _ in calls) == [0, 1, 2] and len({t for _, t in calls}) == 3
    assert all(idx in (0, 1, 2) and name == f"t-hook-{idx}" for _, idx, name in out)


def test_thread_initializer_failure_fails_that_threads_calls():
    def init(i):
        raise OSError("init failed")

    p = PipelineBuilder().add_source(range(3)).pipe(_ident).build(num_threads=1, thread_initializer=init)
    with pytest.raises(Exception, match="init failed"):
        list(p)


def test_persistent_threads_are_reused_across_runs_and_closed():
    inits = []
    p = (PipelineBuilder().add_source(range(5)).pipe(_ident, concurrency=2)
         .build(num_threads=2, thread_initializer=inits.append, persistent_threads=True, thread_name="t-pers"))
    threads = set()
    for _ in range(3):
        assert [x for x, _, _ in p] == list(range(5))
        threads |= {t.ident for t in p.threads}
    assert sorted(inits) == [0, 1] and len(threads) == 2
    ts = p.threads
    p.close()
    for t in ts:
        t.join(5)
        assert not t.is_alive()


def test_iterate_timeout_raises_and_stops_run():
    release = threading.Event()

    def slow(x):
        release.wait(10)
        return x

    p = PipelineBuilder().add_source(range(3)).pipe(slow).build()
    it = p.iterate(timeout=0.3)
    t0 = time.monotonic()
    with pytest.raises(TimeoutError):
        next(it)
    assert time.monotonic() - t0 < 5
    release.set()
    with pytest.raises(StopIteration):
        next(it)
    with pytest.raises(ValueError, match="timeout must be"):
        p.iterate(timeout=0)
