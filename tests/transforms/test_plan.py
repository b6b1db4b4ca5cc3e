"""``FusedPlan`` (spdl_torch/transforms/_plan.py) run on encoded images against the torchvision pipeline it
was fused from: the fused prefix, and the unfused remainder (deterministic transforms once per batch, in
chunks; random ones per sample, in torch's global RNG order; results of varying shape per sample)."""


import pytest
import torch
from torchvision.transforms import v2

import spdl_torch
from spdl_torch.io import decode_image
from spdl_torch.transforms import fuse

from tests._utils.images import psnr, transform_each
from tests._utils.images import IMAGENET_MEAN, IMAGENET_STD


MEAN, STD = list(IMAGENET_MEAN), list(IMAGENET_STD)


EVAL = v2.Compose([v2.Resize(40), v2.CenterCrop(32), v2.ToDtype(torch.float32, scale=True), v2.Normalize(MEAN, STD)])


def test_plan_matches_torchvision_eval(image_tree):
    _, paths = image_tree
    batch = fuse(EVAL)([spdl_torch.io.read_file(p) for p in paths])
    ref = torch.stack([EVAL(decode_image(p)) for p in paths])
    assert batch.shape == (len(paths), 3, 32, 32) and batch.dtype == torch.float32
    # Normalized values: compare on the 0..255 scale.
    scale = 255 * torch.tensor(STD).view(1, 3, 1, 1)
    assert psnr(batch * scale, ref * scale) >= 40


def test_plan_rest_runs_per_sample(image_tree):
    _, paths = image_tree
    t = v2.Compose([v2.CenterCrop(16), v2.Lambda(lambda x: x.float().mean())])
    out = fuse(t)(paths[:3])
    assert isinstance(out, list) and len(out) == 3 and out[0].dim() == 0


F32 = v2.ToDtype(torch.float32, scale=True)


@pytest.fixture(scope="module")
def paths(smooth_v2_jpegs):
    return smooth_v2_jpegs


def test_deterministic_remainder_runs_once_on_the_batch(paths):
    # ToDtype without scale does not map: it and Normalize run on the batch tensor, not per sample.
    t = v2.Compose([v2.CenterCrop(24), v2.ToDtype(torch.float32), v2.Normalize([120.0] * 3, [60.0] * 3),
                    v2.Grayscale(3)])
    plan = fuse(t)
    assert plan.per_sample is None
    assert [type(x) for x in plan.batched.transforms] == [v2.ToDtype, v2.Normalize, v2.Grayscale]
    batch = plan(paths)
    assert type(batch) is torch.Tensor and batch.shape == (len(paths), 3, 24, 24)
    torch.testing.assert_close(batch, torch.stack(transform_each(t, paths)))  # crop only: the same pixels


def test_random_remainder_stays_per_sample(paths):
    t = v2.Compose([v2.CenterCrop(24), F32, v2.RandomPerspective(p=1.0), v2.Normalize(MEAN, STD)])
    plan = fuse(t)
    assert plan.batched is None
    assert [type(x) for x in plan.per_sample.transforms] == [v2.RandomPerspective, v2.Normalize]
    torch.manual_seed(7)
    batch = plan(paths)
    torch.manual_seed(7)
    expected = torch.stack(transform_each(t, paths))
    assert isinstance(batch, list)
    batch = torch.stack(batch)
    torch.testing.assert_close(batch, expected)
    erased = [(x == ((0 - torch.tensor(MEAN)) / torch.tensor(STD)).view(3, 1, 1)).all(0) for x in batch]
    assert all(e.any() for e in erased) and not torch.equal(erased[0], erased[1])  # one draw per sample


def test_per_sample_results_of_varying_shape(paths):
    t = v2.Compose([v2.CenterCrop(24), v2.RandomCrop(16, pad_if_needed=True), v2.Lambda(lambda x: x[:, : int(x.sum()) % 5 + 1]),
                    v2.ToDtype(torch.float32)])
    out = fuse(t)(paths)
    assert isinstance(out, list) and len(out) == len(paths) and all(o.dtype == torch.float32 for o in out)


def test_batched_normalize_equals_per_sample():
    # The premise of batching the deterministic remainder: one call on [N, C, H, W] == the stacked rows.
    t = v2.Compose([v2.ToDtype(torch.float32), v2.Normalize([120.0, 110.0, 100.0], [60.0, 50.0, 40.0]), v2.Grayscale(3)])
    batch = torch.randint(0, 256, (8, 3, 20, 30), dtype=torch.uint8)
    torch.testing.assert_close(t(batch), torch.stack([t(x) for x in batch]))


def test_batched_head_in_chunks_equals_one_call():
    # The head runs 4 samples per call into one batch (spdl_torch/transforms/_plan.py): the same values and
    # shape as one call on the whole batch, for a batch that is no multiple of 4 and a head that changes the
    # shape and dtype.
    from spdl_torch.transforms._plan import run_head

    head = v2.Compose([v2.CenterCrop(12), v2.Grayscale(1), v2.ToDtype(torch.float32), v2.Normalize([100.0], [40.0])])
    batch = torch.randint(0, 256, (11, 3, 20, 30), dtype=torch.uint8)
    out = run_head(head, batch)
    assert out.shape == (11, 1, 12, 12) and out.dtype == torch.float32
    torch.testing.assert_close(out, head(batch))
    assert torch.equal(run_head(head, batch[:3]), head(batch[:3]))
