"""``PipelineDataset``: a :class:`~spdl_torch.pipeline.Pipeline` as a torch ``IterableDataset``. It lives
beside the datasets, not in the engine, so that ``spdl_torch.pipeline`` imports no torch."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from torch.utils.data import IterableDataset

from ..pipeline._pipeline import Pipeline

__all__ = ["PipelineDataset"]


class PipelineDataset(IterableDataset):
    """An :class:`~torch.utils.data.IterableDataset` whose iteration is one run of ``pipeline``.

    Use it with ``torch.utils.data.DataLoader(ds, batch_size=None)`` (the pipeline already does the
    batching with ``aggregate``) and ``num_workers=0``: the pipeline runs its own threads; worker
    processes would each run the whole pipeline (duplicated items) and need a picklable source and
    stage functions. Also importable as ``spdl_torch.pipeline.PipelineDataset``.

    Raises:
        TypeError: ``pipeline`` is not a :class:`~spdl_torch.pipeline.Pipeline`.
    """

    def __init__(self, pipeline: Pipeline) -> None:
        if not isinstance(pipeline, Pipeline):
            raise TypeError(f"expected a Pipeline, got {type(pipeline).__name__}")
        self.pipeline = pipeline

    def __iter__(self) -> Iterator[Any]:
        return iter(self.pipeline)
