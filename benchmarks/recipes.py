"""The "recipes" workloads of ``python -m benchmarks.run``: training recipes people use as they are, with
augmentation, on three loaders over the same files.

Recipes (``RECIPES``; crop size in brackets):

* ``ta_v1`` / ``ra_v1`` / ``aa_v1`` / ``am_v1`` [176]: torchvision's classification reference training preset
  (``references/classification/presets.py``, PIL backend, classic ``torchvision.transforms``):
  ``RandomResizedCrop(176)``, ``RandomHorizontalFlip()``, ``TrivialAugmentWide()`` | ``RandAugment(magnitude=9)``
  | ``AutoAugment(IMAGENET)`` | ``AugMix()`` (each with ``interpolation=BILINEAR``, as the preset passes it),
  ``PILToTensor()``, ``ConvertImageDtype(float)``, ``Normalize``, ``RandomErasing(0.1)``.
* ``ta_v2`` / ``ra_v2`` / ``aa_v2`` / ``am_v2`` [176]: the same preset with the tensor backend and ``transforms.v2``:
  a leading ``PILToTensor()``, ..., ``ToDtype(float32, scale=True)``, ``Normalize``, ``RandomErasing(0.1)``,
  ``ToPureTensor()``.
* ``contrastive`` [224]: ``RandomResizedCrop(224)``, ``RandomHorizontalFlip()``, ``RandomApply([ColorJitter(0.4,
  0.4, 0.4, 0.1)], p=0.8)``, ``RandomGrayscale(0.2)``, ``GaussianBlur(23, sigma=(0.1, 2))``, ``ToImage()``,
  ``ToDtype``, ``Normalize`` (v2; a SimCLR-style view).
* ``timm_train`` / ``timm_eval`` [224]: ``timm.data.create_transform(224, is_training=True,
  auto_augment="rand-m9-mstd0.5-inc1", re_prob=0.25)`` and ``create_transform(224)``, when timm is installed.
  timm 1.0.31's ``PosterizeIncreasing`` asks Pillow for ``posterize(img, 0)`` at the top magnitudes, which Pillow
  12 and later reject (``ValueError``; older Pillow returned a black image); in the benchmark's processes
  :func:`pillow_posterize_zero_bits` restores the older result so timm's own pipeline runs (the fused op
  gives that result natively).

Contenders (``RECIPE_CONTENDERS``):

* ``torch_recipe``: ``torch.utils.data.DataLoader`` (worker processes) over ``torchvision.datasets.ImageFolder``
  (Pillow) with the recipe, as users run it.
* ``spdl_torch_recipe``: ``spdl_torch.DataLoader`` (worker threads) over ``spdl_torch.datasets.ImageFolder`` with
  the same recipe object (fused where it fuses; the remainder per sample); ``collate_fn=spdl_torch.datasets.collate``.
* ``dali_recipe``: NVIDIA DALI's CPU pipeline (``device_id=None``) with ``nvidia.dali.auto_aug``: for ``ta_*``
  ``trivial_augment_wide``, for ``ra_*`` ``rand_augment(n=2, m=9)`` (``enable_conditionals=True``, as its docs
  require; bilinear), after ``fn.random_resized_crop(176)`` and a coin-flip mirror in ``crop_mirror_normalize``; no
  random erasing (DALI's ``fn.erase`` takes fixed anchors, not torchvision's rule). Only these two policies.

Both loaders list the same files (torchvision's ``make_dataset``; ``limit`` keeps the first files of that list,
classes left empty are kept).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence

import torch

from benchmarks.peers import DaliLoader
from benchmarks.workloads import MEAN, STD


RECIPE_CONTENDERS = ("torch_recipe", "spdl_torch_recipe", "dali_recipe")
# name -> crop size
RECIPES = {"ta_v1": 176, "ra_v1": 176, "aa_v1": 176, "am_v1": 176, "ta_v2": 176, "ra_v2": 176, "aa_v2": 176,
           "am_v2": 176, "contrastive": 224, "timm_train": 224, "timm_eval": 224}
DALI_RECIPES = ("ta_v1", "ta_v2", "ra_v1", "ra_v2")


def workload(recipe: str) -> str:
    """The workload name of a recipe in ``benchmarks.run`` (``recipe_<name>``)."""
    return f"recipe_{recipe}"


def timm_available() -> bool:
    try:
        import timm.data  # noqa: F401
    except Exception:  # noqa: BLE001 - any import failure means "not available"
        return False
    return True


def dali_available() -> bool:
    try:
        import nvidia.dali.auto_aug  # noqa: F401
        import nvidia.dali.plugin.pytorch  # noqa: F401
    except Exception:  # noqa: BLE001
        return False
    return True


def applies(contender: str, recipe: str) -> str | None:
    """Why ``contender`` does not run ``recipe`` here, or None."""
    if recipe.startswith("timm") and not timm_available():
        return "timm is not importable"
    if contender == "dali_recipe":
        if recipe not in DALI_RECIPES:
            return "DALI's auto_aug has TrivialAugmentWide and RandAugment only"
        if not dali_available():
            return "nvidia.dali is not importable"
    return None


def pillow_posterize_zero_bits() -> None:
    """Let ``PIL.ImageOps.posterize(img, 0)`` return a black image, as Pillow before 12 did (timm's
    ``PosterizeIncreasing`` asks for 0 bits at magnitude 10; Pillow 12+ raises ``ValueError``). Idempotent."""
    from PIL import ImageOps

    if getattr(ImageOps.posterize, "_zero_bits", False):
        return
    original = ImageOps.posterize

    def posterize(image, bits):
        if bits == 0:
            return image.point(lambda _: 0)
        return original(image, bits)

    posterize._zero_bits = True
    ImageOps.posterize = posterize


def transform(recipe: str):
    """The recipe's transform object (a fresh one per call)."""
    if recipe.startswith("timm"):
        import timm.data

        pillow_posterize_zero_bits()  # timm calls ImageOps.posterize by module attribute: forked workers inherit it

        if recipe == "timm_train":
            return timm.data.create_transform(224, is_training=True, auto_augment="rand-m9-mstd0.5-inc1", re_prob=0.25)
        return timm.data.create_transform(224, is_training=False)
    if recipe == "contrastive":
        from torchvision.transforms import v2

        return v2.Compose([v2.RandomResizedCrop(224, antialias=True), v2.RandomHorizontalFlip(),
                           v2.RandomApply([v2.ColorJitter(0.4, 0.4, 0.4, 0.1)], p=0.8), v2.RandomGrayscale(0.2),
                           v2.GaussianBlur(23, sigma=(0.1, 2.0)), v2.ToImage(), v2.ToDtype(torch.float32, scale=True),
                           v2.Normalize(MEAN, STD)])
    policy, backend = recipe.split("_")
    size = RECIPES[recipe]
    if backend == "v1":
        from torchvision import transforms as T

        bl = T.InterpolationMode.BILINEAR
        aug = {"ta": lambda: T.TrivialAugmentWide(interpolation=bl),
               "ra": lambda: T.RandAugment(magnitude=9, interpolation=bl),
               "aa": lambda: T.AutoAugment(T.AutoAugmentPolicy.IMAGENET, interpolation=bl),
               "am": lambda: T.AugMix(interpolation=bl)}[policy]()
        return T.Compose([T.RandomResizedCrop(size, antialias=True), T.RandomHorizontalFlip(0.5), aug, T.PILToTensor(),
                          T.ConvertImageDtype(torch.float), T.Normalize(MEAN, STD), T.RandomErasing(0.1)])
    from torchvision.transforms import v2 as T

    bl = T.InterpolationMode.BILINEAR
    aug = {"ta": lambda: T.TrivialAugmentWide(interpolation=bl),
           "ra": lambda: T.RandAugment(magnitude=9, interpolation=bl),
           "aa": lambda: T.AutoAugment(T.AutoAugmentPolicy.IMAGENET, interpolation=bl),
           "am": lambda: T.AugMix(interpolation=bl)}[policy]()
    return T.Compose([T.PILToTensor(), T.RandomResizedCrop(size, antialias=True), T.RandomHorizontalFlip(0.5), aug,
                      T.ToDtype(torch.float, scale=True), T.Normalize(MEAN, STD), T.RandomErasing(0.1),
                      T.ToPureTensor()])


def _train_root(root: str) -> str:
    return os.path.join(root, "train") if os.path.isdir(os.path.join(root, "train")) else root


class DaliAutoAugLoader(DaliLoader):
    """DALI's CPU pipeline with ``nvidia.dali.auto_aug``; ``(images, labels)`` batches, float32 NCHW (the peers'
    loader with another pipeline)."""

    def __init__(self, paths: Sequence[str], labels: Sequence[int], recipe: str, batch_size: int, threads: int,
                 seed: int = 0) -> None:
        self.paths, self.labels, self.recipe = list(paths), list(labels), recipe
        self.batch_size, self.threads, self.seed = batch_size, threads, seed

    def _pipeline(self):
        from nvidia.dali import fn, pipeline_def, types
        from nvidia.dali.auto_aug import rand_augment, trivial_augment

        size = RECIPES[self.recipe]

        @pipeline_def(batch_size=self.batch_size, num_threads=self.threads, device_id=None, prefetch_queue_depth=2,
                      seed=self.seed, enable_conditionals=True)
        def pipe():
            jpegs, labels = fn.readers.file(files=self.paths, labels=self.labels, random_shuffle=False, name="Reader")
            images = fn.decoders.image(jpegs, device="cpu", output_type=types.RGB)
            images = fn.random_resized_crop(images, size=(size, size), antialias=True, interp_type=types.INTERP_LINEAR)
            if self.recipe.startswith("ta"):
                images = trivial_augment.trivial_augment_wide(images, interp_type=types.INTERP_LINEAR)
            else:
                images = rand_augment.rand_augment(images, n=2, m=9, interp_type=types.INTERP_LINEAR)
            images = fn.crop_mirror_normalize(images, mirror=fn.random.coin_flip(probability=0.5), dtype=types.FLOAT,
                                              output_layout="CHW", mean=[255 * m for m in MEAN],
                                              std=[255 * s for s in STD])
            return images, labels

        return pipe()

def build(contender: str, recipe: str, root: str, paths: Sequence[str], labels: Sequence[int], batch_size: int,
          workers: int) -> tuple[object, Callable[[], Iterable]]:
    """(dataset or None, make_loader) for ``contender`` on ``recipe``; ``paths``: the files to load (the first of
    torchvision's list)."""
    if contender == "dali_recipe":
        return None, lambda: DaliAutoAugLoader(paths, labels, recipe, batch_size, workers)
    keep = {os.path.realpath(p) for p in paths}

    def valid(p: str) -> bool:
        return os.path.realpath(p) in keep

    if contender == "torch_recipe":
        import torchvision

        ds = torchvision.datasets.ImageFolder(_train_root(root), transform=transform(recipe), is_valid_file=valid,
                                              allow_empty=True)
        return ds, lambda: torch.utils.data.DataLoader(ds, batch_size=batch_size, num_workers=workers)
    if contender == "spdl_torch_recipe":
        import spdl_torch
        import spdl_torch.datasets

        ds = spdl_torch.datasets.ImageFolder(_train_root(root), transform=transform(recipe), is_valid_file=valid,
                                             allow_empty=True, seed=0, warn_unfused=False)
        return ds, lambda: spdl_torch.DataLoader(ds, batch_size=batch_size, num_workers=workers,
                                                 collate_fn=spdl_torch.datasets.collate)
    raise ValueError(f"unknown recipe contender {contender!r}; expected one of {RECIPE_CONTENDERS}")


def fused(ds) -> str:
    """"all", "part" or "none": how much of the recipe ``ds`` (a spdl_torch dataset) runs in the native op."""
    plan = getattr(ds, "plan", None)
    if plan is None:
        return "none"
    return "all" if plan.rest is None else "part"
