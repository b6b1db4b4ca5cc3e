"""The transfer stage: batches from the host to a CUDA device on a dedicated stream.

Per batch, on the side stream: every tensor is copied with ``non_blocking=True`` (from pinned memory the copy is
asynchronous, and torch's caching host allocator holds the pinned block until the copy is done), then what
``after_copy`` gives for the tensor runs on its copy (a loader's fused batches: ``ToDtype`` + ``Normalize`` of a
uint8 batch, ``dataloader/_finish.py``), then an event is recorded. When the consumer takes the batch, its current stream waits for that event only (not for the
copies of later batches), and every device tensor of the batch is ``record_stream``-ed on the consumer's
stream, so the caching allocator does not hand its memory to another allocation while the consumer's queued
kernels still read it. ``depth`` batches are in flight: submitted, not yet taken.

The CUDA calls go through a backend object (:class:`CudaBackend`), so the bookkeeping is tested with fakes on
machines without a GPU.
"""

from __future__ import annotations

import collections
import dataclasses
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import torch
from torch.utils._pytree import tree_flatten, tree_map

from .._build_info import check_cuda

__all__ = ["CudaBackend", "DeviceTransfer", "InFlight", "to_device"]


class CudaBackend:
    """The CUDA calls of a transfer (streams and events of torch.cuda)."""

    def __init__(self, device: torch.device) -> None:
        self.device = device

    def new_stream(self) -> Any:
        return torch.cuda.Stream(device=self.device)

    def current_stream(self) -> Any:
        return torch.cuda.current_stream(self.device)

    def new_event(self) -> Any:
        return torch.cuda.Event()

    def use_stream(self, stream: Any) -> Any:
        return torch.cuda.stream(stream)

    def copy(self, t: torch.Tensor) -> torch.Tensor:
        """``t`` on the device, queued on the current stream (asynchronous from pinned memory)."""
        return t.to(self.device, non_blocking=True)

    def record_stream(self, t: torch.Tensor, stream: Any) -> None:
        t.record_stream(stream)


@dataclasses.dataclass
class InFlight:
    """A submitted batch: its device copy (not yet safe to read on another stream) and the copy's event."""

    data: Any
    event: Any
    tensors: list[torch.Tensor]


def _device_of(device: str | torch.device) -> torch.device:
    dev = torch.device(device)
    if dev.type != "cuda":
        raise ValueError(f"DeviceTransfer: expected a CUDA device, got {str(device)!r}")
    return dev


class DeviceTransfer:
    """Copies batches to ``device`` on a side stream, ``depth`` batches ahead of the consumer.

    Args:
        device: a CUDA device (``"cuda"``, ``"cuda:1"``, ``torch.device``).
        depth: batches in flight on the device (>= 1): copied or being copied, not yet taken.
        backend: the CUDA calls (default :class:`CudaBackend`; tests pass fakes).
        after_copy: ``after_copy(host_tensor)`` -> a callable run on the tensor's device copy on the side stream
            (e.g. the normalisation of a uint8 batch), or ``None`` for nothing; default: nothing.

    Raises:
        ValueError: ``device`` is not a CUDA device, ``depth < 1``.
        RuntimeError: no CUDA (torch without CUDA, no GPU): the message says which.
    """

    def __init__(self, device: str | torch.device = "cuda", depth: int = 2, *, backend: Any = None,
                 after_copy: Callable[[torch.Tensor], Callable[[torch.Tensor], torch.Tensor] | None] | None = None
                 ) -> None:
        if isinstance(depth, bool) or not isinstance(depth, int) or depth < 1:
            raise ValueError(f"DeviceTransfer: expected an int depth >= 1, got {depth=}")
        self.device = _device_of(device)
        if backend is None:
            check_cuda(f"device={str(device)!r}", self.device)
            backend = CudaBackend(self.device)
        self.depth = depth
        self.backend = backend
        self.after_copy = after_copy
        self.stream = backend.new_stream()
        self._queue: collections.deque[InFlight] = collections.deque()

    def __len__(self) -> int:
        return len(self._queue)

    def full(self) -> bool:
        return len(self._queue) >= self.depth

    def _copy(self, t: torch.Tensor) -> torch.Tensor:
        out = self.backend.copy(t)
        finish = None if self.after_copy is None else self.after_copy(t)
        return out if finish is None else finish(out)

    def submit(self, data: Any) -> InFlight:
        """Queues the copy of ``data`` (tensors anywhere in lists, tuples, dicts; other values pass through)."""
        with self.backend.use_stream(self.stream):
            out = tree_map(lambda x: self._copy(x) if isinstance(x, torch.Tensor) else x, data)
            event = self.backend.new_event()
            event.record(self.stream)
        item = InFlight(out, event, [x for x in tree_flatten(out)[0] if isinstance(x, torch.Tensor)])
        self._queue.append(item)
        return item

    def take(self) -> Any:
        """The oldest submitted batch, safe to use on the consumer's current stream."""
        item = self._queue.popleft()
        current = self.backend.current_stream()
        current.wait_event(item.event)
        for t in item.tensors:
            self.backend.record_stream(t, current)
        return item.data

    def clear(self) -> None:
        """Drops the batches not taken (their memory returns to the allocator once their copies finish)."""
        self._queue.clear()


def to_device(batches: Iterable[Any], device: str | torch.device = "cuda", depth: int = 2, *,
              backend: Any = None) -> Iterator[Any]:
    """The transfer as a pipeline stage: yields each batch of ``batches`` (e.g. a
    :class:`~spdl_torch.pipeline.Pipeline`'s output) on ``device``, copied on a side stream ``depth`` batches
    ahead (see :class:`DeviceTransfer`). An exception from ``batches`` is raised after the batches before it.
    """
    transfer = DeviceTransfer(device, depth, backend=backend)
    it = iter(batches)
    while True:
        try:
            while not transfer.full():
                transfer.submit(next(it))
        except StopIteration:
            break
        except BaseException:
            while len(transfer):
                yield transfer.take()
            raise
        yield transfer.take()
    while len(transfer):
        yield transfer.take()
