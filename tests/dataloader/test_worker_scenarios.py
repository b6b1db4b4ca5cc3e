"""Five scenarios that code written for torch's DataLoader relies on, each run over both loaders: the sharding
recipe of torch's ``IterableDataset`` docs yields every item once; what ``worker_init_fn`` stores on
``get_worker_info().dataset`` stays with its worker; a ``worker_init_fn`` that reseeds the global RNGs leaves the
consumer's shuffle alone; with ``in_order=False`` a slow worker does not stall the others; the interpreter exits
cleanly with a batch in flight.
"""

import math
import os
import random
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest
import torch
import torch.utils.data as tud

import spdl_torch

from .parity import OURS, both, collect


# -- iterable-sharding-recipe ------------------------------------------------------------------------------


class DocShardedRange(tud.IterableDataset):
    """The sharding recipe of torch's IterableDataset docstring, reading torch's own get_worker_info()."""

    def __init__(self, n):
        self.n = n

    def __iter__(self):
        info = tud.get_worker_info()
        if info is None:
            return iter(range(self.n))
        per = math.ceil(self.n / info.num_workers)
        return iter(range(info.id * per, min(self.n, (info.id + 1) * per)))


@both()
def test_iterable_sharding_recipe_yields_each_item_once(DL):
    got = sorted(int(x) for x in DL(DocShardedRange(6), batch_size=None, num_workers=2))
    assert got == list(range(6))


# -- worker-state-per-thread -------------------------------------------------------------------------------


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


# -- worker-init-reseeds-main ------------------------------------------------------------------------------


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


# -- out-of-order-iterable-stall ---------------------------------------------------------------------------


class SlowFirstItemOfWorker1(tud.IterableDataset):
    def __iter__(self):
        wid = _info().id
        for i in range(5):
            if wid == 1 and i == 0:
                time.sleep(1.5)  # worker 1 is slow on its first item
            yield wid, i


@both(torch_slow=True)
def test_out_of_order_iterable_slow_worker_does_not_stall_the_others(DL):
    arrivals = [(int(w), int(i)) for w, i in DL(SlowFirstItemOfWorker1(), batch_size=None, num_workers=2,
                                                in_order=False)]
    assert sorted(arrivals) == [(w, i) for w in (0, 1) for i in range(5)]
    slow = arrivals.index((1, 0))
    assert {a for a in arrivals[:slow] if a[0] == 0} == {(0, i) for i in range(5)}  # worker 0 did not wait


# -- exit-with-batch-in-flight -----------------------------------------------------------------------------

_EXIT_SCRIPT = textwrap.dedent("""
    import os, sys, torch, torch.utils.data, spdl_torch
    torch.set_num_threads(1)

    class Heavy(torch.utils.data.Dataset):   # tens of ms of native torch work per sample (GIL released)
        def __len__(self): return 1000
        def __getitem__(self, i):
            x = torch.randn(200, 200)
            for _ in range(10):
                x = torch.tanh(x @ x)
            return x[0, :4]

    DL = spdl_torch.DataLoader if sys.argv[1] == "spdl" else torch.utils.data.DataLoader
    runs = int(sys.argv[2])
    # Each run is a child forked after the imports (one import for all runs): the child breaks out of the loop
    # with the batches after the first still in flight, prints "done" and ends as a script does, through the
    # interpreter's normal exit.
    children = []
    for run in range(runs):
        pid = os.fork()
        if pid == 0:
            loader = DL(Heavy(), batch_size=16, num_workers=2)
            for batch in loader:
                assert batch.shape == (16, 4)
                break
            os.write(1, b"done\\n")  # one write: the children share the pipe
            sys.exit(0)
        children.append(pid)
    codes = [os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) for pid in children]
    print("exit codes", codes, flush=True)
""")


@pytest.mark.slow
@both()
def test_exit_with_batch_in_flight_4_runs(DL, tmp_path):
    """The interpreter exits cleanly (exit 0, nothing on stderr) while the loader's workers are inside a batch:
    ours 4 runs at once (the abort was seen in 2 of 4 runs), torch's once (the reference that the script is
    right)."""
    script = tmp_path / "exit_in_flight.py"
    script.write_text(_EXIT_SCRIPT)
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ, PYTHONPATH=repo + os.pathsep + os.environ.get("PYTHONPATH", ""), OMP_NUM_THREADS="1")
    which = "spdl" if DL is OURS else "torch"
    runs = 4 if which == "spdl" else 1
    p = subprocess.run([sys.executable, str(script), which, str(runs)], capture_output=True, text=True, env=env,
                       cwd=repo, timeout=300)
    assert (p.returncode, p.stderr) == (0, "")
    assert p.stdout == "done\n" * runs + f"exit codes {[0] * runs}\n"
