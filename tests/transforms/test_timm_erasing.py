"""timm's ``RandomErasing`` fused (spdl_torch/transforms/_timm_erasing.py): the box count, box sizes and
colours drawn with timm's distribution (chi-square over 20,000 draws against timm's own), and the boxes
written by ``decode_images(erase=...)`` in order, in each of timm's modes."""

import collections
import math

import pytest
import torch
from torchvision.transforms import InterpolationMode

from spdl_torch.transforms import fuse

from tests._utils import images
from tests._utils.augment import timm_stand_in


@pytest.fixture(scope="module")
def paths(tmp_path_factory):
    root = tmp_path_factory.mktemp("timm")
    return [str(images.write(root / f"{k}.png", images.upsampled_noise(300 + 20 * k, 260 - 10 * k, seed=k, cell=20)))
            for k in range(4)]


def test_timm_erasing_count_and_colour_draws_match_timms():
    # timm's RandomErasing with a random box count and mode="rand": the count, each box's size (its area is
    # scaled by the count) and the per-box colour have timm's distribution; chi-square over 20,000 draws.
    import random

    pytest.importorskip("timm.data")
    from timm.data import random_erasing as timm_re

    from spdl_torch.transforms import _augment_program as P
    from spdl_torch.transforms import FusedPlan
    from spdl_torch.transforms._timm import translate

    from tests._utils.stats import homogeneity_p

    n, h, w = 20_000, 48, 40
    erase = timm_re.RandomErasing(probability=0.7, mode="rand", max_count=3, device="cpu")
    boxes, colours = [], []
    real = timm_re._get_pixels

    def recording(per_pixel, rand_color, patch_size, dtype=torch.float32, device="cpu"):
        boxes[-1].append(tuple(patch_size[1:]))
        out = real(per_pixel, rand_color, patch_size, dtype=dtype, device=device)
        colours[-1].append(float(out[0, 0, 0]))
        return out

    random.seed(1)
    timm_re._get_pixels = recording
    try:
        for _ in range(n):
            boxes.append([])
            colours.append([])
            erase(torch.zeros((3, h, w)))
    finally:
        timm_re._get_pixels = real
    sampler, _ = translate(erase)[0].sampler(3)
    mine_boxes, mine_colours = [], []
    for s in FusedPlan.sample_seeds(5, 0, range(n)).tolist():
        ops = sampler.draw(P.Rng(s), h, w)
        mine_boxes.append([(int(op.args[3]), int(op.args[4])) for op in ops])
        mine_colours.append([op.args[5] for op in ops])
    # one key per sample (equal totals): the box count, then each box's size, then the first box's colour
    count = collections.Counter(len(b) for b in mine_boxes), collections.Counter(len(b) for b in boxes)
    assert homogeneity_p(*count) > 1e-3
    for k in range(3):
        size = [collections.Counter((len(b), b[k][0] // 4, b[k][1] // 4) if len(b) > k else None for b in bs)
                for bs in (mine_boxes, boxes)]
        assert homogeneity_p(*size) > 1e-3, k
    first = [collections.Counter(max(-3, min(3, math.floor(c[0] * 2))) if c else None for c in cs)
             for cs in (mine_colours, colours)]
    assert homogeneity_p(*first) > 1e-3


@pytest.mark.parametrize("kw", [dict(probability=1.5), dict(probability=-0.5), dict(min_area=0.4, max_area=0.1),
                                dict(min_area=0.5, max_area=2.0), dict(min_count=0, max_count=2),
                                dict(min_count=-1, max_count=-1)],
                         ids=["p_above_1", "p_below_0", "areas_reversed", "area_above_1", "count_0", "count_negative"])
def test_timm_erasing_values_timm_runs_draw_as_timm(kw):
    # timm takes these and runs them: p compared with random(), uniform(min_area, max_area) in either order, a
    # box larger than the image never placed, range(count) of a count <= 0 empty
    import random

    timm_re = pytest.importorskip("timm.data.random_erasing")
    from spdl_torch.transforms import _augment_program as P
    from spdl_torch.transforms import FusedPlan
    from spdl_torch.transforms._timm import translate

    from tests._utils.stats import homogeneity_p

    n, h, w = 1500, 24, 20
    erase = timm_re.RandomErasing(**{"probability": 0.7, **kw}, device="cpu")
    boxes = []
    real = timm_re._get_pixels

    def recording(per_pixel, rand_color, patch_size, dtype=torch.float32, device="cpu"):
        boxes[-1].append(tuple(patch_size[1:]))
        return real(per_pixel, rand_color, patch_size, dtype=dtype, device=device)

    random.seed(1)
    timm_re._get_pixels = recording
    try:
        for _ in range(n):
            boxes.append([])
            erase(torch.zeros((3, h, w)))
    finally:
        timm_re._get_pixels = real
    sampler, _ = translate(erase)[0].sampler(3)
    mine = [[(int(op.args[3]) // 4, int(op.args[4]) // 4) for op in sampler.draw(P.Rng(s), h, w)]
            for s in FusedPlan.sample_seeds(5, 0, range(n)).tolist()]
    theirs = [[(bh // 4, bw // 4) for bh, bw in b] for b in boxes]
    a, b = collections.Counter(map(tuple, mine)), collections.Counter(map(tuple, theirs))
    if len(a) == len(b) == 1:  # one outcome (never erased): the same one
        assert set(a) == set(b)
    else:
        assert homogeneity_p(a, b) > 1e-3


def test_timm_erasing_is_written_by_the_op(paths):
    # The fused timm RandomErasing (3 boxes at most, each mode) equals the un-erased fused batch with the
    # sample's boxes written in order (their values as drawn; "pixel": normal values from the op's stream).
    import torchvision.transforms as T1
    import torchvision.transforms.v2.functional as F

    from spdl_torch.transforms import FusedPlan

    rrc = timm_stand_in("RandomResizedCropAndInterpolation", size=(48, 40), scale=(0.3, 1.0), ratio=(0.75, 1.33),
                      interpolation=InterpolationMode.BILINEAR)
    head = [rrc, timm_stand_in("MaybeToTensor"), T1.Normalize(torch.tensor([0.5] * 3), torch.tensor([0.25] * 3))]
    srcs = paths * 6
    seeds = FusedPlan.sample_seeds(11, 0, range(len(srcs)))
    plain = fuse(T1.Compose(head))(srcs, seeds)
    for mode in ("const", "rand", "pixel"):
        erase = timm_stand_in("RandomErasing", probability=0.8, min_area=0.02, max_area=0.4,
                            log_aspect_ratio=(math.log(0.3), math.log(1 / 0.3)), min_count=1, max_count=3, mode=mode)
        plan = fuse(T1.Compose(head + [erase]))
        got = plan(srcs, seeds)
        drawn = 0
        for k, s in enumerate(seeds.tolist()):
            want, mask = plain[k].clone(), torch.zeros(48, 40, dtype=torch.bool)
            for op in plan.sample_augmentation(s):
                apply, top, left, hh, ww = (int(x) for x in op.args[:5])
                drawn += 1
                if apply == 1:
                    want = F.erase(want, top, left, hh, ww, torch.tensor(op.args[5:])[:, None, None])
                mask[top:top + hh, left:left + ww] = True
            if mode == "pixel":
                assert torch.equal(got[k][:, ~mask], plain[k][:, ~mask])
                assert mask.sum() == 0 or not torch.equal(got[k][:, mask], plain[k][:, mask])
            else:
                assert torch.equal(got[k], want), (mode, k)
        assert drawn > len(srcs)  # more than one box per sample on average
