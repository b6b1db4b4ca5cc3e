"""timm's RandAugment / AutoAugment / AugMixAugment fused: each op's rows against timm's own op on PIL images
(the native op; exact, or the PSNR bound the docs give), the samplers' draws against timm's own draws
(chi-square over 20,000 samples: op names, applied or not, argument bins and signs, filters, AugMix's
weights), and timm's create_transform end to end (fused whole; the batch equals the reference executor on the
un-augmented crops; repeatable, independent of the thread count)."""

import collections
import math
import random

import numpy as np
import pytest
import torch
from PIL import Image

from spdl_torch.datasets import FileListDataset, collate
from spdl_torch.transforms import _augment_program as P
from spdl_torch.transforms import FusedPlan
from spdl_torch.transforms._fuse import analyse
from spdl_torch.transforms._pil_rows import rotate_matrix
from spdl_torch.transforms._timm_policies import _Op, timm_sampler

from tests._utils import images
from tests._utils.augment import apply_program, from_pil, to_pil
from tests._utils.stats import homogeneity_p

timm_data = pytest.importorskip("timm.data")
AA = pytest.importorskip("timm.data.auto_augment")

N = 20_000
H, W = 36, 44
GEOMETRY = {"Rotate", "ShearX", "ShearY", "TranslateX", "TranslateY", "TranslateXRel", "TranslateYRel"}
_ROW_TO_PIL = {0: 0, 1: 2, 2: 3}  # pil_affine resample -> Pillow's filter number


def _aa(config, size=64, interpolation="random"):
    """timm's augmentation policy as create_transform builds it (its hparams: img_mean, translate_const)."""
    t = timm_data.create_transform(size, is_training=True, auto_augment=config, interpolation=interpolation)
    (aa,) = [x for x in t.transforms if type(x).__name__ in ("RandAugment", "AutoAugment", "AugMixAugment")]
    return aa


# ---------------------------------------------------------------------------- rows against timm's own ops

# Every op's rows give timm's own values, levels 0..10 (both signs), on photo-like images and 1-pixel-wide ones:
# the enhancements are Pillow's ImageEnhance (pil_enhance), AutoContrast ImageOps' (pil_autocontrast), the
# geometric rows carry Pillow's double matrix exactly (fill, pil_affine_low, pil_affine).


def _timm_op_on(op, img, aug):
    """timm's own op function with the argument and filter the row was drawn with."""
    kwargs = dict(op.kwargs)
    main = aug[-1]
    if main.op == "pil_affine":
        kwargs["resample"] = _ROW_TO_PIL[int(main.args[6])]
    arg = main.magnitude
    if op.name.startswith(("Posterize", "Solarize")):
        arg = int(arg)
    args = () if op.name in ("AutoContrast", "Equalize", "Invert") else (arg,)
    if op.name.startswith("Posterize") and arg <= 0:  # Pillow < 12's result (Pillow >= 12 raises)
        return torch.zeros_like(img)
    return from_pil(op.aug_fn(to_pil(img), *args, **kwargs))


def test_each_op_row_equals_timms_op():
    from spdl_torch.io import decode_images

    names = sorted(n for n in AA.LEVEL_TO_ARG if not n.startswith("GaussianBlur"))
    hparams = dict(translate_const=20, img_mean=(124, 116, 104))
    imgs = [images.photo(37, 53, seed=1), images.photo(48, 31, seed=2), images.photo(1, 9, seed=3), images.photo(9, 1, seed=4)]
    cases = []
    for name in names:
        for level in (0, 1, 3, 5, 7, 9, 10):
            op = AA.AugmentOp(name, prob=1.0, magnitude=level, hparams=hparams)
            for k, img in enumerate(imgs):
                rows = _Op(op, "T").draw(P.Rng(level * 31 + k), img.shape[1], img.shape[2], [None])
                cases.append((name, op, img, rows))
    got = {}
    for k, img in enumerate(imgs):  # one batch per image: the image once per case, each with its rows
        mine = [i for i, c in enumerate(cases) if c[2] is img]
        prog = torch.zeros(len(mine), max(len(cases[i][3]) for i in mine), 8)
        for n, i in enumerate(mine):
            for j, r in enumerate(cases[i][3]):
                prog[n, j] = torch.tensor(r.row())
        h, w = img.shape[1:]
        out = decode_images([images.png_tensor(img)] * len(mine), height=h, width=w, geometry="resize", interpolation="nearest",
                            augment=prog).data
        got.update({i: out[n] for n, i in enumerate(mine)})
    got = [got[i] for i in range(len(cases))]
    worst = collections.defaultdict(lambda: [0, 0, 0])  # max diff, values differing, values
    for (name, op, img, rows), out in zip(cases, got):
        d = (out.int() - _timm_op_on(op, img, rows).int()).abs()
        stats = worst[name]
        stats[0] = max(stats[0], int(d.max()))
        stats[1] += int((d > 0).sum())
        stats[2] += d.numel()
    for name, (maxd, differing, values) in worst.items():
        assert maxd == 0, (name, maxd, differing, values)
    assert set(worst) == set(names)


def test_rotate_matrix_is_pillows():
    # Pillow's Image.rotate and Image.transform with rotate_matrix's data, incl. the fast paths and a centre
    from tests._utils.augment import pil_affine

    for size in [(31, 24), (20, 20), (1, 7)]:
        img = images.photo(size[1], size[0], seed=size[0])
        for deg in (0.0, 180.0, -180.0, 90.0, 270.0, 360.0, 12.5, -29.7, 30.0, 44.99):
            for resample in (0, 2, 3):
                for center in (None, (3, 5.5)):
                    want = from_pil(to_pil(img).rotate(deg, resample=resample, center=center, fillcolor=(1, 2, 3)))
                    m = rotate_matrix(deg, *size, center)
                    got = img if m is None else pil_affine(img, m, {0: 0, 2: 1, 3: 2}[resample], (1, 2, 3))
                    assert torch.equal(got, want), (size, deg, resample, center)


# ------------------------------------------------------------------------------ draws against timm's own

def _bin(name, arg):
    if arg is None:
        return None
    if name.startswith("Posterize"):
        return int(arg)
    if name == "SolarizeAdd":
        return int(arg) // 8
    if name.startswith("Solarize"):
        return int(arg) // 16
    scale = {"Rotate": 3.0, "ShearX": 0.03, "ShearY": 0.03, "TranslateXRel": 0.045, "TranslateYRel": 0.045,
             "TranslateX": 2.0, "TranslateY": 2.0}.get(name, 0.1)
    return math.floor(float(arg) / scale)


def timm_draws(aa, n=N):
    """timm's own draws of ``aa`` on a tiny image under seeded ``random`` / ``numpy.random``: per sample the
    list of op calls [name, applied, argument bin, filter] (each op's aug_fn replaced by a recorder, the ops
    by proxies that note the choice) and, for AugMix, the chain weights and the blend."""
    calls, mixes = [], []

    class Proxy:
        def __init__(self, op):
            self.op = op

        def __call__(self, img):
            calls[-1].append([self.op.name, False, None, None])
            return self.op(img)

    def recorder(op):
        def record(img, *args, **kwargs):
            entry = calls[-1][-1]
            entry[1] = True
            entry[2] = _bin(op.name, args[0] if args else None)
            if op.name in GEOMETRY:
                kw = dict(kwargs)
                AA._check_args_tf(kw)  # timm's filter choice, from `random` as timm draws it
                if not (op.name == "Rotate" and args[0] % 360 == 0):  # Pillow's copy: no filter
                    entry[3] = int(kw["resample"])
            return img
        return record

    ops = list(aa.ops) if hasattr(aa, "ops") else [op for sub in aa.policy for op in sub]
    saved = {id(op): op.aug_fn for op in ops}
    for op in ops:
        op.aug_fn = recorder(op)
    if hasattr(aa, "ops"):
        real_ops, aa.ops = aa.ops, [Proxy(op) for op in aa.ops]
    else:
        real_policy, aa.policy = aa.policy, [[Proxy(op) for op in sub] for sub in aa.policy]
    if type(aa).__name__ == "AugMixAugment":
        basic = aa._apply_basic

        def record_mix(img, weights, m):
            mixes.append(([float(w) for w in weights], float(m)))
            return basic(img, weights, m)

        aa._apply_basic = record_mix
    img = Image.new("RGB", (W, H))
    random.seed(0)
    np.random.seed(0)
    try:
        for _ in range(n):
            calls.append([])
            aa(img)
    finally:
        for op in ops:
            op.aug_fn = saved[id(op)]
        if hasattr(aa, "ops"):
            aa.ops = real_ops
        else:
            aa.policy = real_policy
        aa.__dict__.pop("_apply_basic", None)
    return [[tuple(c) for c in s] for s in calls], mixes


def our_draws(aa, monkeypatch, n=N):
    """Our sampler's draws of ``aa`` in the same form (each op's draw recorded, applied or not)."""
    sampler = timm_sampler(aa)
    calls, mixes = [], []
    real = _Op.draw

    def draw(self, rng, h, w, state):
        out = real(self, rng, h, w, state)
        main = [op for op in out if op.op not in ("fill", "pil_affine_low")]
        if not main:
            calls[-1].append((self.name, False, None, None))
        else:
            filt = _ROW_TO_PIL[int(main[0].args[6])] if main[0].op == "pil_affine" else None
            calls[-1].append((self.name, True, _bin(self.name, main[0].magnitude), filt))
        return out

    monkeypatch.setattr(_Op, "draw", draw)
    for s in FusedPlan.sample_seeds(2024, 0, range(n)).tolist():
        calls.append([])
        ops = sampler.draw(P.Rng(s), H, W)
        if ops and ops[0].op == "mix_begin":
            mixes.append(([op.magnitude for op in ops if op.op == "mix_add"], ops[-1].magnitude))
    monkeypatch.undo()
    return calls, mixes


def _counts(samples, key):
    return collections.Counter(key(s) for s in samples)


def _assert_same(mine, theirs, keys):
    for name, key in keys.items():
        p = homogeneity_p(_counts(mine, key), _counts(theirs, key))
        assert p > 1e-3, (name, p)


_KEYS = {
    "names, applied": lambda s: tuple((c[0], c[1]) for c in s),
    "first op": lambda s: s[0] if s else None,
    "second op": lambda s: s[1] if len(s) > 1 else None,
    "last op": lambda s: s[-1] if s else None,
    "applied args": lambda s: tuple((c[0], c[2]) for c in s if c[1])[:2],
}

# AugMix's 8 ops a sample: the joint of names has too many cells; the first chain's pair instead.
_AUGMIX_KEYS = {**{k: v for k, v in _KEYS.items() if k != "names, applied"},
                "first chain": lambda s: (s[0][0], s[1][0])}

# timm's configs as create_transform builds them: interpolation "random" (bilinear or bicubic per op call)
# and "bicubic" (one filter); ~1-2 s each on 2 cores, AugMix (~8 s) in the slow tier.
CONFIGS = [("rand-m9-mstd0.5-inc1", "random"), ("rand-m7-n3-tweights", "bicubic"), ("original", "random"),
           ("v0", "bicubic"), pytest.param("augmix-m5-w4-d2", "random", marks=pytest.mark.slow)]


@pytest.mark.parametrize("config, interpolation", CONFIGS)
def test_policy_draws_match_timms(config, interpolation, monkeypatch):
    aa = _aa(config, interpolation=interpolation)
    theirs, their_mix = timm_draws(aa)
    mine, my_mix = our_draws(aa, monkeypatch)
    _assert_same(mine, theirs, _AUGMIX_KEYS if config.startswith("augmix") else _KEYS)
    if config.startswith("augmix"):  # Dirichlet chain weights, Beta blend, as timm draws them (float32)
        assert len(my_mix) == len(their_mix) == N
        for k in range(4):
            _assert_same(my_mix, their_mix, {f"w{k}": lambda m, k=k: min(int(m[0][k] * 10), 9)})
        _assert_same(my_mix, their_mix, {"m": lambda m: min(int(m[1] * 10), 9),
                                         "order": lambda m: int(np.argmax(m[0]))})
        assert all(len(s) == 8 for s in mine)  # width 4 x depth 2
    if config == "rand-m9-mstd0.5-inc1":  # the test has power: a magnitude one step off is rejected
        off, _ = our_draws(_aa("rand-m8-mstd0.5-inc1", interpolation=interpolation), monkeypatch)
        assert homogeneity_p(_counts(off, _KEYS["applied args"]), _counts(theirs, _KEYS["applied args"])) < 1e-6


@pytest.mark.slow  # ~7 s
def test_augmix_random_depth_and_weighted_choice_match_timm(monkeypatch):
    # depth -1 (1..3 ops per chain) and alpha 0.5 (Dirichlet / Beta with shape < 1)
    aa = _aa("augmix-m3-w3-a0.5")
    theirs, their_mix = timm_draws(aa)
    mine, my_mix = our_draws(aa, monkeypatch)
    _assert_same(mine, theirs, {"ops": lambda s: len(s), "first op": _KEYS["first op"]})
    _assert_same(my_mix, their_mix, {"w0": lambda m: min(int(m[0][0] * 10), 9), "m": lambda m: min(int(m[1] * 10), 9)})


# ----------------------------------------------------------------------------------- create_transform

@pytest.fixture(scope="module")
def paths(tmp_path_factory):
    root = tmp_path_factory.mktemp("timm_policies")
    return [str(images.write(root / f"{k}.png", images.upsampled_noise(70 + 9 * k, 96 - 4 * k, seed=k, cell=7)))
            for k in range(10)]


FUSED = ["rand-m9-mstd0.5-inc1", "rand-m7-n3-tweights", "original", "v0", "augmix-m5-w4-d2"]


@pytest.mark.parametrize("config", FUSED)
@pytest.mark.parametrize("interpolation", ["random", "bicubic"])
def test_create_transform_fuses_whole(config, interpolation):
    t = timm_data.create_transform(224, is_training=True, auto_augment=config, re_prob=0.25, interpolation=interpolation)
    a = analyse(t)
    assert a.plan.rest is None, a.reason
    names = a.plan.augment.names()
    assert names[-1] == "RandomErasing" and names[0] in ("RandAugment", "AutoAugment", "AugMixAugment")


def _uint8_crops(paths, plan, seeds):
    """The un-augmented crops (uint8) the plan's op makes, per sample's filter where it draws one."""
    from spdl_torch.io._batch import decode_images  # the op itself
    from spdl_torch.transforms._augment_program import interpolation_choice

    kw = {k: v for k, v in plan.op_kwargs.items() if k not in ("dtype", "mean", "std", "interpolation")}
    interp = plan.op_kwargs["interpolation"]
    choices = interp if isinstance(interp, tuple) else (interp,)
    whole = [decode_images(paths, seeds=seeds, interpolation=c, **kw).data for c in choices]
    picks = [interpolation_choice(s, len(choices)) if len(choices) > 1 else 0 for s in seeds.tolist()]
    return torch.stack([whole[c][k] for k, c in enumerate(picks)])


@pytest.mark.parametrize("config, interpolation", [
    ("rand-m9-mstd0.5-inc1", "random"), ("rand-m7-n3-tweights", "bicubic"),
    pytest.param("original", "bicubic", marks=pytest.mark.slow), pytest.param("v0", "random", marks=pytest.mark.slow),
    ("augmix-m5-w4-d2", "random")])
def test_batch_equals_reference_on_the_crops(paths, config, interpolation):
    size = 56
    t = timm_data.create_transform(size, is_training=True, auto_augment=config, re_prob=0.25, interpolation=interpolation)
    ds = FileListDataset(paths * 2, transform=t, seed=11, require_fused=True)
    got = collate(ds.__getitems__(range(len(ds))))[0]
    assert got.shape == (len(ds), 3, size, size) and got.dtype == torch.float32
    plan = ds.plan
    seeds = FusedPlan.sample_seeds(11, 0, range(len(ds)))
    crops = _uint8_crops(paths * 2, plan, seeds)
    rows = plan.augment.build(seeds)["augment"]
    mean = torch.tensor(plan.op_kwargs["mean"]).view(3, 1, 1)
    std = torch.tensor(plan.op_kwargs["std"]).view(3, 1, 1)
    augmented = erased = 0
    for k, seed in enumerate(seeds.tolist()):
        want = apply_program(crops[k], rows[k])
        augmented += not torch.equal(want, crops[k])
        want = (want.float() / 255 - mean) / std
        keep = torch.ones(size, size, dtype=torch.bool)
        for op in plan.sample_augmentation(seed):
            if op.op == "erase":  # timm's re_mode="pixel": normal values from the op's stream; compared apart
                _, i, j, h, w = (int(x) for x in op.args[:5])
                keep[i:i + h, j:j + w] = False
                erased += 1
        d = ((got[k] - want).abs() * std * 255)[:, keep]
        assert (d > 1.01).float().mean().item() <= 0.005, (k, plan.sample_augmentation(seed))
    assert augmented > len(ds) // 2 and 0 < erased < len(ds)
    again = collate(FileListDataset(paths * 2, transform=t, seed=11, require_fused=True).__getitems__(range(len(ds))))[0]
    assert torch.equal(again, got)  # repeatable per seed


def test_batches_do_not_depend_on_the_thread_count(paths):
    import spdl_torch

    t = timm_data.create_transform(40, is_training=True, auto_augment="rand-m9-mstd0.5-inc1", re_prob=0.25)
    batches = []
    for workers, threads in ((1, 1), (2, 3)):
        before = torch.ops.spdl_torch.get_num_threads()
        torch.ops.spdl_torch.set_num_threads(threads)
        try:
            ds = FileListDataset(paths, transform=t, seed=5, require_fused=True)
            loader = spdl_torch.DataLoader(ds, batch_size=4, num_workers=workers, collate_fn=collate)
            batches.append([b[0] for b in loader])
        finally:
            torch.ops.spdl_torch.set_num_threads(before)
    assert len(batches[0]) == 3
    for a, b in zip(*batches):
        assert torch.equal(a, b)


# ------------------------------------------------------------------------------------- bad arguments

def _with(aa, **attrs):
    for k, v in attrs.items():
        setattr(aa, k, v)
    return aa


def _op_with(aa, **attrs):
    op = aa.ops[0] if hasattr(aa, "ops") else aa.policy[0][0]
    for k, v in attrs.items():
        setattr(op, k, v)
    return aa


@pytest.mark.parametrize("make, match", [
    (lambda: _with(_aa("rand-m9"), num_layers=-1), r"RandAugment \(timm\): num_layers=-1"),
    (lambda: _with(_aa("rand-m9"), ops=[]), r"RandAugment \(timm\): ops=\[\]"),
    (lambda: _with(_aa("rand-m9-n3-tweights"), num_layers=20), r"RandAugment \(timm\): choice_weights="),
    (lambda: _with(_aa("rand-m9-tweights"), choice_weights=np.ones(15)), r"RandAugment \(timm\): choice_weights="),
    (lambda: _op_with(_aa("rand-m9"), prob="0.5"), r"RandAugment \(timm\): AutoContrast.prob='0.5'"),
    (lambda: _op_with(_aa("rand-m9"), magnitude=None), r"AutoContrast.magnitude=None"),
    (lambda: _op_with(_aa("rand-m9"), magnitude=math.inf, magnitude_max=math.inf),
     r"AutoContrast.magnitude=inf is invalid \(finite, or clipped"),
    (lambda: _op_with(_aa("rand-m9"), name="Cutout"), r"RandAugment \(timm\): op name='Cutout'"),
    (lambda: _op_with(_aa("rand-m9"), magnitude_std="1"), r"AutoContrast.magnitude_std='1'"),
    (lambda: _with(_aa("original"), policy=[]), r"AutoAugment \(timm\): policy=\[\]"),
    (lambda: _with(_aa("augmix-m3"), width=1.5), r"AugMixAugment \(timm\): width=1.5"),
    (lambda: _with(_aa("augmix-m3"), alpha=0.0), r"AugMixAugment \(timm\): alpha=0.0"),
    (lambda: _with(_aa("augmix-m3"), depth=1.5), r"AugMixAugment \(timm\): depth=1.5"),
])
def test_bad_arguments_are_value_errors(make, match):
    with pytest.raises(ValueError, match=match):
        timm_sampler(make())


def test_bad_filter_is_a_value_error_and_unfusables_say_why():
    aa = _aa("rand-m9")
    rotate = [op for op in aa.ops if op.name == "Rotate"][0]
    rotate.kwargs["resample"] = Image.Resampling.LANCZOS
    with pytest.raises(ValueError, match=r"Rotate.kwargs\['resample'\]"):
        timm_sampler(aa)
    rotate.kwargs["resample"], rotate.kwargs["fillcolor"] = Image.Resampling.BILINEAR, "red"
    with pytest.raises(LookupError, match="fillcolor='red'"):
        timm_sampler(aa)
    for config, why in [("rand-m9-n3-t3a", "GaussianBlur"), ("3a", "GaussianBlurRand"),
                        ("augmix-m3-b1", "blended=True")]:
        t = timm_data.create_transform(64, is_training=True, auto_augment=config)
        a = analyse(t)
        assert type(a.unfused).__name__ in ("RandAugment", "AutoAugment", "AugMixAugment") and why in a.reason, a.reason
    # a grey fill number is Pillow's (v, 0, 0) for an RGB image
    rotate.kwargs["fillcolor"] = 128
    assert _Op(rotate, "RandAugment").fill == (128.0, 0.0, 0.0)
    assert from_pil(Image.new("RGB", (1, 1), 128)).flatten().tolist() == [128, 0, 0]


# ---------------------------------------------------------- what timm accepts and runs, fused as it runs

def _ops_with(aa, **attrs):
    for op in aa.ops:
        for k, v in attrs.items():
            setattr(op, k, v)
    return aa


@pytest.mark.parametrize("attrs", [
    dict(prob=1.5), dict(prob=-0.5), dict(prob=float("nan")), dict(magnitude=float("nan")), dict(magnitude=math.inf),
    dict(magnitude_std=-1.0), dict(magnitude_std=float("nan")), dict(magnitude_max=-1.0),
    dict(magnitude_std=0.5, hparams={"magnitude_std": 0.0, "translate_const": 20}),
], ids=["prob_above_1", "prob_below_0", "prob_nan", "magnitude_nan", "magnitude_inf", "std_negative", "std_nan",
        "max_negative", "std_attribute_not_hparams"])
def test_op_values_timm_runs_draw_as_timm(attrs, monkeypatch):
    # timm compares and clips them as Python numbers (prob above 1 or NaN: always applied, below 0: never; a
    # NaN magnitude clips to 0, an infinite one to 10; std <= 0 or NaN: no noise; magnitude_max -1: levels of
    # 0), and its __call__ reads magnitude_std / magnitude_max from the op's attributes, not its hparams
    aa = _ops_with(_aa("rand-m9-n1", interpolation="bicubic"), **attrs)
    theirs, _ = timm_draws(aa, n=1500)
    mine, _ = our_draws(aa, monkeypatch, n=1500)
    for key in ("names, applied", "applied args"):
        a, b = _counts(mine, _KEYS[key]), _counts(theirs, _KEYS[key])
        if len(a) == len(b) == 1:  # one outcome (nothing applied): the same one
            assert set(a) == set(b), key
        else:
            assert homogeneity_p(a, b) > 1e-3, key


def test_weights_and_sizes_timm_runs(monkeypatch):
    # float32 choice weights within numpy's tolerance for them (~3.5e-4; float64: ~1.5e-8)
    aa = _aa("rand-m9-n2-tweights", interpolation="bicubic")
    w = np.asarray(aa.choice_weights, dtype=np.float32)
    w[0] += 2e-4
    np.random.choice(len(w), 2, replace=False, p=w)  # numpy takes them
    aa.choice_weights = w
    timm_sampler(aa)
    aa.choice_weights = list(w.astype(np.float64))
    with pytest.raises(ValueError, match="do not sum to 1"):
        np.random.choice(len(w), 2, replace=False, p=aa.choice_weights)  # ... and refuses them as float64
    with pytest.raises(ValueError, match=r"RandAugment \(timm\): choice_weights=.* sum to 1 within 1.5e-08"):
        timm_sampler(aa)
    # no ops and no layers: timm draws nothing
    aa = _with(_aa("rand-m9"), ops=[], num_layers=0)
    img = Image.new("RGB", (W, H), (10, 20, 30))
    assert aa(img) is img and timm_sampler(aa).draw(P.Rng(0), H, W) == []
    # AugMixAugment without chains (width 0, or below): the crop blended with zeros, as timm does it
    aa = _with(_aa("augmix-m3"), width=-1)
    theirs, their_mix = timm_draws(aa, n=1500)
    mine, my_mix = our_draws(aa, monkeypatch, n=1500)
    assert all(s == [] for s in mine) and all(s == [] for s in theirs)
    assert all(w == [] for w, _ in my_mix) and all(w == [] for w, _ in their_mix)
    _assert_same(my_mix, their_mix, {"m": lambda m: min(int(m[1] * 10), 9)})


def test_op_of_another_class_runs_as_written():
    class Halved(AA.AugmentOp):
        def __call__(self, img):
            return img.point(lambda v: v // 2)

    aa = _aa("rand-m9")
    aa.ops[3] = Halved(aa.ops[3].name, aa.ops[3].prob, aa.ops[3].magnitude, aa.ops[3].hparams)
    with pytest.raises(LookupError, match="Halved overrides __call__: runs as written"):
        timm_sampler(aa)
    aa.ops[3] = lambda img: img  # any callable: timm calls it
    with pytest.raises(LookupError, match=r"an op of class function \(not timm's AugmentOp\): runs as written"):
        timm_sampler(aa)
    t = timm_data.create_transform(32, is_training=True, auto_augment="rand-m9")
    t.transforms[2].ops[0] = Halved("Invert", 1.0, 5)
    a = analyse(t)
    assert type(a.unfused).__name__ == "RandAugment" and "Halved overrides __call__: runs as written" in a.reason
