"""What travels between the consumer, the request source and the worker threads of one epoch."""

from __future__ import annotations

import dataclasses
from typing import Any

from torch._utils import ExceptionWrapper

__all__ = ["EMPTY", "Exhausted", "Failure", "Fatal", "Request", "Result", "Stopped", "describe_indices"]

EMPTY = object()  # a batch all of whose samples were skipped under on_error="skip"


class Stopped(Exception):
    """Raised inside a fetch whose epoch was stopped (between two samples): its result is discarded."""


@dataclasses.dataclass(slots=True)
class Request:
    """One batch (or sample) to load: position ``seq`` in the epoch; map-style: ``indices`` from the sampler and
    ``after``, the ``seq`` of the request handed out just before it (``None`` for the first); iterable or
    ``worker_rng="per_worker"``: the ``worker`` (= pool thread) that must load it."""

    seq: int
    indices: Any = None
    worker: int | None = None
    after: int | None = None


class Failure:
    """An exception raised while loading, carried to the consumer with where it happened. The traceback is
    formatted there (formatting in a worker thread can hit a parser race of Python 3.11)."""

    __slots__ = ("exc", "where")

    def __init__(self, exc: BaseException, where: str) -> None:
        self.exc = exc
        self.where = where

    def reraise(self) -> None:
        """Raises the exception as torch's loader does (same type, the message with the worker's traceback),
        keeping the original's attributes: a ``DecodeError``'s ``path``, ``reason`` and ``sample_index``, an
        ``OSError``'s ``errno`` (torch's rebuilt exception loses them; an OSError's ``strerror`` and ``filename``
        would change its message, which stays torch's)."""
        exc, self.exc = self.exc, None
        wrapper = ExceptionWrapper(exc_info=(type(exc), exc, exc.__traceback__), where=self.where)
        attrs = dict(getattr(exc, "__dict__", {}))
        if isinstance(exc, OSError):
            attrs["errno"] = exc.errno
        del exc
        try:
            wrapper.reraise()
        except BaseException as rebuilt:
            if type(rebuilt) is wrapper.exc_type:
                for name, value in attrs.items():
                    try:
                        setattr(rebuilt, name, value)
                    except (AttributeError, TypeError):
                        pass
            raise


class Fatal:
    """``worker_init_fn`` failed on a thread: the epoch ends after the consumer raises it."""

    __slots__ = ("wrapper",)

    def __init__(self, wrapper: ExceptionWrapper) -> None:
        self.wrapper = wrapper


@dataclasses.dataclass(slots=True)
class Exhausted:
    """An ``IterableDataset`` worker's iterator is exhausted."""

    seq: int
    worker: int


@dataclasses.dataclass(slots=True)
class Result:
    seq: int  # position of the request in the epoch
    data: Any  # the batch, EMPTY or a Failure
    worker: int = -1  # the worker that loaded it (num_workers=0: -1)
    state: Any = None  # iterable datasets: dataset.state_dict() right after producing it


def describe_indices(indices: Any) -> str:
    if isinstance(indices, (list, tuple)):
        return f"sample indices {list(indices)}"
    return f"sample index {indices}"
