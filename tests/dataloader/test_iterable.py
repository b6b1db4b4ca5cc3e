"""IterableDataset workers (spdl_torch/dataloader/_iterable.py), against both loaders: the sharding recipe of
torch's ``IterableDataset`` docstring yields each item once, and with ``in_order=False`` a slow worker does
not stall the others."""

import math
import time

import torch.utils.data as tud

import spdl_torch

from tests._utils.loaders import both


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


# -- worker-init-reseeds-main ------------------------------------------------------------------------------


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
