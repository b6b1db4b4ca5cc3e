"""What a dataset declares about its loading, which :class:`spdl_torch.DataLoader` (``worker_mode="auto"``)
reads: ``spdl_native_loading() -> bool`` (its samples come from spdl_torch's native ops, which run without the
GIL) and ``spdl_python_remainder() -> bool`` (they do, except a per-sample Python remainder); ``Subset`` (also
:class:`spdl_torch.distributed.DistributedShard`, one) and ``ConcatDataset`` / ``ChainDataset`` answer for the
datasets inside.

A dataset that declares neither may still load natively through a loader's converter (torchvision's folder
datasets, a class with ``spdl_source``): the datasets part provides the converter (``set_converter_factory``, when
``spdl_torch.datasets`` is imported), the loader makes one (``new_converter``) and passes it to the functions here,
which then answer for such a dataset through its native view (the converter's ``view(dataset)``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from torch.utils.data import ChainDataset, ConcatDataset, Subset

__all__ = ["declares_native", "declares_remainder", "leaves", "new_converter", "set_converter_factory"]

_converter_factory: Callable[[], Any] | None = None


def set_converter_factory(factory: Callable[[], Any]) -> None:
    """Sets what :func:`new_converter` calls (the datasets part's ``Converter``)."""
    global _converter_factory
    _converter_factory = factory


def new_converter() -> Any:
    """A converter for one loader: ``view(dataset)`` (the native view of a dataset leaf, or ``None``) and
    ``describe(dataset, mode)`` (lines for ``repr(loader)``); ``None`` before ``spdl_torch.datasets`` was
    imported (the loader imports it)."""
    return None if _converter_factory is None else _converter_factory()


def _declares(dataset: Any, method: str, converter: Any = None) -> bool:
    fn = getattr(dataset, method, None)
    if callable(fn):
        return bool(fn())
    view = converter.view(dataset) if converter is not None else None
    return view is not None and bool(getattr(view, method)())


def leaves(dataset: Any) -> list[Any] | None:
    """The datasets inside ``Subset`` / ``ConcatDataset`` / ``ChainDataset`` (``None``: an empty one)."""
    if isinstance(dataset, Subset):
        return leaves(dataset.dataset)
    if isinstance(dataset, (ConcatDataset, ChainDataset)):
        out = []
        for d in dataset.datasets:
            inner = leaves(d)
            if inner is None:
                return None
            out += inner
        return out or None
    return [dataset]


def declares_native(dataset: Any, converter: Any = None) -> bool:
    """Whether ``dataset`` declares native loading (its ``spdl_native_loading()`` returns true, or that of its
    native view from ``converter``; for ``Subset``, ``ConcatDataset`` and ``ChainDataset``: every dataset inside
    does)."""
    inner = leaves(dataset)
    return inner is not None and all(_declares(d, "spdl_native_loading", converter) for d in inner)


def declares_remainder(dataset: Any, converter: Any = None) -> bool:
    """Whether ``dataset`` loads natively except a per-sample Python remainder (its ``spdl_python_remainder()``
    returns true, or that of its native view; for ``Subset``, ``ConcatDataset`` and ``ChainDataset``: every
    dataset inside is native or has such a remainder, and one at least has)."""
    inner = leaves(dataset)
    if inner is None:
        return False
    remainder = [_declares(d, "spdl_python_remainder", converter) for d in inner]
    return any(remainder) and all(r or _declares(d, "spdl_native_loading", converter)
                                  for d, r in zip(inner, remainder))
