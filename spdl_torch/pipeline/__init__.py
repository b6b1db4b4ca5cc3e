"""Thread-based data-loading pipeline engine (the SPDL design).

A scheduler thread runs an asyncio event loop; each stage (sync function on a thread pool, ``async``
function on the loop, or a generator of either kind) has its own concurrency; stages are connected by
bounded queues, so backpressure propagates to the source and memory stays bounded whatever the
data-set size; the consumer thread only takes finished items.

Example::

    from spdl_torch.pipeline import PipelineBuilder
    from spdl_torch.io import decode_image

    pipeline = (
        PipelineBuilder()
        .add_source(paths)
        .pipe(decode_image, concurrency=8, output_order="completion")
        .aggregate(32)
        .add_sink(4)
        .build(num_threads=8, max_failures=0.01)
    )
    for epoch in range(3):
        for batch in pipeline:
            ...
    print(pipeline.format_stats())

The engine imports no torch. ``PipelineDataset`` (a pipeline as a torch ``IterableDataset``) is defined in
``spdl_torch.datasets`` and imported from here on first use.
"""

from typing import Any

from ._builder import PipelineBuilder
from ._failures import MIN_ITEMS_FOR_RATE, PipelineFailure
from ._pipeline import Pipeline
from ._run import STOP_TIMEOUT_S
from ._stats import format_stats

__all__ = [
    "MIN_ITEMS_FOR_RATE",
    "Pipeline",
    "PipelineBuilder",
    "PipelineDataset",
    "PipelineFailure",
    "STOP_TIMEOUT_S",
    "format_stats",
]


def __getattr__(name: str) -> Any:
    # PipelineDataset subclasses torch's IterableDataset: imported on first use, so the engine needs no torch
    if name == "PipelineDataset":
        from ..datasets._pipeline import PipelineDataset

        return PipelineDataset
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
