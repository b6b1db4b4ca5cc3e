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
    assert time.monotonic() - t0 < 9, "the timeout fired, not the release at 10 s"
    release.set()
    with pytest.raises(StopIteration):
        next(it)
    with pytest.raises(ValueError, match="timeout must be"):
        p.iterate(timeout=0)


def _on_thread(item):
    return item, getattr(_local, "index", None)


def test_thread_affinity_runs_each_item_on_its_thread_in_order():
    def init(i):
        _local.index = i

    seen = {0: [], 1: [], 2: []}
    lock = threading.Lock()

    def record(item):
        worker, k = item
        with lock:
            seen[_local.index].append(item)
        if worker == 1 and k == 0:
            time.sleep(0.3)  # thread 1 is slow: the other threads' items must not wait for it
        return item, _local.index

    items = [(k % 3, k // 3) for k in range(30)]
    p = (PipelineBuilder().add_source(items)
         .pipe(record, concurrency=30, output_order="completion", thread_affinity=lambda it: it[0])
         .build(num_threads=3, thread_initializer=init))
    out = list(p)
    assert all(item[0] == thread for item, thread in out)
    assert sorted(item for item, _ in out) == sorted(items)
    for thread, got in seen.items():  # each thread ran its own items, in source order
        assert got == [it for it in items if it[0] == thread]
    first_of_1 = [item for item, _ in out].index((1, 0))
    assert first_of_1 >= 10, "items of threads 0 and 2 arrive while thread 1 is busy"


def test_thread_affinity_out_of_range_fails_the_item():
    p = (PipelineBuilder().add_source([5]).pipe(lambda x: x, thread_affinity=lambda x: x)
         .build(num_threads=2))
    with pytest.raises(Exception, match="thread=5 is not in"):
        list(p)


def test_thread_affinity_must_be_callable():
    with pytest.raises(TypeError, match="thread_affinity must be callable"):
        PipelineBuilder().add_source([1]).pipe(lambda x: x, thread_affinity=3)


def test_max_in_flight_bounds_items_taken_ahead_of_the_consumer():
    taken = []

    def source():
        for i in range(100):
            taken.append(i)
            yield i

    p = (PipelineBuilder(queue_size=8).add_source(source()).pipe(lambda x: x, concurrency=4)
         .add_sink(16).build(num_threads=4, max_in_flight=3))
    it = iter(p)
    for consumed in range(5):
        deadline = time.monotonic() + 5
        while len(taken) < consumed + 3 and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.1)  # a runaway source would take more meanwhile
        assert len(taken) == consumed + 3  # queues and sink have room for far more
        assert next(it) == consumed
    it.close()


def test_max_in_flight_must_be_positive():
    with pytest.raises(ValueError, match="max_in_flight must be >= 1"):
        PipelineBuilder().add_source([1]).build(max_in_flight=0)
