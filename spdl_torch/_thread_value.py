"""``ThreadValue``: one value per thread, set for the length of a block (the loader context, the batch-order hook)."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any

__all__ = ["ThreadValue"]


class ThreadValue:
    """A value of each thread: ``None`` until :meth:`scope` sets it."""

    def __init__(self) -> None:
        self._local = threading.local()

    def get(self) -> Any:
        """The calling thread's value (``None`` outside a :meth:`scope`)."""
        return getattr(self._local, "value", None)

    @contextlib.contextmanager
    def scope(self, value: Any) -> Iterator[None]:
        """Sets the calling thread's value for the block, then restores the one before (scopes nest)."""
        prev = self.get()
        self._local.value = value
        try:
            yield
        finally:
            self._local.value = prev
