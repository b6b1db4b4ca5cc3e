"""The loader context: what a :class:`~spdl_torch.DataLoader` iteration tells the datasets it fetches from (its
base seed and epoch, and how to run a fused plan for it), kept per thread for the length of a fetch. The datasets
read it here; the loader sets it (``dataloader/_fetch.py``)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

from ._thread_value import ThreadValue

__all__ = ["LoaderContext", "context_scope", "loader_context"]

_current = ThreadValue()


@dataclasses.dataclass(frozen=True, slots=True)
class LoaderContext:
    """The iteration of a :class:`~spdl_torch.DataLoader` that is fetching on the calling thread.

    Attributes:
        base_seed, epoch: what the datasets' per-sample random streams derive from (unless a dataset has a seed
            of its own), so each iterator's epoch travels with its own requests.
        run_plan: ``run_plan(plan, datas, seeds, *, base_seed, epoch, indices, max_pixels)`` runs a fused plan
            the way this loader needs it (the batch allocated pinned, ``ToDtype`` / ``Normalize`` left to the
            device, the per-sample remainder in worker processes); ``None``: call the plan itself.
    """

    base_seed: int
    epoch: int
    run_plan: Callable[..., Any] | None = None


def loader_context() -> LoaderContext | None:
    """The :class:`LoaderContext` of the loader fetching on this thread (also with ``num_workers=0``); ``None``
    outside a fetch."""
    return _current.get()


def context_scope(context: LoaderContext | None) -> AbstractContextManager[None]:
    """Sets the calling thread's loader context for one fetch (a context manager), then restores the one before."""
    return _current.scope(context)
