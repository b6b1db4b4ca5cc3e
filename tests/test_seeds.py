"""Per-sample seeds (spdl_torch/_seeds.py, ``spdl_torch.transforms.FusedPlan.sample_seeds``): one int64 per index, the
same for the same (seed, epoch, index) whatever the order asked, another for another epoch or seed."""

import torch

from spdl_torch.transforms import FusedPlan


def test_sample_seeds():
    a = FusedPlan.sample_seeds(1, 0, [0, 1, 2])
    assert a.dtype == torch.int64 and len(set(a.tolist())) == 3
    assert torch.equal(a, FusedPlan.sample_seeds(1, 0, [0, 1, 2]))
    assert torch.equal(FusedPlan.sample_seeds(1, 0, [2, 0])[0], a[2])
    assert not torch.equal(a, FusedPlan.sample_seeds(1, 1, [0, 1, 2]))
    assert not torch.equal(a, FusedPlan.sample_seeds(2, 0, [0, 1, 2]))
