"""Map-style fetching: the epoch's requests from the sampler (resumed past the batches already returned), batched
``__getitems__`` calls (also through ``Subset`` and ``ConcatDataset``), ``on_error="skip"``."""

from __future__ import annotations

import bisect
import itertools
import threading
import time
import warnings
from collections.abc import Iterator
from typing import Any

from torch.utils.data import ConcatDataset, Subset

from .._batch_order import hook_scope
from ._fetch import EpochFetch
from ._messages import EMPTY, Failure, Request, Result, Stopped, describe_indices

__all__ = ["MapFetch", "getitem", "getitems", "map_requests"]

END = object()


def _plain_int_indices(indices: Any, n: int) -> bool:
    return all(type(i) is int and -n <= i < n for i in indices)


def _passes_through(dataset: Any) -> str | None:
    """``"subset"`` / ``"concat"`` for a ``Subset`` / ``ConcatDataset`` that runs torch's own indexing (a
    subclass overriding it is a dataset of its own), else ``None``."""
    kind = type(dataset)
    if isinstance(dataset, Subset) and kind.__getitem__ is Subset.__getitem__ and kind.__getitems__ is Subset.__getitems__:
        return "subset"
    if (isinstance(dataset, ConcatDataset) and kind.__getitem__ is ConcatDataset.__getitem__
            and not hasattr(dataset, "__getitems__")):
        return "concat"
    return None


def _locate(dataset: Any, i: int) -> tuple[int, int]:
    """(dataset number, index in it) of index ``i`` of a ``ConcatDataset``, as its ``__getitem__`` finds them."""
    i = i + len(dataset) if i < 0 else i
    sizes = dataset.cumulative_sizes
    d = bisect.bisect_right(sizes, i)
    return d, i - (sizes[d - 1] if d > 0 else 0)


def getitems(dataset: Any, indices: list, check_stopped: Any = None, converter: Any = None) -> list:
    """The samples ``indices`` of ``dataset``, as torch's fetcher gets them (``__getitems__`` when the dataset
    has it, else one ``dataset[i]`` each), except that a ``Subset`` or ``ConcatDataset`` (not overriding
    ``__getitem__``) passes batched calls on to the datasets it wraps, in runs of consecutive indices of one
    dataset, and that a dataset ``converter`` has a native view of (:mod:`spdl_torch.datasets._convert`) is
    fetched through that view. ``check_stopped()`` runs between single-sample calls."""
    through = _passes_through(dataset)
    if through == "subset":
        return getitems(dataset.dataset, [dataset.indices[i] for i in indices], check_stopped, converter)
    if through == "concat" and _plain_int_indices(indices, len(dataset)):
        out: list = []
        located = [_locate(dataset, i) for i in indices]
        for d, run in itertools.groupby(located, key=lambda x: x[0]):
            out.extend(getitems(dataset.datasets[d], [j for _, j in run], check_stopped, converter))
        return out
    view = converter.view(dataset) if converter is not None else None
    if view is not None:
        return view.__getitems__(indices)
    getitems_fn = getattr(dataset, "__getitems__", None)
    if getitems_fn:
        return getitems_fn(indices)
    out = []
    for i in indices:
        if check_stopped is not None:
            check_stopped()
        out.append(dataset[i])
    return out


def getitem(dataset: Any, index: Any, converter: Any = None) -> Any:
    """``dataset[index]``, except that a dataset ``converter`` has a native view of, also inside a ``Subset`` or
    ``ConcatDataset``, is fetched through that view (the same pixels as in a batch)."""
    if converter is not None and type(index) is int:
        through = _passes_through(dataset)
        if through == "subset":
            return getitem(dataset.dataset, dataset.indices[index], converter)
        if through == "concat" and -len(dataset) <= index < len(dataset):
            d, j = _locate(dataset, index)
            return getitem(dataset.datasets[d], j, converter)
        view = converter.view(dataset)
        if view is not None:
            return view[index]
    return dataset[index]


def map_requests(first: Any, sampler_iter: Iterator, seq: int, skip: set[int], num_workers: int,
                 bind_workers: bool) -> Iterator[Request]:
    """The epoch's requests from position ``seq`` on (``first`` already drawn), without the positions in ``skip``
    (returned out of order before a resume). ``bind_workers``: request ``seq`` goes to worker
    ``seq % num_workers``, as torch assigns batches to its worker processes."""
    if first is END:
        return
    before = None
    for indices in itertools.chain((first,), sampler_iter):
        if seq not in skip:
            yield Request(seq, indices, seq % num_workers if bind_workers else None, before)
            before = seq
        seq += 1


def draw_first(sampler_iter: Iterator, prefix: int) -> Any:
    """Fast-forwards past ``prefix`` index batches (no data is loaded for them) and draws the next one now, in
    the consumer thread (as torch's multi-worker iterator does when it prefetches)."""
    for _ in range(prefix):
        if next(sampler_iter, END) is END:
            return END
    return next(sampler_iter, END)


class MapFetch(EpochFetch):
    """Loads a map-style batch (``dataset[i]`` / ``__getitems__``, then ``collate_fn``).

    Concurrent fetches issue their batch ops in the epoch's order (:mod:`spdl_torch._batch_order`): a fetch's
    first batch op waits until the request handed out before it has issued its own or finished (at most
    :attr:`issue_wait` seconds). The ops serve calls first come, first served, so batches finish in the order the
    loader delivers them; with batches that take seconds (video clips), two threads racing to the pool could
    otherwise hold the first batch back until the second is done. Fetches that call no batch op never wait."""

    issue_wait = 1.0  # seconds a batch op waits for the previous request's (a bound, not reached in order)

    def __init__(self, loader: Any, *args: Any) -> None:
        super().__init__(loader, *args)
        self.skip_errors = loader.on_error == "skip"
        self.skipped: list = loader.skipped_samples
        self.skipped_lock: threading.Lock = loader._skipped_lock
        self._issued: set[int] = set()  # requests past their turn whose successor is not yet
        self._issue_cv = threading.Condition()

    def _take_turn(self, request: Request, wait: bool, passed: list[bool]) -> None:
        """Marks ``request`` past its turn to issue a batch op (once: ``passed[0]``); ``wait``: first until its
        predecessor is."""
        if passed[0]:
            return
        passed[0] = True
        with self._issue_cv:
            if wait and request.after is not None:
                deadline = time.monotonic() + self.issue_wait
                while request.after not in self._issued and not self.stopped:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        break
                    self._issue_cv.wait(min(left, 0.05))
            self._issued.discard(request.after)
            self._issued.add(request.seq)
            self._issue_cv.notify_all()

    def fetch(self, dataset: Any, indices: Any) -> Any:
        """The collated (and pinned) batch of ``indices``; under ``on_error="skip"`` without the samples that
        raise (:data:`EMPTY` when none is left)."""
        if not self.auto_collation:
            return self.finish(self.collate_fn(getitem(dataset, indices, self.converter)))
        if not self.skip_errors:
            return self.finish(self.collate_fn(getitems(dataset, indices, self.check_stopped, self.converter)))
        try:
            return self.finish(self.collate_fn(getitems(dataset, indices, self.check_stopped, self.converter)))
        except Exception:  # find the failing samples one by one
            pass
        good = []
        for index in indices:
            self.check_stopped()
            try:
                good.append(getitem(dataset, index, self.converter))
            except Exception as e:
                reason = f"{type(e).__name__}: {e}"
                with self.skipped_lock:
                    self.skipped.append((index, reason))
                warnings.warn(f"DataLoader skipped sample index {index}: {reason}", stacklevel=2)
        return self.finish(self.collate_fn(good)) if good else EMPTY

    def load(self, request: Request, worker: int | None) -> Result:
        if worker is None:  # num_workers=0: the original exception reaches the consumer, as in torch
            return Result(request.seq, self.fetch(self.main_dataset, request.indices))
        passed = [False]
        try:
            with hook_scope(lambda: self._take_turn(request, True, passed)):
                return Result(request.seq, self.fetch(self.dataset(worker), request.indices), worker)
        except Stopped:
            raise
        except BaseException as e:
            where = f"in DataLoader worker thread {worker} while loading {describe_indices(request.indices)}"
            return Result(request.seq, Failure(e, where), worker)
        finally:
            self._take_turn(request, False, passed)
