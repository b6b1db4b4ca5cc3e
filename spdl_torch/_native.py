"""What a dataset declares about its loading, which :class:`spdl_torch.DataLoader` (``worker_mode="auto"``) and
:class:`spdl_torch.distributed.DistributedShard` read: ``spdl_native_loading() -> bool`` (its samples come from
spdl_torch's native ops, which run without the GIL) and ``spdl_python_remainder() -> bool`` (they do, except a
per-sample Python remainder); ``Subset`` and ``ConcatDataset`` / ``ChainDataset`` answer for the datasets inside."""

from __future__ import annotations

from typing import Any

from torch.utils.data import ChainDataset, ConcatDataset, Subset

__all__ = ["declares_native", "declares_remainder", "leaves"]


def _declares(dataset: Any, method: str) -> bool:
    fn = getattr(dataset, method, None)
    return bool(fn()) if callable(fn) else False


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


def declares_native(dataset: Any) -> bool:
    """Whether ``dataset`` declares native loading (its ``spdl_native_loading()`` returns true; for ``Subset``,
    ``ConcatDataset`` and ``ChainDataset``: every dataset inside does)."""
    inner = leaves(dataset)
    return inner is not None and all(_declares(d, "spdl_native_loading") for d in inner)


def declares_remainder(dataset: Any) -> bool:
    """Whether ``dataset`` loads natively except a per-sample Python remainder (its ``spdl_python_remainder()``
    returns true; for ``Subset``, ``ConcatDataset`` and ``ChainDataset``: every dataset inside is native or has
    such a remainder, and one at least has)."""
    inner = leaves(dataset)
    if inner is None:
        return False
    remainder = [_declares(d, "spdl_python_remainder") for d in inner]
    return any(remainder) and all(r or _declares(d, "spdl_native_loading") for d, r in zip(inner, remainder))
