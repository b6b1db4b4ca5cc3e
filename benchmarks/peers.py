"""Peer loaders of ``python -m benchmarks.run`` from other projects, written as their docs show them
(benchmark-only packages, installed by ``make bench``'s ``bench-deps``; never needed by ``make test``).

6. ``dali_cpu``: NVIDIA DALI (PyPI ``nvidia-dali-cuda120`` 2.x) on the CPU only: a ``pipeline_def`` with
   ``device_id=None`` (no GPU), ``batch_size`` 32, ``num_threads`` = the cores the process may use, and
   ``prefetch_queue_depth=2`` (the default its docs give for the CPU stage); ``fn.readers.file`` over the
   same files in the same order (``random_shuffle=False``), ``fn.decoders.image(device="cpu",
   output_type=RGB)``; eval: ``fn.resize(resize_shorter=256, antialias=True)`` (linear) and
   ``fn.crop_mirror_normalize(crop=(224, 224))``; train: ``fn.random_resized_crop(size=224,
   random_area=(0.08, 1), random_aspect_ratio=(3/4, 4/3), antialias=True)`` and ``crop_mirror_normalize``
   with ``mirror=fn.random.coin_flip(probability=0.5)``; float32 CHW (NCHW batches), ImageNet mean/std
   on the 0..255 scale. Batches come through ``nvidia.dali.plugin.pytorch.DALIGenericIterator``
   (``reader_name``, ``LastBatchPolicy.PARTIAL``), DALI's documented torch iterator.
7. ``torch_codec``: ``torch.utils.data.DataLoader`` (worker processes) + torchcodec 0.17's image decoder
   (``torchcodec.decoders.decode_jpeg(path)``: a uint8 CHW RGB tensor) + the ``torchvision.transforms.v2``
   transform of contender 2.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Sequence

import torch

from benchmarks.workloads import MEAN, RATIO, RESIZE, SCALE, SIZE, STD, v2_transform

PEERS = ("dali_cpu", "torch_codec")
DALI_PREFETCH = 2


def available(contender: str) -> bool:
    try:
        if contender == "dali_cpu":
            import nvidia.dali  # noqa: F401
            import nvidia.dali.plugin.pytorch  # noqa: F401
        elif contender == "torch_codec":
            import torchcodec.decoders  # noqa: F401
    except Exception:  # noqa: BLE001 - any import failure means "not available"
        return False
    return True


def cores() -> int:
    return len(os.sched_getaffinity(0))


class DaliLoader:
    """DALI's CPU pipeline and its torch iterator: ``(images, labels)`` batches, images float32 NCHW."""

    def __init__(self, paths: Sequence[str], labels: Sequence[int], mode: str, batch_size: int,
                 threads: int | None = None, seed: int = 0) -> None:
        self.paths, self.labels, self.mode = list(paths), list(labels), mode
        self.batch_size, self.threads, self.seed = batch_size, threads or cores(), seed

    def __len__(self) -> int:
        return math.ceil(len(self.paths) / self.batch_size)

    def _pipeline(self):
        from nvidia.dali import fn, pipeline_def, types

        mean = [255 * m for m in MEAN]
        std = [255 * s for s in STD]

        @pipeline_def(batch_size=self.batch_size, num_threads=self.threads, device_id=None,
                      prefetch_queue_depth=DALI_PREFETCH, seed=self.seed)
        def pipe():
            jpegs, labels = fn.readers.file(files=self.paths, labels=self.labels, random_shuffle=False,
                                            name="Reader")
            images = fn.decoders.image(jpegs, device="cpu", output_type=types.RGB)
            if self.mode == "eval":
                images = fn.resize(images, resize_shorter=RESIZE, antialias=True, interp_type=types.INTERP_LINEAR)
                images = fn.crop_mirror_normalize(images, crop=(SIZE, SIZE), dtype=types.FLOAT, output_layout="CHW",
                                                  mean=mean, std=std)
            else:
                images = fn.random_resized_crop(images, size=(SIZE, SIZE), random_area=list(SCALE),
                                                random_aspect_ratio=list(RATIO), antialias=True,
                                                interp_type=types.INTERP_LINEAR)
                images = fn.crop_mirror_normalize(images, mirror=fn.random.coin_flip(probability=0.5),
                                                  dtype=types.FLOAT, output_layout="CHW", mean=mean, std=std)
            return images, labels

        return pipe()

    def __iter__(self) -> Iterable[tuple[torch.Tensor, torch.Tensor]]:
        from nvidia.dali.plugin.pytorch import DALIGenericIterator, LastBatchPolicy

        pipe = self._pipeline()
        pipe.build()
        it = DALIGenericIterator(pipe, ["images", "labels"], reader_name="Reader",
                                 last_batch_policy=LastBatchPolicy.PARTIAL)
        try:
            for out in it:
                yield out[0]["images"], out[0]["labels"].view(-1).long()
        finally:
            del it, pipe


class TorchcodecDataset(torch.utils.data.Dataset):
    """``torchcodec.decoders.decode_jpeg`` (RGB, uint8 CHW) + the v2 transform, per sample."""

    def __init__(self, paths: Sequence[str], labels: Sequence[int], mode: str) -> None:
        self.paths, self.labels, self.transform = list(paths), list(labels), v2_transform(mode)

    def __len__(self) -> int:
        return len(self.paths)

    def __getitem__(self, i: int) -> tuple[torch.Tensor, int]:
        from torchcodec.decoders import decode_jpeg

        return self.transform(decode_jpeg(self.paths[i], mode="RGB")), self.labels[i]


def build(contender: str, paths: Sequence[str], labels: Sequence[int], mode: str, batch_size: int, workers: int):
    if contender == "dali_cpu":
        return None, lambda: DaliLoader(paths, labels, mode, batch_size, threads=workers)
    if contender == "torch_codec":
        ds = TorchcodecDataset(paths, labels, mode)
        return ds, lambda: torch.utils.data.DataLoader(ds, batch_size=batch_size, num_workers=workers)
    raise ValueError(f"unknown peer {contender!r}; expected one of {PEERS}")
