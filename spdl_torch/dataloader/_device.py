"""``DataLoader(device="cuda")``: the iterator's batches go through :class:`spdl_torch.cuda.DeviceTransfer`,
``transfer_depth`` batches ahead of the consumer; a fused batch's pending finish (``_finish.py``) runs on its
device copy.

A batch counts as yielded (``state_dict()``) only when the consumer takes it, so batches still in flight are
loaded again after a resume. A worker's failure keeps its place in the order: the batches before it are
returned first, then it is raised. An error of the engine itself (timeout, the sampler) is raised once the
batches before it were taken.
"""

from __future__ import annotations

import collections
from collections.abc import Callable
from typing import Any

import torch

from ._messages import Failure, Result

__all__ = ["DeviceFeed", "pin_batch"]


def pin_batch(data: Any) -> Any:
    """torch's ``pin_memory`` of a batch, except that tensors already pinned (a fused batch that
    ``decode_images`` allocated pinned) are returned as they are: no second copy."""
    from torch.utils.data._utils.pin_memory import pin_memory

    if isinstance(data, torch.Tensor):
        return data if data.is_pinned() else data.pin_memory()
    if type(data) is list:
        return [pin_batch(x) for x in data]
    if type(data) is tuple:
        return tuple(pin_batch(x) for x in data)
    if type(data) is dict:
        return {k: pin_batch(v) for k, v in data.items()}
    return pin_memory(data)


class DeviceFeed:
    """The consumer side of the device copy: results taken from the engine ahead, their batches submitted to
    the transfer, handed out in order."""

    def __init__(self, device: torch.device, depth: int) -> None:
        from ..cuda import DeviceTransfer
        from ._finish import pending_finish

        self.transfer = DeviceTransfer(device, depth, after_copy=pending_finish)
        self.queue: collections.deque[tuple[Result, bool]] = collections.deque()
        self.ended = False
        self.error: BaseException | None = None

    def has_more(self) -> bool:
        """Whether batches or an error are still to be handed out after the engine's epoch ended."""
        return bool(self.queue) or self.error is not None

    def next(self, next_result: Callable[[], Result], mark_yielded: Callable[[Result], None]) -> Any:
        queue = self.queue
        while not self.ended and len(queue) < self.transfer.depth:
            try:
                result = next_result()
            except StopIteration:
                self.ended = True
                break
            except BaseException as e:  # noqa: BLE001 -- raised after the batches before it
                self.ended, self.error = True, e
                break
            copied = not isinstance(result.data, Failure)
            if copied:
                self.transfer.submit(result.data)
            queue.append((result, copied))
        if not queue:
            error, self.error = self.error, None
            if error is not None:
                raise error
            raise StopIteration
        result, copied = queue.popleft()
        mark_yielded(result)
        if not copied:
            result.data.reraise()
        return self.transfer.take()

    def reset(self) -> None:
        self.queue.clear()
        self.transfer.clear()
        self.ended = False
        self.error = None
