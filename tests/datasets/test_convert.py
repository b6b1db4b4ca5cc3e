"""The datasets users already have, loaded natively by ``spdl_torch.DataLoader`` (``convert_dataset=True``):
torchvision's folder datasets (by method identity) and datasets that define ``spdl_source``, against torchvision's
own path and torch's DataLoader (samples, classes, targets, ``target_transform``, orders, pixels), and the ones
left to run as written, each with its reason in ``repr(loader)``."""

import copy
import pickle
import warnings

import numpy as np
import pytest
import torch
import torch.utils.data as tud
import torchvision
from PIL import Image
from torch.utils.data import default_collate
from torchvision import transforms as T
from torchvision.datasets.folder import default_loader, pil_loader
from torchvision.transforms import v2

import spdl_torch
from spdl_torch.transforms import fuse

from tests._utils.images import pgm, write, write_folder

CLASSES = ("ant", "bee", "cat")
PER_CLASS = 6


def _solid(rng, c, k):
    """A solid colour per file (its index in the tree is ``3 * class + k``): an 8 x 8 resize keeps it exactly,
    so a batch's pixels name the files it holds."""
    n = CLASSES.index(c) * PER_CLASS + k
    return np.full((20 + k, 24, 3), (10 * n, 255 - 10 * n, 7 * n % 256), dtype=np.uint8)


def _file_number(image):
    """The file a solid image of :func:`_solid` came from (its red value / 10)."""
    return int(round(float(image[0].float().mean()) / 10))


@pytest.fixture
def solid_root(tmp_path):
    write_folder(tmp_path / "tree", CLASSES, PER_CLASS, _solid, name="{k}.png")
    return tmp_path / "tree"


def test_sixteen_bit_files_load_as_pil_loader_decodes_them(tmp_path):
    """Pillow opens 16-bit grey PNG / TIFF / PGM in an integer mode and ``convert("RGB")`` clamps them (the native
    decoder keeps the high byte): the converted folder gives torch's pixels, exactly."""
    grey16 = (np.arange(20 * 24, dtype=np.uint16).reshape(20, 24) * 131)
    small = (np.arange(20 * 24, dtype=np.uint16).reshape(20, 24) % 256)
    write(tmp_path / "c" / "a.png", grey16)
    write(tmp_path / "c" / "b.png", small)
    write(tmp_path / "c" / "c.tif", grey16)
    (tmp_path / "c" / "d.pgm").write_bytes(pgm(grey16))
    write(tmp_path / "c" / "e.png", np.full((20, 24, 3), 77, np.uint8))  # 8-bit: native as before
    for transform in (T.Compose([T.CenterCrop((20, 24)), T.PILToTensor()]), v2.Compose([v2.Resize((10, 12)), v2.PILToTensor()])):
        ds = torchvision.datasets.ImageFolder(str(tmp_path), transform=transform, is_valid_file=lambda p: True)
        loader = _loader(ds, batch_size=5, num_workers=2)
        assert loader.resolved_worker_mode == "thread"
        (got, _), = list(loader)
        ref, _ = default_collate([ds[i] for i in range(len(ds))])  # torchvision's pil_loader
        assert [p.rsplit("/", 1)[-1] for p, _ in ds.samples] == ["a.png", "b.png", "c.tif", "d.pgm", "e.png"]
        if isinstance(transform, T.Compose):  # no resampling: identical
            torch.testing.assert_close(got, ref, atol=0, rtol=0)
            assert got[0, 0].flatten().tolist() == np.minimum(grey16, 255).flatten().tolist()
        else:
            assert (got.float() - ref.float()).abs().max() <= 1


@pytest.fixture
def photo_root(tmp_path):
    """Noisy JPEGs of varied sizes, where resampling and rounding show."""
    def make(rng, c, k):
        return rng.integers(0, 256, (40 + 7 * k, 50 + 5 * k, 3), dtype=np.uint8).repeat(2, 0).repeat(2, 1)
    write_folder(tmp_path / "photos", CLASSES, 4, make, name="{k}.jpg", quality=92)
    return tmp_path / "photos"


SMALL = v2.Compose([v2.Resize((8, 8)), v2.PILToTensor()])


def _loader(ds, **kw):
    kw.setdefault("batch_size", 4)
    return spdl_torch.DataLoader(ds, **kw)


def test_image_folder_loads_natively_with_its_own_samples(solid_root):
    ds = torchvision.datasets.ImageFolder(str(solid_root), transform=SMALL, target_transform=lambda t: t * 10)
    before = dict(vars(ds))
    loader = _loader(ds, num_workers=2)
    assert loader.resolved_worker_mode == "thread" and loader.dataset is ds
    text = repr(loader)
    assert "ImageFolder loads natively (18 samples; the transform's input: PIL images)" in text
    assert "fused into decode_images(geometry='resize', height=8, width=8" in text
    got = [(img, t) for x, y in loader for img, t in zip(x, y.tolist())]
    ref = [ds[i] for i in range(len(ds))]  # torchvision's own __getitem__ (Pillow)
    assert [t for _, t in got] == [t for _, t in ref] == [10 * c for _, c in ds.samples]
    for (a, _), (b, _) in zip(got, ref):
        torch.testing.assert_close(a, b, atol=0, rtol=0)
    assert vars(ds) == before and all(vars(ds)[k] is v for k, v in before.items())  # the object is not changed


def test_dataset_folder_and_imagenet_keep_torchvision_lists(solid_root, tmp_path):
    folder = torchvision.datasets.DatasetFolder(str(solid_root), loader=default_loader, extensions=(".png",),
                                                transform=SMALL)
    pil = torchvision.datasets.DatasetFolder(str(solid_root), loader=pil_loader, extensions=(".png",), transform=SMALL)
    # ImageNet: a subclass of ImageFolder keeping __getitem__ and the loader (its meta file made here)
    root = tmp_path / "imagenet"
    root.mkdir()
    (root / "train").symlink_to(solid_root)
    torch.save(({c: (c.title(),) for c in CLASSES}, []), root / "meta.bin")
    imagenet = torchvision.datasets.ImageNet(str(root), split="train", transform=SMALL)
    for ds in (folder, pil, imagenet):
        loader = _loader(ds, num_workers=2)
        assert loader.resolved_worker_mode == "thread", repr(loader)
        images, labels = next(iter(loader))
        assert labels.tolist() == [t for _, t in ds.samples[:4]]
        assert [_file_number(x) for x in images] == [0, 1, 2, 3]
    assert imagenet.classes == [("Ant",), ("Bee",), ("Cat",)] and imagenet.class_to_idx["Ant"] == 0


def test_worker_code_sees_the_users_dataset(solid_root):
    ds = torchvision.datasets.ImageFolder(str(solid_root), transform=SMALL)
    seen = []

    def init(worker_id):
        info = tud.get_worker_info()
        seen.append((type(info.dataset), info.dataset.classes, info.dataset.samples is ds.samples,
                     info.dataset.transform is ds.transform, info.dataset is ds))
        info.dataset.tag = worker_id  # stays on the worker's copy

    list(_loader(ds, num_workers=2, worker_init_fn=init))
    assert sorted(seen, key=str) == [(torchvision.datasets.ImageFolder, list(CLASSES), True, True, False)] * 2
    assert not hasattr(ds, "tag")


def test_worker_init_fn_changing_the_transform_is_obeyed(solid_root):
    ds = torchvision.datasets.ImageFolder(str(solid_root), transform=SMALL)

    def init(worker_id):
        tud.get_worker_info().dataset.transform = v2.Compose([v2.Resize((4, 4)), v2.PILToTensor()])

    shapes = {tuple(x.shape[1:]) for x, _ in _loader(ds, num_workers=2, worker_init_fn=init)}
    assert shapes == {(3, 4, 4)}


def test_subset_concat_and_shuffle_pick_torchs_files(solid_root):
    ds = torchvision.datasets.ImageFolder(str(solid_root), transform=SMALL)
    subset = tud.Subset(ds, [17, 3, 5, 9, 0, 11, 2])
    concat = tud.ConcatDataset([subset, ds])
    for data in (subset, concat):
        for shuffle in (False, True):
            theirs = tud.DataLoader(data, batch_size=4, shuffle=shuffle, generator=torch.Generator().manual_seed(5))
            ours = _loader(data, num_workers=2, shuffle=shuffle, generator=torch.Generator().manual_seed(5))
            assert "ImageFolder loads natively" in repr(ours)
            a = [(_file_number(x), int(t)) for xs, ts in theirs for x, t in zip(xs, ts)]
            b = [(_file_number(x), int(t)) for xs, ts in ours for x, t in zip(xs, ts)]
            assert a == b and len(a) == len(data)


def test_distributed_shard_of_a_torchvision_dataset_loads_natively(solid_root):
    """A rank's DistributedShard (a Subset) is looked through: each rank's epochs pick the files torch's
    DistributedSampler picks, decoded natively."""
    from spdl_torch.distributed import DistributedShard

    ds = torchvision.datasets.ImageFolder(str(solid_root), transform=SMALL)
    for rank in range(3):
        shard = DistributedShard(ds, shuffle=True, seed=3, rank=rank, world_size=3)
        ours = _loader(shard, num_workers=2)
        assert ours.resolved_worker_mode == "thread" and "ImageFolder loads natively" in repr(ours)
        for epoch in range(2):
            sampler = tud.distributed.DistributedSampler(ds, num_replicas=3, rank=rank, shuffle=True, seed=3)
            sampler.set_epoch(epoch)
            theirs = tud.DataLoader(ds, batch_size=4, sampler=sampler)
            a = [(_file_number(x), int(t)) for xs, ts in theirs for x, t in zip(xs, ts)]
            b = [(_file_number(x), int(t)) for xs, ts in ours for x, t in zip(xs, ts)]
            assert a == b and len(b) == len(shard)


def test_the_patched_name_converts_too(solid_root, monkeypatch):
    monkeypatch.setattr(tud, "DataLoader", spdl_torch.DataLoader)
    ds = torchvision.datasets.ImageFolder(str(solid_root), transform=SMALL)
    loader = tud.DataLoader(ds, batch_size=4, num_workers=2)
    assert type(loader) is spdl_torch.DataLoader and loader.resolved_worker_mode == "thread"
    assert "ImageFolder loads natively" in repr(loader)


class _OwnGetitem(torchvision.datasets.ImageFolder):
    calls = 0

    def __getitem__(self, index):
        type(self).calls += 1
        return super().__getitem__(index)


class _OwnLen(torchvision.datasets.ImageFolder):
    def __len__(self):
        return 4


class _OwnLoader(torchvision.datasets.ImageFolder):
    def __init__(self, root, transform):
        super().__init__(root, transform=transform, loader=lambda p: Image.open(p).convert("RGB"))


def _loaded_by_pillow(path):
    return pil_loader(path)


@pytest.mark.parametrize(("make", "why"), [
    (lambda r: _OwnGetitem(r, transform=SMALL), "_OwnGetitem overrides __getitem__: runs as written"),
    (lambda r: _OwnLen(r, transform=SMALL), "_OwnLen overrides __len__: runs as written"),
    (lambda r: _OwnLoader(r, SMALL), "a loader of its own (_OwnLoader.__init__.<locals>.<lambda>): runs as written"),
    (lambda r: torchvision.datasets.ImageFolder(r, transform=SMALL, loader=_loaded_by_pillow),
     "a loader of its own (_loaded_by_pillow): runs as written"),
    (lambda r: torchvision.datasets.ImageFolder(r), "no transform: its samples are PIL images"),
    (lambda r: torchvision.datasets.ImageFolder(r, transform=v2.Compose([v2.PILToTensor(), v2.ElasticTransform()])),
     "the transform does not fuse (ElasticTransform("),
])
def test_what_runs_as_written_says_why(solid_root, make, why):
    ds = make(str(solid_root))
    loader = _loader(ds, num_workers=2)
    assert loader.resolved_worker_mode == "process"
    assert f"{type(ds).__name__} not converted: {why}" in repr(loader)


def test_a_subclass_with_its_own_getitem_runs_its_code(solid_root):
    ds = _OwnGetitem(str(solid_root), transform=SMALL)
    _OwnGetitem.calls = 0
    n = sum(len(y) for _, y in _loader(ds, num_workers=0))
    assert n == len(ds) and _OwnGetitem.calls == len(ds)


def test_convert_dataset_false_runs_torchvisions_code(solid_root):
    ds = torchvision.datasets.ImageFolder(str(solid_root), transform=SMALL)
    loader = _loader(ds, num_workers=2, convert_dataset=False)
    assert loader.resolved_worker_mode == "process" and "natively" not in repr(loader)
    clone = copy.deepcopy(loader)
    assert clone.convert_dataset is False and clone.resolved_worker_mode == "process" and "natively" not in repr(clone)
    main = _loader(ds, num_workers=0, convert_dataset=False)
    assert "natively" not in repr(main) and len(list(main)) == 5
    loader = _loader(ds, num_workers=2, worker_mode="process")
    assert "ImageFolder not converted: worker_mode='process' runs torch's own fetch" in repr(loader)


def test_target_transform_and_remainder_get_what_torchvision_gives(photo_root):
    seen = []

    def record(image):
        seen.append(type(image))
        return image

    tf = v2.Compose([v2.Resize(40), v2.CenterCrop(36), v2.Lambda(record), v2.PILToTensor(),
                     v2.ToDtype(torch.float32, scale=True), v2.Normalize([0.5] * 3, [0.25] * 3)])
    ds = torchvision.datasets.ImageFolder(str(photo_root), transform=tf, target_transform=lambda t: -t)
    loader = _loader(ds, num_workers=2)
    assert "then per sample in Python (on PIL images): [Lambda(" in repr(loader)
    got = [(x, int(t)) for xs, ts in loader for x, t in zip(xs, ts)]
    assert set(seen) == {Image.Image}
    ref = [ds[i] for i in range(len(ds))]
    assert [t for _, t in got] == [t for _, t in ref] == [-c for _, c in ds.samples]
    diff = torch.stack([a for a, _ in got]) - torch.stack([b for b, _ in ref])
    assert diff.abs().mean() < 0.01 and diff.abs().max() < 0.1  # Pillow's resize against the fused one


def _halve(image):
    return image // 2  # a per-sample Python remainder, picklable


def test_hybrid_runs_the_remainder_of_a_converted_dataset_in_processes(solid_root):
    tf = v2.Compose([v2.Resize((8, 8)), v2.PILToTensor(), v2.Lambda(_halve)])
    ds = torchvision.datasets.ImageFolder(str(solid_root), transform=tf)
    loader = _loader(ds, num_workers=2, worker_mode="hybrid")
    assert loader.resolved_worker_mode == "hybrid" and "ImageFolder loads natively" in repr(loader)
    got = torch.cat([x for x, _ in loader])
    torch.testing.assert_close(got, torch.stack([ds[i][0] for i in range(len(ds))]), atol=0, rtol=0)


def test_v2_of_a_pil_image_follows_pillow(solid_root):
    """torchvision gives v2 transforms a PIL image: the fuser is told so (a nearest resize is Pillow's rule, a
    solarize above 255 leaves the image as Pillow does instead of raising as the tensor kernel)."""
    nearest = v2.Compose([v2.Resize((30, 30), interpolation=v2.InterpolationMode.NEAREST), v2.PILToTensor()])
    assert fuse(nearest, input="pil").op_kwargs["interpolation"] == "nearest_exact"
    assert fuse(nearest).op_kwargs["interpolation"] == "nearest"
    tf = v2.Compose([v2.Resize((8, 8)), v2.RandomSolarize(300, p=1), v2.PILToTensor()])
    with pytest.raises(ValueError, match="threshold"):
        fuse(tf)  # on a tensor, torchvision's kernel refuses it
    ds = torchvision.datasets.ImageFolder(str(solid_root), transform=tf)
    x, _ = next(iter(_loader(ds, num_workers=0)))
    torch.testing.assert_close(x, torch.stack([ds[i][0] for i in range(4)]), atol=0, rtol=0)
    with pytest.raises(ValueError, match="input should be None, 'pil' or 'tensor'"):
        fuse(tf, input="PIL")


class Preset:
    """The shape of torchvision's reference ``ClassificationPresetTrain`` / ``Eval``: a plain wrapper."""

    def __init__(self, size):
        self.transforms = T.Compose([T.Resize(size), T.CenterCrop(size), T.PILToTensor()])

    def __call__(self, img):
        return self.transforms(img)


class Wrapper(Preset):
    def __call__(self, img):
        return self.transforms(img).flip(-1)


def test_a_preset_wrapper_fuses_what_it_holds(photo_root):
    plan = fuse(Preset(32), input="pil")
    assert plan is not None and plan.rest is None and plan.op_kwargs["resize_shorter"] == 32
    assert fuse(Wrapper(32), input="pil") is None  # another __call__: its own code
    ds = torchvision.datasets.ImageFolder(str(photo_root), transform=Preset(32))
    assert "ImageFolder loads natively" in repr(_loader(ds, num_workers=2))


def test_on_error_skip_with_a_corrupt_file(solid_root):
    bad = solid_root / "bee" / "2.png"
    bad.write_bytes(b"not an image")
    ds = torchvision.datasets.ImageFolder(str(solid_root), transform=SMALL)
    loader = _loader(ds, num_workers=2, on_error="skip")
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        files = [_file_number(x) for xs, _ in loader for x in xs]
    bad_index = [p for p, _ in ds.samples].index(str(bad))
    assert files == [n for n in range(18) if n != bad_index]
    assert [i for i, _ in loader.skipped_samples] == [bad_index] and "DecodeError" in loader.skipped_samples[0][1]
    assert str(bad) in loader.skipped_samples[0][1]


def test_resume_persistent_workers_and_copies(photo_root):
    tf = v2.Compose([v2.RandomResizedCrop(24), v2.RandomHorizontalFlip(), v2.PILToTensor()])
    ds = torchvision.datasets.ImageFolder(str(photo_root), transform=tf)
    loader = _loader(ds, num_workers=2, shuffle=True, persistent_workers=True,
                     generator=torch.Generator().manual_seed(3))
    full = [x for x, _ in loader]
    again = [x for x, _ in loader]  # the next epoch: other crops
    assert not all(torch.equal(a, b) for a, b in zip(full, again))
    fresh = _loader(ds, num_workers=2, shuffle=True, persistent_workers=True, generator=torch.Generator().manual_seed(3))
    it = iter(fresh)
    first = next(it)[0]
    state = fresh.state_dict()
    resumed = _loader(ds, num_workers=2, shuffle=True, generator=torch.Generator().manual_seed(3))
    resumed.load_state_dict(state)
    rest = [x for x, _ in resumed]
    assert torch.equal(first, full[0]) and all(torch.equal(a, b) for a, b in zip(rest, full[1:]))
    assert len(rest) == len(full) - 1
    for clone in (copy.deepcopy(fresh), pickle.loads(pickle.dumps(fresh))):
        assert "ImageFolder loads natively" in repr(clone)
        assert all(torch.equal(a, b) for a, b in zip([x for x, _ in clone], full[1:]))


def _mixup_collate(num_classes):
    mixup_cutmix = v2.RandomChoice([v2.MixUp(alpha=0.2, num_classes=num_classes),
                                    v2.CutMix(alpha=1.0, num_classes=num_classes)])

    def collate_fn(batch):
        return mixup_cutmix(*default_collate(batch))

    return collate_fn


def test_mixup_cutmix_collate_gives_torchs_tensors(solid_root):
    """torchvision's reference train.py recipe: the same tensors as torch's DataLoader for the same RNG state
    (in the calling thread; on worker threads, ``worker_rng="per_worker"``: the slow test below)."""
    ds = torchvision.datasets.ImageFolder(str(solid_root), transform=T.Compose([
        T.Resize((8, 8)), T.PILToTensor(), T.ConvertImageDtype(torch.float), T.Normalize([0.5] * 3, [0.2] * 3)]))
    collate = _mixup_collate(len(ds.classes))
    out = []
    for make in (tud.DataLoader, spdl_torch.DataLoader):
        torch.manual_seed(0)
        out.append(list(make(ds, batch_size=5, shuffle=True, collate_fn=collate)))
    assert len(out[0]) == len(out[1]) == 4
    for (xa, ya), (xb, yb) in zip(*out):
        torch.testing.assert_close(xb, xa, atol=1e-6, rtol=0)
        torch.testing.assert_close(yb, ya, atol=0, rtol=0)


@pytest.mark.slow
def test_mixup_cutmix_on_threads_gives_torchs_processes_tensors(solid_root):
    ds = torchvision.datasets.ImageFolder(str(solid_root), transform=T.Compose([
        T.Resize((8, 8)), T.PILToTensor(), T.ConvertImageDtype(torch.float)]))
    collate = _mixup_collate(len(ds.classes))
    kw = dict(batch_size=3, shuffle=True, num_workers=2, collate_fn=collate)
    theirs = list(tud.DataLoader(ds, generator=torch.Generator().manual_seed(1), **kw))
    loader = spdl_torch.DataLoader(ds, generator=torch.Generator().manual_seed(1), worker_rng="per_worker", **kw)
    assert loader.resolved_worker_mode == "thread"
    for (xa, ya), (xb, yb) in zip(theirs, list(loader)):
        torch.testing.assert_close(xb, xa, atol=1e-6, rtol=0)
        torch.testing.assert_close(yb, ya, atol=0, rtol=0)


def test_default_collate_returns_the_fused_batch(solid_root):
    ds = torchvision.datasets.ImageFolder(str(solid_root), transform=SMALL)
    seen = []

    def collate(batch):
        images, labels = default_collate(batch)
        seen.append(images._base is None and batch[0][0]._base is images)
        return images, labels

    batches = list(_loader(ds, num_workers=2, collate_fn=collate))
    assert seen and all(seen)
    plain = default_collate([(torch.zeros(2), 0), (torch.ones(2), 1)])  # anything else is stacked as before
    assert plain[0].tolist() == [[0, 0], [1, 1]]
    assert [_file_number(x) for xs, _ in batches for x in xs] == list(range(18))


class Listed(tud.Dataset):
    """The protocol: a dataset of the user's own keeps its class and loads natively."""

    def __init__(self, sources, labels, transform):
        self.sources, self.labels, self.transform = sources, labels, transform

    def __len__(self):
        return len(self.sources)

    def __getitem__(self, index):  # what torch's DataLoader runs
        src = self.sources[index]
        data = torchvision.io.read_file(str(src)) if isinstance(src, str) else torch.frombuffer(bytearray(src), dtype=torch.uint8)
        return self.transform(torchvision.io.decode_image(data)), self.labels[index]

    def spdl_source(self, index):
        return self.sources[index], self.labels[index]


def test_spdl_source_protocol(solid_root):
    paths = sorted(str(p) for p in solid_root.rglob("*.png"))
    sources = [p if i % 2 else open(p, "rb").read() for i, p in enumerate(paths)]
    ds = Listed(sources, list(range(100, 100 + len(paths))), v2.Compose([v2.Resize((8, 8)), v2.ToDtype(torch.float32, scale=True)]))
    loader = _loader(ds, num_workers=2)
    assert loader.resolved_worker_mode == "thread"
    assert "Listed loads natively (18 samples; the transform's input: tensors)" in repr(loader)
    got = [(x, int(t)) for xs, ts in loader for x, t in zip(xs, ts)]
    ref = [ds[i] for i in range(len(ds))]
    assert [t for _, t in got] == [t for _, t in ref]
    torch.testing.assert_close(torch.stack([x for x, _ in got]), torch.stack([x for x, _ in ref]), atol=1e-6, rtol=0)
    ds.sources[0] = 3.5
    with pytest.raises(TypeError, match=r"Listed.spdl_source\(0\): expected a path, bytes or a 1-D uint8 tensor as the "
                                        "source, got float"):
        next(iter(_loader(ds, num_workers=0)))
    ds.sources[0] = torch.zeros(2, 3, dtype=torch.uint8)
    with pytest.raises(TypeError, match=r"Listed.spdl_source\(0\): expected a path, bytes or a 1-D uint8 tensor, got a "
                                        r"torch.uint8 tensor of shape \(2, 3\)"):
        next(iter(_loader(ds, num_workers=0)))
    assert "Listed not converted: spdl_source without a transform" in repr(_loader(Listed(paths, paths, None)))


@pytest.mark.parametrize("answer, what", [(lambda p: p, "str"), (lambda p: (p,), "a tuple of 1"),
                                          (lambda p: [p, 0, 1], "a list of 3")])
def test_spdl_source_that_is_not_a_pair_names_the_sample(solid_root, answer, what):
    paths = sorted(str(p) for p in solid_root.rglob("*.png"))

    class Unpaired(Listed):
        def spdl_source(self, index):
            return answer(self.sources[index])

    ds = Unpaired(paths, list(range(len(paths))), v2.Compose([v2.Resize((8, 8)), v2.ToDtype(torch.float32, scale=True)]))
    with pytest.raises(TypeError, match=rf"Unpaired.spdl_source\(0\): expected a \(source, target\) pair, got {what}\n"):
        next(iter(_loader(ds, num_workers=0)))


def test_a_plain_dataset_says_how_to_load_natively():
    class Plain(tud.Dataset):
        def __len__(self):
            return 2

        def __getitem__(self, i):
            return torch.tensor(i)

    text = repr(_loader(Plain(), num_workers=2))
    assert "Plain not converted: a dataset of its own (Plain): runs as written (define spdl_source(index)" in text
