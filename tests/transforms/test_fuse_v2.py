"""torchvision v2 pipelines fused beyond the basic recipes (conversions, dtypes, nesting, crop sizes); the
unfused remainder's runs: tests/transforms/test_plan.py."""


import pytest
import torch
from PIL import Image
from torchvision.transforms import v2

from tests._utils.images import psnr, transform_each
from spdl_torch.io import read_file
from spdl_torch.transforms import fuse
from tests._utils.images import IMAGENET_MEAN, IMAGENET_STD

MEAN, STD = list(IMAGENET_MEAN), list(IMAGENET_STD)
F32 = v2.ToDtype(torch.float32, scale=True)


@pytest.fixture(scope="module")
def paths(smooth_v2_jpegs):
    return smooth_v2_jpegs


PIPELINES = {
    "uint8": (v2.Compose([v2.Resize(40), v2.CenterCrop(32)]), torch.uint8, False),
    "to_image_mid_and_pure_tensor": (
        v2.Compose([v2.ToImage(), v2.Resize((24, 32)), v2.ToImage(), F32, v2.Normalize(MEAN, STD), v2.ToPureTensor()]),
        torch.float32, True),
    "convert_image_dtype": (
        v2.Compose([v2.Resize(40), v2.CenterCrop(32), v2.ConvertImageDtype(torch.float32), v2.Normalize(MEAN, STD)]),
        torch.float32, True),
    "bfloat16": (v2.Compose([v2.Resize(40), v2.CenterCrop(32), v2.ToDtype(torch.bfloat16, scale=True)]),
                 torch.bfloat16, False),
    "bfloat16_normalized": (
        v2.Compose([v2.Resize(40), v2.CenterCrop(32), v2.ConvertImageDtype(torch.bfloat16), v2.Normalize(MEAN, STD)]),
        torch.bfloat16, True),
    "float32_then_bfloat16_cast": (
        v2.Compose([v2.Resize(40), v2.CenterCrop(32), F32, v2.Normalize(MEAN, STD), v2.ToDtype(torch.bfloat16)]),
        torch.bfloat16, True),
    "nested_compose": (
        v2.Compose([v2.Compose([v2.ToImage(), v2.Resize(40)]),
                    v2.Compose([v2.CenterCrop(32), v2.Compose([F32, v2.Normalize(MEAN, STD)])])]),
        torch.float32, True),
    "sequential": (torch.nn.Sequential(v2.Resize(40), v2.CenterCrop(32), F32), torch.float32, False),
    "uint8_to_dtype_noop": (v2.Compose([v2.CenterCrop(20), v2.ToDtype(torch.uint8, scale=True)]), torch.uint8, False),
    "random_apply_flip_always": (
        v2.Compose([v2.Resize(40), v2.CenterCrop(32), v2.RandomApply([v2.RandomHorizontalFlip(1.0)], p=1.0)]),
        torch.uint8, False),
}


@pytest.mark.parametrize("name", list(PIPELINES))
def test_fused_pipeline_matches_torchvision(paths, name):
    t, dtype, normalized = PIPELINES[name]
    plan = fuse(t)
    assert plan is not None and plan.rest is None, plan
    batch = plan([read_file(p) for p in paths])
    assert type(batch) is torch.Tensor and batch.dtype == dtype
    ref = transform_each(t, paths)
    for out, exp in zip(batch, ref):
        assert out.shape == exp.shape and exp.dtype == dtype
        a, b = out.float(), exp.float()
        if normalized:
            a, b = a * torch.tensor(STD).view(3, 1, 1), b * torch.tensor(STD).view(3, 1, 1)
        peak = 1.0 if dtype != torch.uint8 else 255.0
        # bfloat16 keeps 8 bits of mantissa: about 0.4 % relative error, ~45 dB on [0, 1] values
        assert psnr(a, b, peak) >= (40 if dtype != torch.bfloat16 else 38), name


def test_empty_compose_is_not_fused():
    import torchvision.transforms as T

    assert fuse(T.Compose([])) is None and fuse(torch.nn.Sequential()) is None  # (v2.Compose refuses [])


def test_random_apply_probability_multiplies():
    plan = fuse(v2.Compose([v2.CenterCrop(8), v2.RandomApply([v2.RandomHorizontalFlip(0.5)], p=0.5)]))
    assert plan.op_kwargs["hflip_prob"] == 0.25 and plan.random and plan.rest is None
    assert fuse(v2.Compose([v2.CenterCrop(8), v2.RandomApply([v2.RandomPerspective(p=1.0)], p=0.5)])).rest is not None


@pytest.mark.parametrize("crop", [(32, 32), (20, 64), (56, 40), (80, 100)])
def test_resize_then_center_crop_of_any_size(paths, crop):
    # Larger than the resized image on one or both sides: zero padding, as CenterCrop.
    t = v2.Compose([v2.Resize(40), v2.CenterCrop(crop)])
    plan = fuse(t)
    assert plan.op_kwargs == dict(geometry="eval", resize_shorter=40, height=crop[0], width=crop[1],
                                  interpolation="bilinear")
    batch = plan(paths)
    for out, exp in zip(batch, transform_each(t, paths)):
        assert out.shape == exp.shape
        assert psnr(out, exp) >= 40


# --- a user's subclass runs its own code --------------------------------------------------------------


class ZeroForward(v2.Compose):
    """Overrides forward: its output times 0."""

    def forward(self, *inputs):
        return super().forward(*inputs) * 0


class HalfCall(v2.Compose):
    """Overrides __call__: its output halved (as a float)."""

    def __call__(self, *inputs):
        return super().__call__(*inputs) / 2


class Named(v2.Compose):
    """Overrides nothing the fuser replaces: only how it prints."""

    def __repr__(self):
        return "Named()"


class ZeroApply(v2.RandomApply):
    def forward(self, *inputs):
        return super().forward(*inputs) * 0


class LoggedChoice(v2.RandomChoice):
    calls = 0

    def forward(self, *inputs):
        type(self).calls += 1
        return super().forward(*inputs)


@pytest.fixture(scope="module")
def pngs(tmp_path_factory):
    """PNG files (the same pixels from every decoder, so the references below are exact)."""
    from tests._utils import images

    root = tmp_path_factory.mktemp("v2png")
    out = []
    for k in range(3):
        path = root / f"{k}.png"
        path.write_bytes(images.encode(images.upsampled_noise(30 + 3 * k, 36, seed=k)))
        out.append(str(path))
    return out


def _pil_tensor(path):
    return v2.functional.pil_to_tensor(Image.open(path).convert("RGB"))


def _dataset(paths, t, **kw):
    from spdl_torch.datasets import FileListDataset

    return FileListDataset(paths, transform=t, seed=0, **kw)


def _outputs(ds):
    return [ds[i][0] for i in range(len(ds))]


class ZeroSequential(torch.nn.Sequential):
    def forward(self, x):
        return super().forward(x) * 0


class Unflipped(v2.RandomHorizontalFlip):
    def transform(self, inpt, params):
        return inpt


class CornerCrop(v2.RandomResizedCrop):
    def make_params(self, flat_inputs):
        return dict(top=0, left=0, height=20, width=20)


class IdentityOnly(v2.TrivialAugmentWide):
    _AUGMENTATION_SPACE = {"Identity": (lambda num_bins, height, width: None, False)}


CROP_F32 = [v2.CenterCrop(24), F32]
OVERRIDES = {  # (the pipeline, the overriding class, what it overrides)
    "forward": (lambda: ZeroForward(CROP_F32), "ZeroForward", "forward"),
    "__call__": (lambda: HalfCall(CROP_F32), "HalfCall", "__call__"),
    "forward_nested": (lambda: v2.Compose([v2.CenterCrop(24), ZeroForward([F32]), v2.Normalize(MEAN, STD)]),
                       "ZeroForward", "forward"),
    "__call___nested": (lambda: v2.Compose([v2.CenterCrop(24), HalfCall([F32, v2.Normalize(MEAN, STD)])]),
                        "HalfCall", "__call__"),
    "sequential": (lambda: ZeroSequential(v2.CenterCrop(24), F32), "ZeroSequential", "forward"),
    "random_apply": (lambda: v2.Compose([v2.CenterCrop(24), ZeroApply([v2.RandomHorizontalFlip(1.0)], p=1.0)]),
                     "ZeroApply", "forward"),
    "random_choice": (lambda: v2.Compose([v2.CenterCrop(24), LoggedChoice([v2.RandomHorizontalFlip(1.0),
                                                                            v2.RandomVerticalFlip(1.0)])]),
                      "LoggedChoice", "forward"),
    "flip": (lambda: v2.Compose([v2.CenterCrop(24), Unflipped(1.0), F32]), "Unflipped", "transform"),
    "geometry": (lambda: v2.Compose([CornerCrop(16), F32]), "CornerCrop", "make_params"),
    "policy_table": (lambda: v2.Compose([v2.CenterCrop(24), IdentityOnly()]), "IdentityOnly", "_AUGMENTATION_SPACE"),
}


@pytest.mark.parametrize("name", list(OVERRIDES))
def test_subclass_overriding_its_methods_runs_as_written(pngs, name):
    # The override runs as torchvision runs it (multiplies by 0, halves, counts its calls, its own crop box or
    # table); the plan, the warning, repr(ds) and require_fused=True name the class and why; nothing after it
    # is fused.
    make, cls, method = OVERRIDES[name]
    t = make()
    reason = f"{cls} overrides {method}: runs as written"
    with pytest.warns(UserWarning, match=reason):
        ds = _dataset(pngs, t)
    assert reason in repr(ds)
    if ds.plan is not None:
        assert ds.plan.unfused_reason == reason and type(ds.plan.unfused).__name__ == cls
        assert [type(x).__name__ for x in ds.plan.rest.transforms][0] == cls
    with pytest.raises(ValueError, match=rf"(?s)require_fused=True, but {cls}\(.*{reason}"):
        _dataset(pngs, t, require_fused=True)
    LoggedChoice.calls = 0
    torch.manual_seed(3)
    got = _outputs(ds)
    torch.manual_seed(3)
    want = [t(_pil_tensor(p)) for p in pngs]
    for a, b in zip(got, want):
        torch.testing.assert_close(a, b, rtol=0, atol=0)
    if name in ("forward", "sequential", "random_apply"):
        assert all(float(a.abs().max()) == 0 for a in got)
    if name in ("flip", "policy_table"):  # the crop itself, as the overrides leave it
        keep = v2.Compose([v2.CenterCrop(24)] + ([F32] if name == "flip" else []))
        assert all(torch.equal(a, keep(_pil_tensor(p))) for a, p in zip(got, pngs))
    if name == "random_choice":
        assert LoggedChoice.calls == 2 * len(pngs)


def test_subclass_overriding_nothing_still_fuses(pngs):
    for t in (Named(CROP_F32 + [v2.Normalize(MEAN, STD)]),
              v2.Compose([v2.Resize(28), Named([v2.CenterCrop(24), F32]), v2.Normalize(MEAN, STD)])):
        ds = _dataset(pngs, t, require_fused=True)
        assert ds.plan.rest is None and ds.plan.op_kwargs["dtype"] == torch.float32
        for p, got in zip(pngs, _outputs(ds)):
            want = t(_pil_tensor(p))
            a, b = got * torch.tensor(STD).view(3, 1, 1), want * torch.tensor(STD).view(3, 1, 1)
            assert psnr(a, b, 1.0) >= 40


def test_method_replaced_on_the_object_or_a_hook_runs_as_written(pngs):
    flip = v2.RandomHorizontalFlip(1.0)
    flip.forward = lambda x: x * 0  # on the object itself
    hooked = v2.CenterCrop(24)
    hooked.register_forward_hook(lambda module, args, out: out * 0)
    for t, reason in [(v2.Compose([v2.CenterCrop(24), flip]), "RandomHorizontalFlip overrides forward"),
                      (v2.Compose([v2.Resize(28), hooked]), "CenterCrop has forward hooks")]:
        with pytest.warns(UserWarning, match=reason):
            ds = _dataset(pngs, t)
        for p, got in zip(pngs, _outputs(ds)):
            assert torch.equal(got, t(_pil_tensor(p))) and int(got.max()) == 0


# --- no-ops are absorbed ---------------------------------------------------------------------------------

NOOPS = {
    "to_dtype": lambda d: v2.ToDtype(d),
    "to_dtype_scale": lambda d: v2.ToDtype(d, scale=True),
    "convert_image_dtype": lambda d: v2.ConvertImageDtype(d),
    "v1_convert_image_dtype": lambda d: __import__("torchvision.transforms", fromlist=["x"]).ConvertImageDtype(d),
    "to_image": lambda d: v2.ToImage(),
    "to_pure_tensor": lambda d: v2.ToPureTensor(),
    "identity": lambda d: v2.Identity(),
    "nn_identity": lambda d: torch.nn.Identity(),
    "rgb": lambda d: v2.RGB(),
}


@pytest.mark.parametrize("dtype", [torch.uint8, torch.float32], ids=["uint8", "float32"])
@pytest.mark.parametrize("noop", list(NOOPS))
def test_noop_after_the_output_is_fused(pngs, noop, dtype):
    head = [v2.CenterCrop(24)] + ([] if dtype == torch.uint8 else [F32, v2.Normalize(MEAN, STD)])
    t = v2.Compose(head + [NOOPS[noop](dtype), v2.ToPureTensor()])
    ds = _dataset(pngs, t, require_fused=True)
    assert ds.plan.rest is None and ds.plan.op_kwargs.get("dtype", torch.uint8) == dtype
    for p, got in zip(pngs, _outputs(ds)):
        want = t(_pil_tensor(p))
        assert type(got) is torch.Tensor and got.dtype == want.dtype == dtype
        torch.testing.assert_close(got, want.as_subclass(torch.Tensor), rtol=0, atol=1e-6)


def test_noop_after_random_erasing_and_before_the_geometry():
    t = v2.Compose([v2.Identity(), v2.ToDtype(torch.uint8), v2.RandomResizedCrop(16), F32, v2.RandomErasing(p=0.5),
                    v2.ToDtype(torch.float32), v2.ConvertImageDtype(torch.float32), v2.Identity()])
    plan = fuse(t)
    assert plan.rest is None and plan.augment.eraser is not None
