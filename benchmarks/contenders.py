"""The contenders of ``python -m benchmarks.run``: one factory per loader, all over the same files in the
same order (no shuffling), with the same transform, in batches of ``batch_size`` (last batch partial).

Every loader yields ``(images, labels)`` with ``images`` a contiguous float32 ``Tensor[B, 3, 224, 224]``
(ImageNet-normalized RGB) and ``labels`` an int64 ``Tensor[B]``.

Workload modes:

* ``eval``: resize the shorter side to 256 (antialiased bilinear), centre crop 224, scale to [0, 1],
  normalize.
* ``train``: RandomResizedCrop 224 (scale (0.08, 1), ratio (3/4, 4/3), antialiased bilinear), horizontal
  flip with p = 0.5, scale to [0, 1], normalize.

Contenders:

1. ``torch_pil``: ``torch.utils.data.DataLoader`` (worker processes) + Pillow (``Image.open(...).convert
   ("RGB")``, what ``torchvision.datasets.ImageFolder`` does) + classic ``torchvision.transforms``
   (``Resize/CenterCrop`` or ``RandomResizedCrop/RandomHorizontalFlip``, ``ToTensor``, ``Normalize``).
2. ``torch_tvio``: ``torch.utils.data.DataLoader`` (worker processes) + ``torchvision.io.decode_jpeg`` +
   ``torchvision.transforms.v2`` on tensors.
3. ``spdl08``: spdl 0.8 from PyPI: ``spdl.pipeline`` with one stage (concurrency = workers) that loads a
   batch with FFmpeg (``spdl.io.load_image_batch`` and a ``filter_desc``), then scales and normalizes it
   with torch. FFmpeg's ``scale`` filter with ``flags=bilinear`` is antialiased when downscaling (its
   filter support grows with the scale factor), like torchvision's ``antialias=True``; spdl decodes every
   JPEG at full size (FFmpeg's mjpeg decoder, no DCT-domain scaling). For ``train`` each image gets its
   own filter graph: ``crop`` with a random area fraction / aspect ratio / position drawn in Python, then
   ``scale=224:224`` and, with p = 0.5, ``hflip``. The difference from RandomResizedCrop: a box that does
   not fit is clamped to the image (``min(iw, ...)``) instead of being redrawn (up to 10 tries) -- the same
   kind and amount of work per image, a slightly different distribution of boxes.
4. ``spdl_torch``: ``spdl_torch.DataLoader`` (worker threads) over ``spdl_torch.datasets.FileListDataset``
   with the torchvision v2 transform, which ``spdl_torch.transforms.fuse`` maps onto one
   ``decode_images`` call per batch; ``collate_fn=spdl_torch.datasets.collate`` (no copy).
4'. ``spdl_torch_v1``: the same as 4 with the classic ``torchvision.transforms`` recipe of contender 1
   (``Resize/CenterCrop`` or ``RandomResizedCrop/RandomHorizontalFlip``, ``ToTensor``, ``Normalize``), which
   ``fuse`` maps onto the same op call: what a user switching from 1 gets without touching the transform.
4''. ``spdl_torch_crop``: the same as 4 with ``Resize(256), RandomCrop(224), RandomHorizontalFlip()``
   (v2; fused as ``geometry="random_crop"``) in every workload: a recipe that fused nothing before.
4j / 2j. ``spdl_torch_jitter`` and ``torch_tvio_jitter``: the workload's v2 recipe with ``ColorJitter(0.4,
   0.4, 0.4)`` after the flip, on 4 (fused prefix, ColorJitter + ToDtype + Normalize per sample in the
   worker threads) and on 2 (everything per sample in worker processes).
5. ``bound``: no loader: the same ``decode_images`` call (same op arguments as 4, same files read with
   ``read_file``) on whole batches in a loop in one thread, with the native pool set to one thread;
   ``images/s x cores`` is the decode bound for ``cores`` threads with perfect scaling.
6-7. The peers of ``benchmarks/peers.py``: NVIDIA DALI's CPU pipeline and torchcodec + v2.
R. The "recipes" workloads (training recipes with augmentation, ``benchmarks/recipes.py``) have their own three
   contenders: torch DataLoader + torchvision ImageFolder, spdl_torch's ImageFolder + DataLoader, DALI CPU +
   ``auto_aug``; they run those workloads only, and the others run none of the recipe workloads.
"""

from __future__ import annotations

import math
import os
import random
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import torch

from benchmarks.workloads import MEAN, RATIO, RESIZE, SCALE, SIZE, STD, classic_transform, v2_transform

CONTENDERS = ("torch_pil", "torch_tvio", "spdl08", "spdl_torch", "spdl_torch_v1", "spdl_torch_crop",
              "spdl_torch_jitter", "torch_tvio_jitter", "bound", "dali_cpu", "torch_codec",
              "torch_recipe", "spdl_torch_recipe", "dali_recipe")
LABELS = {
    "torch_pil": "1 torch DataLoader + Pillow + transforms",
    "torch_tvio": "2 torch DataLoader + decode_jpeg + v2",
    "spdl08": "3 spdl 0.8 (pipeline + load_image_batch)",
    "spdl_torch": "4 spdl_torch.DataLoader + fused dataset",
    "spdl_torch_v1": "4' the same, classic (v1) transforms",
    "spdl_torch_crop": "4'' the same, Resize(256) + RandomCrop(224) + flip",
    "spdl_torch_jitter": "4j 4 + ColorJitter per sample",
    "torch_tvio_jitter": "2j 2 + ColorJitter",
    "dali_cpu": "6 NVIDIA DALI, CPU pipeline",
    "torch_codec": "7 torch DataLoader + torchcodec + v2",
    "bound": "5 bound: decode_images, 1 thread x cores",
    "torch_recipe": "R1 torch DataLoader + torchvision ImageFolder + recipe",
    "spdl_torch_recipe": "R2 spdl_torch ImageFolder + DataLoader, same recipe",
    "dali_recipe": "R3 NVIDIA DALI CPU + auto_aug",
}
SHORT = {"torch_pil": "torch+PIL", "torch_tvio": "torch+tvio", "spdl08": "spdl 0.8", "spdl_torch": "spdl_torch",
         "spdl_torch_v1": "spdl_torch v1", "spdl_torch_crop": "spdl_t crop", "spdl_torch_jitter": "spdl_t jitter",
         "torch_tvio_jitter": "tvio jitter", "bound": "bound", "dali_cpu": "DALI CPU", "torch_codec": "torchcodec",
         "torch_recipe": "torch recipe", "spdl_torch_recipe": "spdl_t recipe", "dali_recipe": "DALI auto_aug"}


def spdl_available() -> bool:
    try:
        import spdl.io  # noqa: F401
        import spdl.pipeline  # noqa: F401
    except Exception:  # noqa: BLE001 - any import failure means "not available"
        return False
    return True


def needs_spdl(contender: str) -> bool:
    return contender == "spdl08"


def is_recipe(name: str) -> bool:
    """Whether a contender or a workload mode belongs to the recipes (``benchmarks/recipes.py``)."""
    from benchmarks.recipes import RECIPE_CONTENDERS

    return name in RECIPE_CONTENDERS or name.startswith("recipe:")


def applies(contender: str, mode: str) -> str | None:
    """Why ``contender`` does not run a workload of ``mode`` (``eval``, ``train``, ``recipe:<name>``), or None."""
    if is_recipe(contender) != is_recipe(mode):
        return "recipe contenders run the recipe workloads only"
    if is_recipe(mode):
        from benchmarks.recipes import applies as recipe_applies

        return recipe_applies(contender, mode.split(":", 1)[1])
    return None


def unavailable(contender: str) -> str | None:
    """Why ``contender`` cannot run here (a benchmark-only package is missing), or None."""
    from benchmarks import peers
    from benchmarks.recipes import dali_available

    if contender == "dali_recipe" and not dali_available():
        return "nvidia.dali is not importable (`make bench`'s bench-deps installs it)"

    if needs_spdl(contender) and not spdl_available():
        return "spdl is not importable (pip install spdl==0.8.0; `make bench` does)"
    if contender in peers.PEERS and not peers.available(contender):
        return "its package is not importable (`make bench`'s bench-deps installs it)"
    return None


# ---------------------------------------------------------------------------------------------------------
# Transforms
# ---------------------------------------------------------------------------------------------------------


# ---------------------------------------------------------------------------------------------------------
# Datasets for torch.utils.data.DataLoader (module level: picklable for any start method)
# ---------------------------------------------------------------------------------------------------------


class _FileDataset(torch.utils.data.Dataset):
    """Files and labels with the transform of a workload ``mode``; subclasses decode in ``__getitem__``."""

    def __init__(self, paths: Sequence[str], labels: Sequence[int], transform: Callable) -> None:
        self.paths, self.labels, self.transform = list(paths), list(labels), transform

    def __len__(self) -> int:
        return len(self.paths)


class PilDataset(_FileDataset):
    """What ``torchvision.datasets.ImageFolder`` does per sample: Pillow open + RGB, then the transform."""

    def __init__(self, paths: Sequence[str], labels: Sequence[int], mode: str) -> None:
        super().__init__(paths, labels, classic_transform(mode))

    def __getitem__(self, i: int) -> tuple[torch.Tensor, int]:
        from PIL import Image

        with open(self.paths[i], "rb") as f:
            img = Image.open(f).convert("RGB")
        return self.transform(img), self.labels[i]


class TvioDataset(_FileDataset):
    """``torchvision.io.read_file`` + ``decode_jpeg`` (RGB) + v2 transforms on the uint8 tensor."""

    def __init__(self, paths: Sequence[str], labels: Sequence[int], mode: str, variant: str = "") -> None:
        super().__init__(paths, labels, v2_transform(mode, variant))

    def __getitem__(self, i: int) -> tuple[torch.Tensor, int]:
        from torchvision.io import ImageReadMode, decode_jpeg, read_file

        img = decode_jpeg(read_file(self.paths[i]), mode=ImageReadMode.RGB)
        return self.transform(img), self.labels[i]


# ---------------------------------------------------------------------------------------------------------
# spdl 0.8
# ---------------------------------------------------------------------------------------------------------

SPDL_EVAL_FILTER = (f"scale=w={RESIZE}:h={RESIZE}:force_original_aspect_ratio=increase:flags=bilinear,"
                    f"crop=w={SIZE}:h={SIZE},format=pix_fmts=rgb24")


def spdl_train_filter(rng: random.Random) -> str:
    """A RandomResizedCrop-like FFmpeg filter: area fraction, log-uniform aspect ratio and position drawn
    here; the box is clamped to the image; then scale to 224 x 224 and, with p = 0.5, hflip."""
    s = rng.uniform(*SCALE)
    r = math.exp(rng.uniform(math.log(RATIO[0]), math.log(RATIO[1])))
    fx, fy = rng.random(), rng.random()
    flip = ",hflip" if rng.random() < 0.5 else ""
    return (f"crop=w='min(iw,sqrt({s:.6f}*iw*ih*{r:.6f}))':h='min(ih,sqrt({s:.6f}*iw*ih/{r:.6f}))'"
            f":x='(iw-ow)*{fx:.6f}':y='(ih-oh)*{fy:.6f}',"
            f"scale=w={SIZE}:h={SIZE}:flags=bilinear{flip},format=pix_fmts=rgb24")


class _SpdlLoader:
    """An ``spdl.pipeline`` over batches of indices; one stage decodes + normalizes a batch."""

    def __init__(self, paths: Sequence[str], labels: Sequence[int], mode: str, batch_size: int, workers: int,
                 seed: int = 0) -> None:
        self.paths, self.labels, self.mode = list(paths), list(labels), mode
        self.batch_size, self.workers, self.seed = batch_size, workers, seed
        self.mean = torch.tensor(MEAN).view(1, 3, 1, 1)
        self.std = torch.tensor(STD).view(1, 3, 1, 1)

    def __len__(self) -> int:
        return math.ceil(len(self.paths) / self.batch_size)

    def _load(self, start: int) -> tuple[torch.Tensor, torch.Tensor]:
        import spdl.io

        idx = range(start, min(start + self.batch_size, len(self.paths)))
        srcs = [self.paths[i] for i in idx]
        if self.mode == "eval":
            buf = spdl.io.load_image_batch(srcs, width=None, height=None, pix_fmt=None, filter_desc=SPDL_EVAL_FILTER)
        else:
            rng = random.Random(self.seed * 1_000_003 + start)
            frames = [spdl.io.decode_packets(spdl.io.demux_image(s), filter_desc=spdl_train_filter(rng)) for s in srcs]
            buf = spdl.io.convert_frames(frames)
        hwc = spdl.io.to_torch(buf)  # uint8 [B, H, W, 3], zero copy
        out = torch.empty((hwc.shape[0], 3, hwc.shape[1], hwc.shape[2]), dtype=torch.float32)
        out.copy_(hwc.permute(0, 3, 1, 2))
        out.mul_(1.0 / (255.0 * self.std)).sub_(self.mean / self.std)  # ToDtype(scale=True) + Normalize
        return out, torch.tensor([self.labels[i] for i in idx], dtype=torch.int64)

    def __iter__(self) -> Iterable[tuple[torch.Tensor, torch.Tensor]]:
        from spdl.pipeline import PipelineBuilder

        pipeline = (PipelineBuilder()
                    .add_source(range(0, len(self.paths), self.batch_size))
                    .pipe(self._load, concurrency=self.workers, output_order="input")
                    .add_sink(2 * self.workers)
                    .build(num_threads=self.workers))
        with pipeline.auto_stop():
            yield from pipeline.get_iterator(timeout=600)


# ---------------------------------------------------------------------------------------------------------
# spdl_torch and the bound
# ---------------------------------------------------------------------------------------------------------


def spdl_torch_dataset(paths: Sequence[str], labels: Sequence[int], mode: str, classic: bool = False,
                       variant: str = ""):
    import spdl_torch.datasets

    transform = classic_transform(mode) if classic else v2_transform(mode, variant)
    ds = spdl_torch.datasets.FileListDataset(paths, labels, transform=transform, seed=0,
                                             warn_unfused=variant != "jitter")
    if ds.plan is None or (ds.plan.rest is not None) != (variant == "jitter"):
        raise RuntimeError(f"spdl_torch: the {mode} transform is not fully fused: plan={ds.plan}")
    return ds


class _Bound:
    """Whole batches through ``decode_images`` in the calling thread, native pool of one thread."""

    def __init__(self, paths: Sequence[str], labels: Sequence[int], mode: str, batch_size: int,
                 threads: int = 1) -> None:
        self.ds = spdl_torch_dataset(paths, labels, mode)
        self.batch_size, self.threads = batch_size, threads

    def __len__(self) -> int:
        return math.ceil(len(self.ds) / self.batch_size)

    def __iter__(self):
        from spdl_torch.io import read_file, set_num_threads
        from spdl_torch.transforms import FusedPlan

        set_num_threads(self.threads)
        ds, plan = self.ds, self.ds.plan
        try:
            for start in range(0, len(ds), self.batch_size):
                idx = list(range(start, min(start + self.batch_size, len(ds))))
                datas = [read_file(ds.paths[i]) for i in idx]
                seeds = FusedPlan.sample_seeds(ds.seed, ds.epoch, idx) if plan.random else None
                yield plan(datas, seeds), torch.tensor([ds.labels[i] for i in idx], dtype=torch.int64)
        finally:
            set_num_threads(0)


# ---------------------------------------------------------------------------------------------------------
# Factories: (paths, labels, mode, batch_size, workers) -> (dataset-or-None, make_loader)
# The dataset is built before the measurement window (it is the consumer's memory); make_loader() inside.
# ---------------------------------------------------------------------------------------------------------


def build(contender: str, paths: Sequence[str], labels: Sequence[int], mode: str, batch_size: int,
          workers: int, root: str | None = None) -> tuple[Any, Callable[[], Iterable]]:
    if is_recipe(mode):
        from benchmarks import recipes

        return recipes.build(contender, mode.split(":", 1)[1], root, paths, labels, batch_size, workers)
    if contender == "torch_pil":
        ds = PilDataset(paths, labels, mode)
        return ds, lambda: torch.utils.data.DataLoader(ds, batch_size=batch_size, num_workers=workers)
    if contender in ("torch_tvio", "torch_tvio_jitter"):
        ds = TvioDataset(paths, labels, mode, "jitter" if contender == "torch_tvio_jitter" else "")
        return ds, lambda: torch.utils.data.DataLoader(ds, batch_size=batch_size, num_workers=workers)
    if contender == "spdl08":
        return None, lambda: _SpdlLoader(paths, labels, mode, batch_size, workers)
    if contender in ("spdl_torch", "spdl_torch_v1", "spdl_torch_crop", "spdl_torch_jitter"):
        import spdl_torch
        import spdl_torch.datasets

        variant = {"spdl_torch_crop": "crop", "spdl_torch_jitter": "jitter"}.get(contender, "")
        ds = spdl_torch_dataset(paths, labels, mode, classic=contender == "spdl_torch_v1", variant=variant)
        return ds, lambda: spdl_torch.DataLoader(ds, batch_size=batch_size, num_workers=workers,
                                                 collate_fn=spdl_torch.datasets.collate)
    if contender == "bound":
        return None, lambda: _Bound(paths, labels, mode, batch_size)
    from benchmarks import peers

    if contender in peers.PEERS:
        return peers.build(contender, paths, labels, mode, batch_size, workers)
    raise ValueError(f"unknown contender {contender!r}; expected one of {CONTENDERS}")


def is_fused_batch(images: torch.Tensor) -> bool | None:
    """Whether ``images`` is the very tensor a fused ``__getitems__`` made (no collate copy); diagnostic."""
    try:
        from spdl_torch.datasets import _collate
    except Exception:  # noqa: BLE001
        return None
    return _collate._FUSED_BATCHES.get(id(images)) is images


def list_images(root: str) -> tuple[list[str], list[int], list[str]]:
    """(paths, labels, classes) of an ImageFolder root in torchvision's order (JPEG files only)."""
    from torchvision.datasets.folder import find_classes, make_dataset

    root = os.path.join(root, "train") if os.path.isdir(os.path.join(root, "train")) else root
    classes, class_to_idx = find_classes(root)
    samples = make_dataset(root, class_to_idx, extensions=(".jpeg", ".jpg"))
    return [p for p, _ in samples], [t for _, t in samples], classes
