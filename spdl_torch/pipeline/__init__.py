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

The engine imports no torch. A pipeline as a torch ``IterableDataset``:
``spdl_torch.datasets.PipelineDataset(pipeline)``.
"""

from ._builder import PipelineBuilder
from ._failures import PipelineFailure
from ._pipeline import Pipeline

__all__ = ["Pipeline", "PipelineBuilder", "PipelineFailure"]
