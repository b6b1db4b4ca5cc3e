"""``PipelineDataset``: a :class:`~spdl_torch.pipeline.Pipeline` as a torch ``IterableDataset``. It lives
beside the datasets, not in the engine, so that ``spdl_torch.pipeline`` imports no torch (and nothing of the
datasets)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from torch.utils.data import IterableDataset

from ..pipeline import Pipeline

__all__ = ["PipelineDataset"]


class PipelineDataset(IterableDataset):
    """An :class:`~torch.utils.data.IterableDataset` whose iteration is one run of ``pipeline``.

    Use it with ``torch.utils.data.DataLoader(ds, batch_size=None)`` (the pipeline already does the
    batching with ``aggregate``) and ``num_workers=0``: the pipeline runs its own threads; worker
    processes would each run the whole pipeline (duplicated items) and need a picklable source and
    stage functions.

    ``copy.copy`` shares the pipeline; ``copy.deepcopy`` and ``pickle`` raise ``TypeError`` (the pipeline's
    threads belong to this process), and so does a copy of a loader over it.

    Raises:
        TypeError: ``pipeline`` is not a :class:`~spdl_torch.pipeline.Pipeline`.
    """

    def __init__(self, pipeline: Pipeline) -> None:
        if not isinstance(pipeline, Pipeline):
            raise TypeError(f"expected a Pipeline, got {type(pipeline).__name__}")
        self.pipeline = pipeline

    def __iter__(self) -> Iterator[Any]:
        return iter(self.pipeline)

    def __copy__(self) -> PipelineDataset:
        out = type(self).__new__(type(self))
        out.__dict__.update(self.__dict__)
        return out

    def __reduce_ex__(self, protocol: Any) -> Any:
        raise TypeError(
            f"{type(self).__name__} cannot be pickled or deep-copied: its Pipeline runs its own threads in this "
            "process; build a new pipeline for the copy (PipelineDataset(PipelineBuilder(...).build())) and load it "
            "in the main process (DataLoader(dataset, batch_size=None, num_workers=0))")
