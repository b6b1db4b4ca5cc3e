"""Ordering, concurrency and memory bounds of spdl_torch.pipeline (no timing thresholds)."""

import random
import threading
import time

import pytest

from spdl_torch.pipeline import PipelineBuilder

from tests._utils.waiting import WAIT, wait_until


@pytest.mark.parametrize("concurrency", [1, 4])
def test_input_order_with_random_delays(concurrency):
    rng = random.Random(0)
    delays = [rng.random() * 0.003 for _ in range(60)]

    def slow_identity(i):
        time.sleep(delays[i])
        return i

    def gen(i):
        time.sleep(delays[-1 - i])
        yield i
        yield -i

    p = (PipelineBuilder().add_source(range(60))
         .pipe(slow_identity, concurrency=concurrency)
         .pipe(gen, concurrency=3)
         .build(num_threads=8))
    expected = [v for i in range(60) for v in (i, -i)]
    assert list(p) == expected


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_completion_order_slow_item_does_not_block_others(kind):
    release = threading.Event()
    n = 12

    if kind == "sync":
        def fn(i):
            if i == 0:
                assert release.wait(WAIT)
            return i
    else:
        import asyncio

        async def fn(i):
            if i == 0:
                while not release.is_set():  # poll: the event is set from the consumer thread
                    await asyncio.sleep(0.001)
            return i

    p = (PipelineBuilder().add_source(range(n))
         .pipe(fn, concurrency=3, output_order="completion")
         .build(num_threads=4))
    got = []
    with p.auto_stop():
        for x in p:
            got.append(x)
            if len(got) == n - 1:
                # every other item came out while item 0 is still blocked in fn
                assert not release.is_set()
                assert sorted(got) == list(range(1, n))
                release.set()
    assert got[-1] == 0 and sorted(got) == list(range(n))


def test_concurrency_limit_and_overlap():
    lock = threading.Lock()
    active = max_active = 0
    barrier = threading.Barrier(3, timeout=WAIT)
    rng = random.Random(1)
    delays = [rng.random() * 0.002 for _ in range(100)]

    def fn(i):
        nonlocal active, max_active
        with lock:
            active += 1
            max_active = max(max_active, active)
        try:
            if i < 3:
                barrier.wait()  # completes only if 3 calls run at once
            time.sleep(delays[i])
            return i
        finally:
            with lock:
                active -= 1

    for order in ("input", "completion"):
        max_active = 0
        barrier.reset()
        p = PipelineBuilder().add_source(range(100)).pipe(fn, concurrency=3, output_order=order).build(num_threads=8)
        assert sorted(p) == list(range(100))
        assert max_active == 3


@pytest.mark.parametrize("order", ["input", "completion"])
def test_items_in_flight_are_bounded(order):
    lock = threading.Lock()
    state = {"produced": 0, "consumed": 0, "max_outstanding": 0}

    def source():
        i = 0
        while True:  # infinite: only backpressure stops it
            with lock:
                state["produced"] += 1
                state["max_outstanding"] = max(state["max_outstanding"], state["produced"] - state["consumed"])
            yield i
            i += 1

    queue_size, c1, c2, buffer_size = 2, 3, 2, 4
    p = (PipelineBuilder(queue_size=queue_size).add_source(source())
         .pipe(lambda x: x, concurrency=c1, output_order=order)
         .pipe(lambda x: x, concurrency=c2, output_order=order)
         .add_sink(buffer_size)
         .build(num_threads=6))
    # documented bound (PipelineBuilder docstring): 1 + queue_size * stages + sum(concurrency) + buffer
    bound = 1 + queue_size * 2 + c1 + c2 + buffer_size
    it = iter(p)
    for _ in range(5):
        next(it)
        with lock:
            state["consumed"] += 1
    # the consumer stops pulling: the pipeline fills up to exactly the bound and stays there
    assert wait_until(lambda: state["produced"] - state["consumed"] >= bound)

    # The source may reach the bound while a stage still finishes an item it holds (its count moves on
    # after that): wait until no stage's count moves for 20 ms, then check that nothing moves any more.
    def counts():
        return [s["count"] for s in p.stats()["stages"]]

    def settled():
        before = counts()
        time.sleep(0.02)
        return counts() == before

    assert wait_until(settled)
    counts_before = counts()
    time.sleep(0.05)
    assert state["produced"] - state["consumed"] == bound
    assert counts() == counts_before
    # while running, the consumer may hold one more item than the quiescent bound
    assert state["max_outstanding"] <= bound + 1
    p.stop()
    it.close()
