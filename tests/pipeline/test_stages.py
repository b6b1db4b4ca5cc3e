"""Stage kinds (sync, async, generators), aggregate/disaggregate, stats, and the IterableDataset adapter."""

import asyncio
import threading

import pytest
import torch

from spdl_torch.pipeline import Pipeline, PipelineBuilder
from spdl_torch.datasets import PipelineDataset
from spdl_torch.pipeline._stats import format_stats

WAIT = 10.0


@pytest.mark.parametrize("order", ["input", "completion"])
def test_async_stage_calls_overlap(order):
    n = 6
    started = 0
    all_started = None

    async def wait_for_all(x):
        nonlocal started, all_started
        if all_started is None:
            all_started = asyncio.Event()  # created on the scheduler loop
        started += 1
        if started == n:
            all_started.set()
        # completes only if the n calls are in flight at the same time
        await asyncio.wait_for(all_started.wait(), WAIT)
        return x

    p = PipelineBuilder().add_source(range(n)).pipe(wait_for_all, concurrency=n, output_order=order).build()
    out = list(p)
    assert sorted(out) == list(range(n))
    if order == "input":
        assert out == list(range(n))


def test_async_source_and_async_generator():
    async def source():
        for i in range(5):
            await asyncio.sleep(0)
            yield i

    async def repeat(x):
        for _ in range(x):
            await asyncio.sleep(0)
            yield x

    p = PipelineBuilder().add_source(source()).pipe(repeat, concurrency=3).build()
    assert list(p) == [1, 2, 2, 3, 3, 3, 4, 4, 4, 4]


def test_sync_generator_and_callable_object():
    class Split:
        def __call__(self, s):
            yield from s.split()

    p = PipelineBuilder().add_source(["a b", "", "c d e"]).pipe(Split(), concurrency=2).pipe(str.upper).build()
    assert list(p) == ["A", "B", "C", "D", "E"]


@pytest.mark.parametrize("drop_last, expected", [(False, [[0, 1, 2], [3, 4, 5], [6]]), (True, [[0, 1, 2], [3, 4, 5]])])
def test_aggregate(drop_last, expected):
    p = PipelineBuilder().add_source(range(7)).aggregate(3, drop_last=drop_last).build()
    assert list(p) == expected


def test_aggregate_disaggregate_roundtrip():
    p = (PipelineBuilder().add_source(range(10)).aggregate(4)
         .pipe(lambda b: [x * 10 for x in b], concurrency=2)
         .disaggregate().aggregate(5).build())
    assert list(p) == [[0, 10, 20, 30, 40], [50, 60, 70, 80, 90]]


def test_builder_validation():
    with pytest.raises(RuntimeError):
        PipelineBuilder().pipe(lambda x: x)
    with pytest.raises(RuntimeError):
        PipelineBuilder().build()
    b = PipelineBuilder().add_source([1])
    with pytest.raises(ValueError):
        b.pipe(lambda x: x, concurrency=0)
    with pytest.raises(ValueError):
        b.pipe(lambda x: x, output_order="random")
    with pytest.raises(TypeError):
        b.pipe(42)
    b.pipe(abs, name="s")
    with pytest.raises(ValueError):
        b.pipe(abs, name="s")
    b.add_sink(1)
    with pytest.raises(RuntimeError):
        b.pipe(abs)
    with pytest.raises(TypeError):
        PipelineBuilder().add_source(3)


def test_stats_fields_and_consistency():
    def fail_on_3(x):
        if x == 3:
            raise ValueError
        return x

    p = (PipelineBuilder().add_source(range(20))
         .pipe(fail_on_3, concurrency=2, name="f", max_failures=1)
         .aggregate(4)
         .add_sink(3)
         .build())
    assert p.stats()["state"] == "not started"
    batches = list(p)
    s = p.stats()
    assert s["state"] == "completed" and s["consumed"] == len(batches) == 5 and s["failures"] == 1
    assert s["elapsed_s"] > 0
    src, f, agg = s["stages"]
    assert [st["name"] for st in s["stages"]] == ["source", "f", "aggregate(4)"]
    assert (src["count"], src["outputs"]) == (20, 20)
    assert (f["count"], f["failures"], f["outputs"]) == (19, 1, 19)
    assert (agg["count"], agg["outputs"]) == (19, 5)
    for st in s["stages"]:
        for key in ("kind", "concurrency", "items_per_s", "latency_p50_s", "latency_p90_s", "latency_p99_s",
                    "utilization", "queue"):
            assert key in st
        q = st["queue"]
        assert set(q) == {"name", "size", "occupancy_mean", "occupancy_max", "producer_wait_s", "consumer_wait_s"}
        assert 0 <= q["occupancy_mean"] <= q["occupancy_max"] <= q["size"]
        assert q["producer_wait_s"] >= 0 and q["consumer_wait_s"] >= 0
    assert f["latency_p50_s"] <= f["latency_p90_s"] <= f["latency_p99_s"]
    assert f["items_per_s"] > 0 and agg["queue"]["size"] == 3  # the last stage's queue is the sink
    table = format_stats(s)
    assert "aggregate(4)" in table and "p99" in table


def test_periodic_stats_callback():
    got = []
    done = threading.Event()
    release = threading.Event()

    def cb(stats):
        got.append(stats)
        release.set()
        if stats["state"] != "running":
            done.set()

    def wait_for_report(x):
        if x == 0:
            release.wait(WAIT)  # hold the pipeline until at least one periodic report was made
        return x

    p = PipelineBuilder().add_source(range(10)).pipe(wait_for_report).build(report_stats_interval=0.01, stats_callback=cb)
    assert list(p) == list(range(10))
    assert done.wait(WAIT)
    assert got[0]["state"] == "running" and got[-1]["state"] == "completed"
    assert got[-1]["stages"][1]["count"] == 10


def test_iterable_dataset_adapter():
    p = (PipelineBuilder().add_source(range(10))
         .pipe(lambda i: torch.full((2,), i), concurrency=2)
         .aggregate(4)
         .pipe(torch.stack)
         .build())
    for ds in (PipelineDataset(p), PipelineDataset(p)):
        assert isinstance(ds, torch.utils.data.IterableDataset)
        for _epoch in range(2):
            batches = list(torch.utils.data.DataLoader(ds, batch_size=None))
            assert [b.shape for b in batches] == [(4, 2), (4, 2), (2, 2)]
            assert torch.cat(batches)[:, 0].tolist() == list(range(10))
    with pytest.raises(TypeError):
        PipelineDataset([1, 2])
    assert isinstance(p, Pipeline)


def test_periodic_stats_logged_without_callback(caplog):
    import logging

    p = PipelineBuilder().add_source(range(5)).pipe(abs, name="absolute").build(report_stats_interval=0.01)
    with caplog.at_level(logging.INFO, logger="spdl_torch.pipeline"):
        assert list(p) == list(range(5))
        p.stop()  # waits for the scheduler thread, which logs a last report when the run ends
    tables = [r.getMessage() for r in caplog.records if r.levelno == logging.INFO]
    assert tables and "absolute" in tables[-1] and "completed" in tables[-1]
