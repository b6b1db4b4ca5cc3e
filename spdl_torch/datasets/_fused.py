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

import operator
import os
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch.utils.data import Dataset
from torch.utils.data._utils.worker import WorkerInfo as TorchWorkerInfo

from .._context import loader_context
from .._errors import DecodeError, name_sample
from .._limits import default
from ._collate import register_fused_batch

__all__ = ["FileListDataset", "FusedBatchMixin", "analysis_of"]


class FusedBatchMixin:
    """Shared by the datasets whose transform may be fused. Subclasses set ``transform``,
    ``target_transform`` and implement ``_path(i)``, ``_target(i)`` and, for the unfused path,
    ``_load(path)``; ``_init_fused(fusable=False)`` says that a custom loader rules fusion out."""

    transform: Callable | None
    target_transform: Callable | None

    def _init_fused(self, seed: int | None, fusable: bool = True, op: str = "decode_images", input: str | None = None,
                    analysis: Any = None) -> None:
        """``op``: as :func:`spdl_torch.transforms.fuse`'s; ``input``: what the transform is given (``"pil"``,
        ``"tensor"``; ``None``: inferred, as ``fuse`` infers it); ``analysis``: an analysis of ``transform``
        made already (:func:`analysis_of`'s), else it is analysed here."""
        from ..transforms import fuse

        self._input = input
        self._analysis = analysis
        if analysis is not None:
            self.plan = analysis.plan if fusable else None
        else:
            self.plan = fuse(self.transform, op=op, input=input) if fusable else None
        self._fusable = fusable
        self._seed_given = seed is not None
        self.seed = int(torch.empty((), dtype=torch.int64).random_().item()) if seed is None else int(seed)
        self.epoch = 0

    def spdl_native_loading(self) -> bool:
        """Whether spdl_torch's native ops produce the samples without per-sample Python work: the default
        loader and the transform fully fused (or only a deterministic remainder run once per batch), or no
        transform. :class:`spdl_torch.DataLoader` (``worker_mode="auto"``) then loads on threads, else in
        worker processes."""
        if not getattr(self, "_fusable", True):
            return False
        return self.transform is None or (self.plan is not None and self.plan.native)

    def spdl_python_remainder(self) -> bool:
        """Whether the samples come from spdl_torch's native ops except a per-sample Python remainder of the
        transform (part fused, the rest per sample): :class:`spdl_torch.DataLoader` then loads on threads
        (``worker_mode="auto"``), or runs that remainder in worker processes (``worker_mode="hybrid"``)."""
        if type(self).__getitems__ is not FusedBatchMixin.__getitems__:  # a subclass with its own batch path
            return False
        plan = self.plan if getattr(self, "_fusable", True) else None
        return self.transform is not None and plan is not None and plan.per_sample is not None

    def _seed_and_epoch(self) -> tuple[int, int]:
        """(base seed, epoch) of the per-sample random streams. In a ``spdl_torch.DataLoader`` fetch: the
        iterator's own epoch, and its ``base_seed`` (drawn from the loader's ``generator``) unless ``seed`` was
        given. In a worker process of ``torch.utils.data.DataLoader`` without ``seed``: that loader's base seed
        (``worker_info.seed - worker_info.id``). Otherwise ``seed`` (drawn once when not given) and
        :meth:`set_epoch`'s epoch."""
        ctx = loader_context()
        if ctx is not None:
            return (self.seed if self._seed_given else ctx.base_seed), ctx.epoch
        info = torch.utils.data.get_worker_info()
        if info is not None and not self._seed_given and type(info) is TorchWorkerInfo:  # torch's own worker
            return info.seed - info.id, self.epoch
        return self.seed, self.epoch

    def _init_fusion(
        self, warn_unfused: bool, require_fused: bool, fusable: bool, max_pixels: int | None, max_bytes: int | None
    ) -> None:
        """After ``_init_fused``: the size limits, the input the transform expects, and the warning (or
        error) about a transform that is not fully fused."""
        self.max_pixels = _limit("max_pixels", max_pixels)
        self.max_bytes = _limit("max_bytes", max_bytes)
        self.warn_unfused, self.require_fused = bool(warn_unfused), bool(require_fused)
        analysis = getattr(self, "_analysis", None)
        if analysis is None:
            analysis = analysis_of(self.transform, getattr(self, "_input", None))
        self._pil_input = analysis.input == "pil"
        name = type(self).__name__
        if not fusable:
            self._unfused_note = "not fused: a custom loader"
            if require_fused:
                raise ValueError(f"{name}: require_fused=True, but a custom loader rules out fusion (pass loader=None)")
            return
        if self.transform is None:
            self._unfused_note = "no transform"
            if require_fused:
                raise ValueError(f"{name}: require_fused=True, but there is no transform to fuse")
            return
        plan = self.plan
        if plan is not None and plan.rest is None:
            self._unfused_note = ""
            return
        first = _short_repr(analysis.unfused)
        if plan is None:
            msg = (f"{name}: the transform is not fused: {first} does not map onto decode_images ({analysis.reason}); "
                   f"every sample is decoded and the whole transform runs per sample in Python")
            self._unfused_note = f"not fused ({first}: {analysis.reason}); per sample in Python"
        else:
            n = len(plan.rest.transforms) - 1
            after = f" and the {n} transform{'s' if n != 1 else ''} after it" if n else ""
            verb = "run" if n else "runs"  # "X and the 2 transforms after it run", "X runs"
            cost = (f"{verb} once per batch in Python on the batch tensor (deterministic, not fused)"
                    if plan.per_sample is None else
                    f"{verb} per sample in Python after the native decode" if plan.batched is None else
                    f"{verb} once per batch in Python, the transforms from the first random one on per sample")
            msg = f"{name}: the transform is only partly fused: {first}{after} {cost}"
            if plan.unfused_reason:
                who = first.split("(")[0]  # a reason that names its class already ("X overrides forward: ...")
                msg += f" ({plan.unfused_reason})" if plan.unfused_reason.startswith(who + " ") else \
                    f" ({who}: {plan.unfused_reason})"
            self._unfused_note = ""
        if require_fused:
            raise ValueError(f"{name}: require_fused=True, but {first} is not fused; the plan:\n{self._plan_text()}")
        if warn_unfused:
            warnings.warn(msg + ". Pass warn_unfused=False to silence this, require_fused=True to make it an error.",
                          UserWarning, stacklevel=3)

    def _plan_text(self) -> str:
        """What runs where, for ``repr``: the fused plan and the remainder, or why nothing is fused."""
        if self.plan is not None:
            return self.plan.describe()
        note = getattr(self, "_unfused_note", "")
        return note if self.transform is None else f"{note}: {_short_repr(self.transform, 400)}"

    def _max_pixels(self) -> int:
        # the values users set on spdl_torch.io, read at each fetch
        return default("image_pixels") if self.max_pixels is None else self.max_pixels

    def _max_bytes(self) -> int:
        return default("image_bytes") if self.max_bytes is None else self.max_bytes

    def _decode(self, path: str) -> Any:
        """The unfused default load: ``decode_image`` under the limits; a PIL RGB image for a pipeline of
        classic ``torchvision.transforms`` (what torchvision's ImageFolder feeds it)."""
        from ..io import decode_image
        from .._pil import to_pil

        image = decode_image(path, max_pixels=self._max_pixels(), max_bytes=self._max_bytes())
        return to_pil(image) if getattr(self, "_pil_input", False) else image

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

    def _sources(self, indices: Sequence[int]) -> tuple[list[Any], list[str], list[Any]]:
        """``(datas, names, targets)`` of ``indices``: the encoded images (uint8 tensors, read here from
        ``_path(i)`` under ``max_bytes``), the names errors give them (the paths) and the transformed
        targets. A dataset whose samples are not files overrides it."""
        from ..io import read_file

        paths = [self._path(i) for i in indices]
        max_bytes = self._max_bytes()
        datas = [read_file(p, max_bytes=max_bytes) for p in paths]
        return datas, paths, [self._transformed_target(i) for i in indices]

    def _fused_items(self, indices: Sequence[int]) -> list[tuple[Any, Any]]:
        from .._seeds import sample_seeds

        datas, paths, targets = self._sources(indices)
        base, epoch = self._seed_and_epoch()
        seeds = sample_seeds(base, epoch, indices) if self.plan.random else None
        ctx = loader_context()  # the loader's way: pinned, ToDtype/Normalize on the device, the remainder elsewhere
        try:
            if ctx is not None and ctx.run_plan is not None:
                images = ctx.run_plan(self.plan, datas, seeds, base_seed=base, epoch=epoch, indices=indices,
                                      max_pixels=self._max_pixels())
            else:
                images = self.plan(datas, seeds, max_pixels=self._max_pixels())
        except DecodeError as e:
            raise name_sample(e, paths) from None
        except (TypeError, ValueError) as e:  # a draw torchvision fails on too (AugmentProgram.build)
            i = getattr(e, "sample_index", None)
            if i is None or not 0 <= i < len(paths):
                raise
            raise type(e)(f"{paths[i]} {getattr(e, 'reason', e)}") from None
        if isinstance(images, torch.Tensor):
            register_fused_batch(images)
        return [(images[k], targets[k]) for k in range(len(indices))]

    def __getitems__(self, indices: Sequence[int]) -> list[tuple[Any, Any]]:
        """Samples ``indices`` as a list of ``(image, target)``. With a fused transform, one native call
        decodes them all and the images are views ``batch[k]`` of one Tensor[N, 3, H, W] (see
        :func:`collate`); otherwise ``[self[i] for i in indices]``."""
        indices = [int(i) for i in indices]
        if self.plan is None or not indices:
            return [self[i] for i in indices]
        return self._fused_items(indices)


def analysis_of(transform: Any, input: str | None) -> Any:
    """What the fuser finds in ``transform`` given ``input`` (``"pil"``, ``"tensor"``, ``None``: inferred): the
    plan (``None``: nothing fused), the first transform not fused and why, the input it expects."""
    from ..transforms._fuse import analyse

    return analyse(transform, input)


def _limit(name: str, value: int | None) -> int | None:
    if value is None:
        return None
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"expected an int or None {name}, got {value!r} ({type(value).__name__})") from None


def _short_repr(t: Any, limit: int = 160) -> str:
    text = " ".join(repr(t).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


class FileListDataset(FusedBatchMixin, Dataset):
    """Images from a list of files, with optional labels, decoded by spdl_torch's native decoders.

    Args:
        paths: image files (any format :func:`spdl_torch.io.decode_image` reads).
        labels: one label per path (``None``: the targets are the indices).
        transform: a ``torchvision.transforms.v2`` transform of a uint8 Tensor[3, H, W], or a classic
            ``torchvision.transforms`` (v1) pipeline of a PIL image (as torchvision's ``ImageFolder`` feeds them);
            its fusable prefix (see :mod:`spdl_torch.transforms`) runs inside one native ``decode_images``
            call per batch.
        target_transform: applied to the label.
        seed: base seed of the per-sample random streams (``None``: drawn from torch's global RNG once).
        max_pixels: decode no image with more than this many pixels (``spdl_torch.DecodeError``);
            ``None``: :data:`spdl_torch.io.limits.image_pixels` at each fetch; 0 or less: no limit.
        max_bytes: read no file larger than this many bytes (``OSError``, errno ``EFBIG``, checked before
            reading); ``None``: :data:`spdl_torch.io.limits.image_bytes` (0: no limit) at each fetch.
        warn_unfused: warn (``UserWarning``, once, here) when the transform is not fully fused, naming the
            first transform that is not and what it costs.
        require_fused: raise ``ValueError`` instead unless the whole transform is fused.

    ``ds[i]`` is ``(image, target)``; ``ds.__getitems__(indices)`` the list of them, decoded in one call
    (images are views of one batch tensor: use :func:`collate` to get it back without a copy). ``repr(ds)``
    shows the fused plan and the remainder.

    Raises:
        ValueError: ``labels`` and ``paths`` differ in length; ``require_fused=True`` and the transform is
            not fully fused.
        TypeError: a non-integer ``max_pixels`` / ``max_bytes``.
    """

    def __init__(
        self,
        paths: Sequence[str | os.PathLike],
        labels: Sequence[Any] | None = None,
        transform: Callable | None = None,
        target_transform: Callable | None = None,
        seed: int | None = None,
        *,
        max_pixels: int | None = None,
        max_bytes: int | None = None,
        warn_unfused: bool = True,
        require_fused: bool = False,
    ) -> None:
        self.paths = [os.fspath(p) for p in paths]
        if labels is not None and len(labels) != len(self.paths):
            raise ValueError(f"FileListDataset: expected one label per path, got {len(labels)=} for {len(self.paths)} paths")
        self.labels = list(labels) if labels is not None else None
        self.transform = transform
        self.target_transform = target_transform
        self._init_fused(seed)
        self._init_fusion(warn_unfused, require_fused, True, max_pixels, max_bytes)

    def __len__(self) -> int:
        return len(self.paths)

    def _path(self, index: int) -> str:
        return self.paths[index]

    def _target(self, index: int) -> Any:
        return index if self.labels is None else self.labels[index]

    def _load(self, path: str) -> Any:
        return self._decode(path)

    def __repr__(self) -> str:
        plan = self._plan_text().replace("\n", "\n    ")
        return f"{type(self).__name__}(num_samples={len(self)}, fused={self.plan is not None},\n    {plan}\n)"
