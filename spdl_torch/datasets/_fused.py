"""Batch fetching through the fused op: the mixin behind ``ImageFolder``/``FileListDataset.__getitems__``,
``FileListDataset`` and the zero-copy ``collate``.

Design: ``__getitems__(indices)`` reads the files (``read_file``, no GIL) and makes one
:func:`spdl_torch.io.decode_images` call; it returns the list of ``(image, target)`` pairs that torch's
fetchers expect, where each image is a view ``batch[i]`` of that one batch tensor. :func:`collate`
recognises such views and returns the batch tensor itself (no copy); ``torch.utils.data.default_collate``
also works, at the cost of one ``torch.stack`` copy. Pass ``collate_fn=spdl_torch.datasets.collate`` to
``spdl_torch.DataLoader`` or ``torch.utils.data.DataLoader``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch.utils.data import Dataset

from .._errors import name_sample
from ..errors import DecodeError
from ._collate import collate, register_fused_batch

__all__ = ["FileListDataset", "FusedBatchMixin", "collate"]  # collate: re-exported from ._collate

class FusedBatchMixin:
    """Shared by the datasets whose transform may be fused. Subclasses set ``transform``,
    ``target_transform`` and implement ``_path(i)``, ``_target(i)`` and, for the unfused path,
    ``_load(path)``; ``_init_fused(fusable=False)`` says that a custom loader rules fusion out."""

    transform: Callable | None
    target_transform: Callable | None

    def _init_fused(self, seed: int | None, fusable: bool = True) -> None:
        from ..transforms import fuse

        self.plan = fuse(self.transform) if fusable else None
        self._seed_given = seed is not None
        self.seed = int(torch.empty((), dtype=torch.int64).random_().item()) if seed is None else int(seed)
        self.epoch = 0

    def _seed_and_epoch(self) -> tuple[int, int]:
        """(base seed, epoch) of the per-sample random streams. In a ``spdl_torch.DataLoader`` fetch: the
        iterator's own epoch, and its ``base_seed`` (drawn from the loader's ``generator``) unless ``seed`` was
        given. In a worker process of ``torch.utils.data.DataLoader`` without ``seed``: that loader's base seed
        (``worker_info.seed - worker_info.id``). Otherwise ``seed`` (drawn once when not given) and
        :meth:`set_epoch`'s epoch."""
        from ..dataloader import ThreadWorkerInfo, loader_context

        ctx = loader_context()
        if ctx is not None:
            return (self.seed if self._seed_given else ctx.base_seed), ctx.epoch
        info = torch.utils.data.get_worker_info()
        if info is not None and not self._seed_given and not isinstance(info, ThreadWorkerInfo):
            return info.seed - info.id, self.epoch
        return self.seed, self.epoch

    def set_epoch(self, epoch: int) -> None:
        """Sets the epoch mixed into the per-sample seeds (random crops/flips differ per epoch, repeatably) when
        the dataset is used outside ``spdl_torch.DataLoader`` (whose iterators pass their own epoch)."""
        self.epoch = int(epoch)

    def state_dict(self) -> dict[str, int]:
        """``{"seed": base seed, "epoch": epoch}``: what the per-sample random streams derive from.
        ``spdl_torch.DataLoader.state_dict()`` includes it, so a resumed run (another process, where
        ``seed=None`` drew another seed) gets the same crops and flips."""
        return {"seed": self.seed, "epoch": self.epoch}

    def load_state_dict(self, state: dict[str, int]) -> None:
        """Restores :meth:`state_dict`'s seed and epoch.

        Raises:
            ValueError: ``state`` lacks ``"seed"`` or ``"epoch"``.
        """
        if not isinstance(state, dict) or "seed" not in state or "epoch" not in state:
            raise ValueError(f"{type(self).__name__}.load_state_dict: expected a dict with 'seed' and 'epoch', got {state!r:.200}")
        self.seed = int(state["seed"])
        self.epoch = int(state["epoch"])

    def _path(self, index: int) -> str:
        raise NotImplementedError

    def _target(self, index: int) -> Any:
        raise NotImplementedError

    def _load(self, path: str) -> Any:
        raise NotImplementedError

    def _transformed_target(self, index: int) -> Any:
        target = self._target(index)
        return target if self.target_transform is None else self.target_transform(target)

    def __getitem__(self, index: int) -> tuple[Any, Any]:
        """``(image, target)``: through the fused op when the transform fuses (the same pixels as a batched
        fetch), else ``transform(_load(path))``."""
        if self.plan is not None:
            return self._fused_items([int(index)])[0]
        image = self._load(self._path(index))
        if self.transform is not None:
            image = self.transform(image)
        return image, self._transformed_target(index)

    def _fused_items(self, indices: Sequence[int]) -> list[tuple[Any, Any]]:
        from ..io import read_file
        from ..transforms import sample_seeds

        paths = [self._path(i) for i in indices]
        datas = [read_file(p) for p in paths]
        seeds = sample_seeds(*self._seed_and_epoch(), indices) if self.plan.random else None
        try:
            images = self.plan(datas, seeds)
        except DecodeError as e:
            raise name_sample(e, paths) from None
        if isinstance(images, torch.Tensor):
            register_fused_batch(images)
        out = []
        for k, i in enumerate(indices):
            out.append((images[k], self._transformed_target(i)))
        return out

    def __getitems__(self, indices: Sequence[int]) -> list[tuple[Any, Any]]:
        """Samples ``indices`` as a list of ``(image, target)``. With a fused transform, one native call
        decodes them all and the images are views ``batch[k]`` of one Tensor[N, 3, H, W] (see
        :func:`collate`); otherwise ``[self[i] for i in indices]``."""
        indices = [int(i) for i in indices]
        if self.plan is None or not indices:
            return [self[i] for i in indices]
        return self._fused_items(indices)


class FileListDataset(FusedBatchMixin, Dataset):
    """Images from a list of files, with optional labels, decoded by spdl_torch's native decoders.

    Args:
        paths: image files (any format :func:`spdl_torch.io.decode_image` reads).
        labels: one label per path (``None``: the targets are the indices).
        transform: a ``torchvision.transforms.v2`` transform of a uint8 Tensor[3, H, W]; its fusable prefix
            (see :mod:`spdl_torch.transforms`) runs inside one native ``decode_images`` call per batch.
        target_transform: applied to the label.
        seed: base seed of the per-sample random streams (``None``: drawn from torch's global RNG once).

    ``ds[i]`` is ``(image, target)``; ``ds.__getitems__(indices)`` the list of them, decoded in one call
    (images are views of one batch tensor: use :func:`collate` to get it back without a copy).
    """

    def __init__(
        self,
        paths: Sequence[str | os.PathLike],
        labels: Sequence[Any] | None = None,
        transform: Callable | None = None,
        target_transform: Callable | None = None,
        seed: int | None = None,
    ) -> None:
        self.paths = [os.fspath(p) for p in paths]
        if labels is not None and len(labels) != len(self.paths):
            raise ValueError(f"FileListDataset: expected one label per path, got {len(labels)=} for {len(self.paths)} paths")
        self.labels = list(labels) if labels is not None else None
        self.transform = transform
        self.target_transform = target_transform
        self._init_fused(seed)

    def __len__(self) -> int:
        return len(self.paths)

    def _path(self, index: int) -> str:
        return self.paths[index]

    def _target(self, index: int) -> Any:
        return index if self.labels is None else self.labels[index]

    def _load(self, path: str) -> Any:
        from ..io import decode_image

        return decode_image(path)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(num_samples={len(self)}, fused={self.plan is not None})"
