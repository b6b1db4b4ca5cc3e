"""``HFImageDataset`` over Hugging Face ``datasets`` built here (no hub access): an ``imagefolder`` load, Parquet
with the image bytes and with paths, an in-memory dataset, against what the ``datasets`` object itself gives
(its decoded PIL image through the same transform, its labels, its row order after ``select`` / ``shuffle``)."""

import io
import pickle
import warnings

import numpy as np
import pytest
import torch
from PIL import Image
from torchvision.transforms import v2

import spdl_torch
from spdl_torch.datasets import HFImageDataset

from tests._utils.images import encode, write_folder

datasets = pytest.importorskip("datasets")

CLASSES = ("dog", "eel", "fox")
TF = v2.Compose([v2.Resize(24), v2.CenterCrop(20), v2.PILToTensor(), v2.ToDtype(torch.float32, scale=True)])


@pytest.fixture(autouse=True)
def _offline(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setattr(datasets.config, "HF_DATASETS_OFFLINE", True, raising=False)
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf_cache"))


def _make(rng, c, k):
    return rng.integers(0, 256, (30 + 3 * k, 34, 3), dtype=np.uint8).repeat(2, 0).repeat(2, 1)


@pytest.fixture
def folder(tmp_path):
    write_folder(tmp_path / "folder", CLASSES, 4, _make, name="{k}.png")
    return tmp_path / "folder"


def _encoded(folder):
    paths = sorted(folder.rglob("*.png"))
    return paths, [p.read_bytes() for p in paths], [CLASSES.index(p.parent.name) for p in paths]


def _features():
    return datasets.Features({"image": datasets.Image(), "label": datasets.ClassLabel(names=list(CLASSES))})


def _reference(ds, indices):
    """What ``datasets`` gives: its decoded image through the same transform, and the label."""
    return [(TF(ds[i]["image"].convert("RGB")), ds[i]["label"]) for i in indices]


def _check(hf, ds):
    ours = [hf[i] for i in range(len(hf))]
    ref = _reference(ds, range(len(ds)))
    assert [t for _, t in ours] == [t for _, t in ref]
    diff = (torch.stack([x for x, _ in ours]) - torch.stack([x for x, _ in ref])).abs()
    assert diff.mean() < 0.01 and diff.max() < 0.1  # the fused resize against Pillow's


def test_in_memory_bytes_and_paths(folder):
    paths, blobs, labels = _encoded(folder)
    rows = [{"bytes": b, "path": None} if i % 2 else {"bytes": None, "path": str(p)}
            for i, (p, b) in enumerate(zip(paths, blobs))]
    ds = datasets.Dataset.from_dict({"image": rows, "label": labels}, features=_features())
    hf = HFImageDataset(ds, transform=TF)
    assert hf.classes == list(CLASSES) and hf.targets == labels and len(hf) == 12
    _check(hf, ds)
    loader = spdl_torch.DataLoader(hf, batch_size=5, num_workers=2)
    assert loader.resolved_worker_mode == "thread"
    images, targets = next(iter(loader))
    assert images.shape == (5, 3, 20, 20) and targets.tolist() == labels[:5]


def test_imagefolder_load(folder, tmp_path):
    ds = datasets.load_dataset("imagefolder", data_dir=str(folder), split="train", cache_dir=str(tmp_path / "c"))
    hf = HFImageDataset(ds, transform=TF)
    assert hf.classes == list(CLASSES)
    _check(hf, ds)
    part = ds.shuffle(seed=3).select(range(7))  # an indices mapping
    _check(HFImageDataset(part, transform=TF), part)


@pytest.mark.parametrize("kind", ["bytes", "paths"])
def test_parquet(folder, tmp_path, kind):
    paths, blobs, labels = _encoded(folder)
    rows = [{"bytes": b, "path": p.name} for p, b in zip(paths, blobs)] if kind == "bytes" else \
        [{"bytes": None, "path": str(p)} for p in paths]
    datasets.Dataset.from_dict({"image": rows, "label": labels}, features=_features()).to_parquet(tmp_path / "d.parquet")
    ds = datasets.load_dataset("parquet", data_files=str(tmp_path / "d.parquet"), split="train",
                               cache_dir=str(tmp_path / "c"))
    column = ds.data.column("image").chunk(0).field("bytes")
    assert column.null_count == (0 if kind == "bytes" else len(paths))
    hf = HFImageDataset(ds, transform=TF)
    _check(hf, ds)
    if kind == "bytes":  # the rows are views of the Arrow buffer, not copies
        data, _ = hf._row(0)
        assert data.data_ptr() == column.buffers()[2].address + int(np.frombuffer(column.buffers()[1], np.int32)[0])


def test_a_corrupt_row_follows_on_error(folder):
    paths, blobs, labels = _encoded(folder)
    blobs[5] = b"\x89PNG\r\n\x1a\n broken"
    ds = datasets.Dataset.from_dict({"image": [{"bytes": b, "path": None} for b in blobs], "label": labels},
                                    features=datasets.Features({"image": datasets.Image(decode=False),
                                                                "label": datasets.Value("int64")}))
    hf = HFImageDataset(ds, transform=TF)
    with pytest.raises(spdl_torch.DecodeError, match=r"image\[5\]"):
        list(spdl_torch.DataLoader(hf, batch_size=4, num_workers=2))
    loader = spdl_torch.DataLoader(hf, batch_size=4, num_workers=2, on_error="skip")
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        got = [t for _, ts in loader for t in ts.tolist()]
    assert got == [t for i, t in enumerate(labels) if i != 5]
    assert [i for i, _ in loader.skipped_samples] == [5] and "image[5]" in loader.skipped_samples[0][1]


def test_unfused_transform_gets_pil_images_and_pickles(folder):
    paths, blobs, labels = _encoded(folder)
    ds = datasets.Dataset.from_dict({"image": [{"bytes": b, "path": None} for b in blobs], "label": labels},
                                    features=_features())
    seen = []
    hf = HFImageDataset(ds, transform=lambda im: seen.append(type(im)) or v2.functional.pil_to_tensor(im),
                        warn_unfused=False)
    assert hf.plan is None and torch.equal(hf[0][0], torch.from_numpy(np.array(Image.open(io.BytesIO(blobs[0])))).permute(2, 0, 1))
    assert seen == [Image.Image]
    plain = HFImageDataset(ds, label_column=None)
    assert plain[3][1] == 3 and plain[3][0].dtype == torch.uint8 and plain.classes is None
    clone = pickle.loads(pickle.dumps(HFImageDataset(ds, transform=TF)))
    torch.testing.assert_close(clone[2][0], HFImageDataset(ds, transform=TF)[2][0])


def test_errors(folder):
    paths, blobs, labels = _encoded(folder)
    ds = datasets.Dataset.from_dict({"image": [{"bytes": b, "path": None} for b in blobs], "label": labels,
                                     "name": [p.name for p in paths]}, features=datasets.Features(
        {"image": datasets.Image(), "label": datasets.Value("int64"), "name": datasets.Value("string")}))
    with pytest.raises(TypeError, match=r"got a DatasetDict with the splits \['train'\]"):
        HFImageDataset(datasets.DatasetDict({"train": ds}))
    with pytest.raises(TypeError, match="expected a datasets.Dataset"):
        HFImageDataset([1, 2])
    with pytest.raises(ValueError, match="image_column='img' is not a column"):
        HFImageDataset(ds, image_column="img")
    with pytest.raises(ValueError, match="image_column='name' holds Value"):
        HFImageDataset(ds, image_column="name")
    with pytest.raises(ValueError, match="label_column='labels' is not a column"):
        HFImageDataset(ds, label_column="labels")
    with pytest.raises(IndexError, match="index 12 is out of range for 12 rows"):
        HFImageDataset(ds, transform=TF)[12]
    with pytest.raises(OSError, match=r"image\[0\]: its \d+ bytes exceed the limit of 10 bytes"):
        HFImageDataset(ds, transform=TF, max_bytes=10)[0]


def test_an_image_column_of_another_mode_is_refused(folder):
    """The images are decoded to RGB: a column declared ``Image(mode="L")`` (or RGBA) is refused, not silently
    given three channels; ``Image(mode="RGB")`` is what the dataset gives anyway."""
    _, blobs, labels = _encoded(folder)
    for mode in ("L", "RGBA", "I;16"):
        ds = datasets.Dataset.from_dict({"image": [{"bytes": b, "path": None} for b in blobs], "label": labels},
                                        features=datasets.Features({"image": datasets.Image(mode=mode),
                                                                    "label": datasets.Value("int64")}))
        with pytest.raises(ValueError, match=rf"image_column='image' is Image\(mode='{mode}'\), but the images "
                                             r"are decoded to RGB.*cast_column\('image', datasets.Image\(\)\)"):
            HFImageDataset(ds, transform=TF)
    rgb = datasets.Dataset.from_dict({"image": [{"bytes": b, "path": None} for b in blobs], "label": labels},
                                     features=datasets.Features({"image": datasets.Image(mode="RGB"),
                                                                 "label": datasets.Value("int64")}))
    _check(HFImageDataset(rgb, transform=TF), rgb)


def test_sixteen_bit_grey_rows_are_decoded_as_image_mode_rgb_decodes_them():
    """Pillow opens a 16-bit grey PNG as "I;16" and ``Image(mode="RGB")`` (``convert("RGB")``) clamps it to 255;
    the rows give those values (the native decoder alone would keep the high byte)."""
    rng = np.random.default_rng(3)
    blobs = []
    for k in range(4):
        grey = (rng.integers(0, 600, (44, 40 + k))).astype(np.uint16)  # about half of the values above 255
        blobs.append(encode(grey, "PNG"))
    ds = datasets.Dataset.from_dict({"image": [{"bytes": b, "path": None} for b in blobs], "label": [0, 1, 2, 0]},
                                    features=datasets.Features({"image": datasets.Image(),
                                                                "label": datasets.Value("int64")}))
    assert ds[0]["image"].mode == "I;16"
    _check(HFImageDataset(ds, transform=TF), ds)  # against ds[i]["image"].convert("RGB")
    exact = HFImageDataset(ds, transform=v2.Compose([v2.CenterCrop(40), v2.PILToTensor()]))
    for i in range(len(ds)):
        expected = torch.from_numpy(np.asarray(v2.CenterCrop(40)(ds[i]["image"].convert("RGB")))).permute(2, 0, 1)
        assert torch.equal(exact[i][0], expected)


def test_rows_without_images_and_columns_without_binary_bytes():
    ds = datasets.Dataset.from_dict({"image": [None], "label": [0]},
                                    features=datasets.Features({"image": datasets.Image(), "label": datasets.Value("int64")}))
    assert ds[0]["image"] is None  # what datasets itself gives such a row
    with pytest.raises(ValueError, match=r"image\[0\] has neither bytes nor a path"):
        HFImageDataset(ds, warn_unfused=False)[0]
    import pyarrow as pa

    text = pa.struct([("bytes", pa.string()), ("path", pa.string())])
    table = pa.table({"image": pa.array([{"bytes": "abc", "path": "x.png"}], type=text), "label": [0]})
    with pytest.raises(ValueError, match="image_column='image' holds its bytes as string, not binary"):
        HFImageDataset(datasets.Dataset(table))


def test_a_corrupt_row_without_a_fused_transform_names_the_row(folder):
    paths, blobs, labels = _encoded(folder)
    blobs[2] = b"\xff\xd8\xff broken"
    ds = datasets.Dataset.from_dict({"image": [{"bytes": b, "path": None} for b in blobs], "label": labels},
                                    features=_features())
    hf = HFImageDataset(ds, transform=v2.functional.pil_to_tensor, warn_unfused=False)
    assert hf.plan is None
    with pytest.raises(spdl_torch.DecodeError, match=r"^image\[2\]: "):
        hf[2]
    assert torch.equal(hf[1][0], v2.functional.pil_to_tensor(ds[1]["image"].convert("RGB")))


def test_without_the_datasets_package(monkeypatch):
    monkeypatch.setitem(__import__("sys").modules, "datasets", None)  # import datasets then raises ImportError
    with pytest.raises(ImportError, match=r"HFImageDataset needs Hugging Face's datasets: pip install 'spdl_torch\[hf\]'"):
        HFImageDataset(object())
