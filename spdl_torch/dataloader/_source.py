"""How an epoch's requests reach the engine: the pipeline's source object (the current epoch's request source,
each request paired with that epoch's fetch), the credited map-style source, and the stage function."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ._messages import Request

__all__ = ["Credited", "SourceRef", "run_request", "worker_of"]


class SourceRef:
    """The pipeline's source. A run iterates the source of the epoch current when it starts (persistent workers
    keep one pipeline for many epochs) and pairs each request with that epoch's fetch. (Async iterators, not
    async generators: nothing is left for the loop's asyncgen finalizer when a run is stopped.)"""

    def __init__(self) -> None:
        self.source: Any = None
        self.fetch: Any = None

    def __aiter__(self) -> Any:
        return _Pairs(self.fetch, self.source.__aiter__())


class _Pairs:
    def __init__(self, fetch: Any, requests: Any) -> None:
        self.fetch, self.requests = fetch, requests

    async def __anext__(self) -> tuple:
        return self.fetch, await self.requests.__anext__()


class Credited:
    """Map-style requests from the sampler, drawn on the event loop; the engine's ``max_in_flight`` credits bound
    how far they run ahead of the consumer."""

    def __init__(self, requests: Iterator[Request]) -> None:
        self.requests = requests

    def __aiter__(self) -> Any:
        return self

    async def __anext__(self) -> Request:
        try:
            return next(self.requests)
        except StopIteration:
            raise StopAsyncIteration from None


def run_request(item: tuple) -> Any:
    """The fetch stage function: runs a request with the fetch of the epoch it belongs to."""
    fetch, request = item
    return fetch.run(request)


def worker_of(item: tuple) -> int:
    return item[1].worker
