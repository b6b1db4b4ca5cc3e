"""Lifecycle of spdl_torch.pipeline: stop, epochs, auto_stop, GC and interpreter exit."""

import itertools
import os
import subprocess
import sys
import threading

import pytest

from spdl_torch.pipeline import PipelineBuilder

from tests._utils.waiting import WAIT, wait_until

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _call_in_thread(fn):
    t = threading.Thread(target=fn, daemon=True)
    t.start()
    t.join(WAIT)
    return not t.is_alive()


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_stop_returns_while_stage_is_blocked(kind):
    entered, release = threading.Event(), threading.Event()
    finished = threading.Event()

    if kind == "sync":
        def fn(x):
            entered.set()
            release.wait(WAIT)
            finished.set()
            return x
    else:
        import asyncio

        async def fn(x):
            entered.set()
            while not release.is_set():
                await asyncio.sleep(0.001)
            return x

    p = PipelineBuilder().add_source(itertools.count()).pipe(fn).build()
    got, consumer_done = [], threading.Event()

    def consume():
        for x in p:
            got.append(x)
        consumer_done.set()

    consumer = threading.Thread(target=consume, daemon=True)
    consumer.start()
    assert entered.wait(WAIT)
    assert _call_in_thread(p.stop)  # returns although fn is blocked
    assert consumer_done.wait(WAIT)  # the blocked consumer's iteration ended
    assert got == [] and p.stats()["state"] == "stopped"
    release.set()  # the abandoned call finishes; its result is discarded
    if kind == "sync":
        assert finished.wait(WAIT)


def test_stop_with_full_queues_and_idle_consumer():
    p = PipelineBuilder().add_source(itertools.count()).pipe(lambda x: x, concurrency=2).add_sink(3).build()
    p.start()
    assert wait_until(lambda: p.stats()["stages"][0]["count"] >= 1 + 2 + 2 + 3)
    assert _call_in_thread(p.stop)
    assert _call_in_thread(p.stop)  # idempotent


def test_multiple_epochs_same_items():
    p = PipelineBuilder().add_source(range(50)).pipe(lambda x: x * x, concurrency=3, output_order="completion").aggregate(7).build()
    epochs = [sorted(v for batch in p for v in batch) for _ in range(3)]
    assert epochs[0] == epochs[1] == epochs[2] == [x * x for x in range(50)]
    # an epoch left early (break) does not affect the next one
    for x in p:
        break
    assert sorted(v for b in p for v in b) == epochs[0]
    assert p.stats()["state"] == "completed"


def test_one_shot_source_is_exhausted_after_first_epoch():
    p = PipelineBuilder().add_source(iter(range(5))).build()
    assert list(p) == list(range(5))
    assert list(p) == []


def test_auto_stop_and_prefetch():
    p = PipelineBuilder(queue_size=1).add_source(range(100)).pipe(lambda x: x + 1).add_sink(2).build()
    with p.auto_stop():
        # started on entry: it prefetches before anybody iterates
        assert wait_until(lambda: p.stats()["stages"][0]["count"] >= 3)
        assert list(p) == list(range(1, 101))
    with p:
        it = iter(p)
        assert next(it) == 1
    # exit stopped the run: the iterator ends
    assert list(it) == []
    assert p.stats()["state"] == "stopped"


def test_new_iteration_stops_previous():
    p = PipelineBuilder().add_source(range(10**9)).pipe(lambda x: x).build()
    it1 = iter(p)
    assert next(it1) == 0
    it2 = iter(p)
    assert next(it2) == 0
    assert list(it1) == []  # the first run was stopped
    it2.close()


EXIT_SCRIPT = """
import asyncio, gc, itertools, threading, time
from spdl_torch.pipeline import PipelineBuilder

ready = threading.Event()

def block(x):
    if x > 0:
        ready.set()
        threading.Event().wait()  # blocks forever in a pool thread
    return x

async def ablock(x):
    await asyncio.Event().wait()  # blocks forever on the loop

def make():
    return PipelineBuilder().add_source(itertools.count()).pipe(lambda x: x, concurrency=2).build()

# 1. garbage collection of a pipeline being iterated
p = make()
it = iter(p); next(it)
del p, it
gc.collect()
# 2. a loop left early, then an iterator kept open
p = make()
for i, x in enumerate(p):
    if i == 5:
        break
it = iter(p); next(it)
# 3. a run started but never iterated
q = make(); q.start()
# 4. a sync stage blocked forever, with an iterator open
blocked = PipelineBuilder().add_source(itertools.count()).pipe(block).build()
bit = iter(blocked); next(bit)
assert ready.wait(10)
# 5. async stages blocked forever
ablocked = PipelineBuilder().add_source(itertools.count()).pipe(ablock, concurrency=3).build()
ablocked.start()
time.sleep(0.05)
print("done")
# interpreter exit with all of the above alive
"""


@pytest.mark.slow
def test_exit_and_gc_are_silent():
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, "-c", EXIT_SCRIPT], capture_output=True, text=True, timeout=60,
                          env=env, cwd=ROOT)
    assert proc.stderr == ""
    assert proc.returncode == 0
    assert proc.stdout == "done\n"


def _scheduler_threads():
    return [t for t in threading.enumerate() if t.name == "spdl_torch.pipeline-scheduler" and t.is_alive()]


def test_break_and_gc_stop_the_run():
    import gc

    before = set(_scheduler_threads())

    def new_threads():
        return set(_scheduler_threads()) - before

    p = PipelineBuilder().add_source(itertools.count()).pipe(lambda x: x, concurrency=2).build()
    for x in p:
        if x == 3:
            break
    assert p.stats()["state"] == "stopped"
    assert wait_until(lambda: not new_threads())

    it = iter(p)
    next(it)
    assert len(new_threads()) == 1
    del it  # closing the iterator stops its run
    gc.collect()
    assert wait_until(lambda: not new_threads())

    p.start()
    assert len(new_threads()) == 1
    del p  # collecting a started pipeline stops its run
    gc.collect()
    assert wait_until(lambda: not new_threads())


def test_pipeline_is_not_picklable():
    import pickle

    p = PipelineBuilder().add_source([1]).build()
    with pytest.raises(TypeError, match="num_workers=0"):
        pickle.dumps(p)
