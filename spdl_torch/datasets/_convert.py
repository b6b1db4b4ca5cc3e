"""Loading the datasets users already have natively: torchvision's folder datasets and datasets that declare
their sources (``spdl_source``), read off the user's object and run through the fused batch op.

A :class:`Converter` belongs to one :class:`~spdl_torch.DataLoader`. For a dataset leaf (what ``Subset`` and
``ConcatDataset`` hold) it answers :meth:`Converter.view`: a :class:`SourceView` (a ``FusedBatchMixin``
dataset that reads the leaf's ``(source, target)`` list and its transform, never changing the leaf) or
``None``, with the reason in :meth:`Converter.describe`. The loader makes its converter through
``spdl_torch._native`` (this module provides the factory when ``spdl_torch.datasets`` is imported). The decision
is by method identity against torchvision's own class (``type(ds).__getitem__ is DatasetFolder.__getitem__``, the loader ``is`` torchvision's
``default_loader`` / ``pil_loader``), never by ``isinstance`` alone:

* ``torchvision.datasets.DatasetFolder`` and its subclasses that keep its ``__getitem__`` and ``__len__`` and
  define no ``__getitems__`` (``ImageFolder``, ``ImageNet``, ``EuroSAT``, ...) whose ``loader`` is torchvision's
  ``default_loader`` (with the PIL image backend) or ``pil_loader``: sample ``i`` is ``samples[i]`` (path,
  class index), the transform is given a PIL image (its v2 transforms run Pillow's kernels: the fuser is told so)
  decoded without the EXIF orientation (``pil_loader`` does not apply it), ``target_transform`` runs on the class
  index.
* a dataset whose class defines ``spdl_source(index) -> (source, target)`` (a path, or the encoded bytes as
  ``bytes`` / a 1-D uint8 tensor, and the target as the dataset returns it) and has a ``transform`` attribute:
  the transform is given what spdl_torch's own datasets give it (a PIL image for a v1 pipeline, see
  :mod:`spdl_torch.transforms`).

Either way the transform must fuse at least its geometry (else nothing is gained: the dataset runs as written),
and the views of one leaf's copies share one analysis of the transform object. Each view is made again when
the leaf's ``samples``, ``transform``, ``target_transform`` or ``loader`` is no longer the object it was made
from (a ``worker_init_fn`` that sets them on its worker's copy is obeyed).
"""

from __future__ import annotations

import os
import threading
import weakref
from collections.abc import Sequence
from typing import Any

import torch
from torch.utils.data import Dataset

from .._native import leaves, set_converter_factory
from ._fused import FusedBatchMixin, _short_repr, analysis_of
from ._pil_wide import as_pillow_decodes

__all__ = ["Converter", "SourceView"]

_TV_ATTRS = ("samples", "transform", "target_transform", "loader")


def _torchvision_folder() -> tuple[type, tuple[Any, ...]] | None:
    """torchvision's ``DatasetFolder`` and its PIL loaders (``None`` without torchvision)."""
    try:
        from torchvision.datasets.folder import DatasetFolder, default_loader, pil_loader
    except ImportError:  # pragma: no cover - torchvision is a dependency
        return None
    return DatasetFolder, (default_loader, pil_loader)


def _folder_reason(ds: Any) -> str | None:
    """Why the torchvision folder dataset ``ds`` cannot load natively ("" when it can); ``None``: not one."""
    found = _torchvision_folder()
    if found is None or not isinstance(ds, found[0]):
        return None
    folder, loaders = found
    cls, name = type(ds), type(ds).__name__
    own = [m for m in ("__getitem__", "__len__") if getattr(cls, m) is not getattr(folder, m)]
    if getattr(cls, "__getitems__", None) is not None:
        own.append("__getitems__")
    if cls.__getattribute__ is not object.__getattribute__ or hasattr(cls, "__getattr__"):
        own.append("__getattribute__" if cls.__getattribute__ is not object.__getattribute__ else "__getattr__")
    if own:
        return f"{name} overrides {', '.join(own)}: runs as written"
    loader = getattr(ds, "loader", None)
    if loader not in loaders:
        return f"a loader of its own ({getattr(loader, '__qualname__', type(loader).__name__)}): runs as written"
    if loader is loaders[0]:
        from torchvision import get_image_backend

        if get_image_backend() != "PIL":
            return f"torchvision's image backend is {get_image_backend()!r} (default_loader then does not use Pillow)"
    if getattr(ds, "transform", None) is None:
        return "no transform: its samples are PIL images, which the fused op does not make"
    return ""


def _source_reason(ds: Any) -> str | None:
    """Why a dataset declaring ``spdl_source`` cannot load natively ("" when it can); ``None``: it declares none."""
    if not callable(getattr(type(ds), "spdl_source", None)):
        return None
    if getattr(ds, "transform", None) is None:
        return "spdl_source without a transform: nothing to fuse"
    return ""


def _held(leaf: Any) -> tuple[Any, ...]:
    """What a conversion of ``leaf`` reads (its samples, transform, target_transform, loader): an answer is made
    again when one of them was replaced (compared by identity, :func:`_same`)."""
    return tuple(getattr(leaf, a, None) for a in _TV_ATTRS)


def _same(a: tuple[Any, ...], b: tuple[Any, ...]) -> bool:
    return all(x is y for x, y in zip(a, b))


class SourceView(FusedBatchMixin, Dataset):
    """The native loading of a user's dataset: sample ``i``'s ``(source, target)`` from the user's object, its
    transform's fusable prefix in one ``decode_images`` call per batch (see :mod:`spdl_torch.transforms`), the
    remainder after it; random transforms draw from the loader's per-sample seeds. Made by :class:`Converter`."""

    def __init__(self, source: Any, kind: str, analysis: Any) -> None:
        self.source = source
        self.kind = kind  # "folder": a torchvision DatasetFolder; "spdl_source": the protocol
        self.transform = source.transform
        self.target_transform = getattr(source, "target_transform", None) if kind == "folder" else None
        self._made_from = {a: getattr(source, a, None) for a in (_TV_ATTRS if kind == "folder" else ("transform",))}
        # seed 0, not drawn: a view is made during a fetch, where drawing from torch's global RNG would shift what
        # the user's code draws (a collate_fn's MixUp); in a loader the seeds come from its base seed anyway
        self._init_fused(0, True, input=analysis.input, analysis=analysis)
        self._seed_given = False
        self._init_fusion(False, False, True, None, None)

    @property
    def input(self) -> str:
        """What the transform is given: ``"pil"`` or ``"tensor"``."""
        return self._analysis.input

    def fresh(self) -> bool:
        """Whether the user's object still holds what this view was made from."""
        return all(getattr(self.source, a, None) is v for a, v in self._made_from.items())

    def __len__(self) -> int:
        return len(self.source)

    def _path(self, index: int) -> str:
        return self.source.samples[index][0]

    def _target(self, index: int) -> Any:
        return self.source.samples[index][1]

    def _sources(self, indices: Sequence[int]) -> tuple[list[Any], list[str], list[Any]]:
        if self.kind == "folder":  # pil_loader's pixels also for the files Pillow opens in a 16-bit mode
            datas, paths, targets = super()._sources(indices)
            return [as_pillow_decodes(d) for d in datas], paths, targets
        from ..io import read_file

        max_bytes = self._max_bytes()
        datas, names, targets = [], [], []
        for i in indices:
            src, target = _pair(self.source.spdl_source(i), i, type(self.source).__name__)
            data, name = _encoded(src, i, type(self.source).__name__, max_bytes, read_file)
            datas.append(data)
            names.append(name)
            targets.append(target)
        return datas, names, targets

    def describe(self) -> str:
        """What runs where, for ``repr(loader)``."""
        return self._plan_text()

    def __repr__(self) -> str:
        return f"SourceView({type(self.source).__name__}, {self.kind}, num_samples={len(self)})"


def _pair(got: Any, index: int, owner: str) -> tuple[Any, Any]:
    """``spdl_source``'s answer as ``(source, target)``.

    Raises:
        TypeError: an answer that is not a tuple or list of two.
    """
    if isinstance(got, (tuple, list)) and len(got) == 2:
        return got[0], got[1]
    what = f"a {type(got).__name__} of {len(got)}" if isinstance(got, (tuple, list)) else type(got).__name__
    raise TypeError(f"{owner}.spdl_source({index}): expected a (source, target) pair, got {what}")


def _encoded(src: Any, index: int, owner: str, max_bytes: int, read_file: Any) -> tuple[torch.Tensor, str]:
    """``spdl_source``'s source as a 1-D uint8 tensor and the name errors give it.

    Raises:
        TypeError: a source that is not a path, bytes-like or a 1-D uint8 tensor.
    """
    if isinstance(src, (str, os.PathLike)):
        path = os.fspath(src)
        return read_file(path, max_bytes=max_bytes), path
    name = f"{owner}.spdl_source({index})"
    if isinstance(src, torch.Tensor):
        if src.dtype != torch.uint8 or src.dim() != 1:
            raise TypeError(f"{name}: expected a path, bytes or a 1-D uint8 tensor, got a {src.dtype} tensor of "
                            f"shape {tuple(src.shape)}")
        return src, name
    if isinstance(src, (bytes, bytearray, memoryview)):  # read-only memory is copied (torch wants writable)
        writable = isinstance(src, bytearray) or isinstance(src, memoryview) and not src.readonly and src.contiguous
        data = src if writable else bytearray(src)
        return torch.frombuffer(data, dtype=torch.uint8) if len(data) else torch.empty(0, dtype=torch.uint8), name
    raise TypeError(f"{name}: expected a path, bytes or a 1-D uint8 tensor as the source, got {type(src).__name__}")


class Converter:
    """The native views of one loader's dataset leaves (see the module's docstring). Thread-safe; copies and
    pickles hold no view (each is made again where it is used)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._views: dict[int, tuple[weakref.ref, SourceView | None, str, tuple]] = {}
        self._analyses: dict[int, tuple[Any, Any]] = {}  # id(transform) -> (transform, Analysis)

    def __getstate__(self) -> dict[str, Any]:
        return {}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__()

    def view(self, leaf: Any) -> SourceView | None:
        """The native view of ``leaf``, or ``None`` (not convertible: :meth:`reason` says why). Made again when
        the leaf no longer holds what the answer was made from."""
        entry = self._views.get(id(leaf))
        if entry is not None and entry[0]() is leaf and _same(entry[3], _held(leaf)):
            return entry[1]
        view, reason = self._convert(leaf)
        try:
            ref = weakref.ref(leaf, lambda _r, key=id(leaf): self._views.pop(key, None))
        except TypeError:  # an object without weak references: not cached
            return view
        with self._lock:
            self._views[id(leaf)] = (ref, view, reason, _held(leaf))
        return view

    def reason(self, leaf: Any) -> str:
        """Why ``leaf`` does not load natively ("" when it does, or when it is spdl_torch's own)."""
        self.view(leaf)
        entry = self._views.get(id(leaf))
        return self._convert(leaf)[1] if entry is None else entry[2]

    def describe(self, dataset: Any, mode: str) -> list[str]:
        """Lines for ``repr(loader)``: per dataset of ``dataset`` (``Subset`` / ``ConcatDataset`` looked into)
        that is not spdl_torch's own, whether it loads natively (and what fused) or why not; ``mode``: the
        loader's resolved worker mode (``"process"`` runs torch's own fetch: nothing is converted)."""
        lines = []
        for leaf in leaves(dataset) or []:
            view, why = self.view(leaf), self.reason(leaf)
            name = type(leaf).__name__
            if view is not None and mode != "process":
                plan = view.describe().replace("\n", "\n    ")
                lines.append(f"{name} loads natively ({len(leaf)} samples; the transform's input: "
                             f"{'PIL images' if view.input == 'pil' else 'tensors'}):\n    {plan}")
            elif view is not None:
                lines.append(f"{name} not converted: worker_mode='process' runs torch's own fetch")
            elif why:
                lines.append(f"{name} not converted: {why}")
        return lines

    def _analysis(self, transform: Any, kind: str) -> Any:
        """The analysis of ``transform`` for a view of ``kind``, one per transform object (its plan shared by
        every view of it: the remainder processes of ``worker_mode="hybrid"`` know plans by identity)."""
        with self._lock:
            entry = self._analyses.get(id(transform))
            if entry is not None and entry[0] is transform and entry[1][0] == kind:
                return entry[1][1]
        analysis = analysis_of(transform, "pil" if kind == "folder" else None)
        if kind == "folder" and analysis.plan is not None:
            # pil_loader (Image.open + convert("RGB")) does not turn the image by its EXIF orientation
            analysis.plan.op_kwargs["apply_exif_orientation"] = False
        with self._lock:
            self._analyses[id(transform)] = (transform, (kind, analysis))
        return analysis

    def _convert(self, leaf: Any) -> tuple[SourceView | None, str]:
        if callable(getattr(leaf, "spdl_native_loading", None)):  # spdl_torch's own, or one that declares it
            return None, ""
        kind, why = "folder", _folder_reason(leaf)
        if why is None:
            kind, why = "spdl_source", _source_reason(leaf)
        if why is None:
            return None, (f"a dataset of its own ({type(leaf).__name__}): runs as written "
                          "(define spdl_source(index) to load it natively)")
        if why:
            return None, why
        analysis = self._analysis(leaf.transform, kind)
        if analysis.plan is None:
            return None, (f"the transform does not fuse ({_short_repr(analysis.unfused, 80)}: {analysis.reason}): "
                          "runs as written")
        return SourceView(leaf, kind, analysis), ""


set_converter_factory(Converter)
