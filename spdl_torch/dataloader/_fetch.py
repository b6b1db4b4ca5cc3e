"""What every fetch of an epoch shares, map-style or iterable: the worker it runs as, its loader context, the
stop flag, pinning. The same objects run on the worker threads and, for ``num_workers=0``, in the consumer."""

from __future__ import annotations

import functools
from typing import Any

from .._context import LoaderContext
from ._device import pin_batch
from ._finish import run_plan
from ._messages import Fatal, Request, Stopped
from ._worker import WorkerInfo, WorkerSet, fetch_scope, get_worker_info

__all__ = ["EpochFetch"]


class EpochFetch:
    """One epoch's fetching. Holds no reference to the consumer's iterator (an abandoned iterator is collected
    while its threads finish). ``workers is None``: ``num_workers=0``, fetches run in the consumer's thread."""

    def __init__(self, loader: Any, workers: WorkerSet | None, epoch: int, base_seed: int, pin: bool,
                 remainder: Any = None) -> None:
        self.epoch = epoch
        self.workers = workers
        device = getattr(loader, "device", None)
        finish_on_device = device is not None and device.type == "cuda" and getattr(loader, "device_transforms", True)
        runner = functools.partial(run_plan, pin_memory=pin, device=device if finish_on_device else None,
                                   remainder=remainder)
        self.context = LoaderContext(base_seed=base_seed, epoch=epoch, run_plan=runner)
        self.auto_collation = loader._auto_collation
        self.batch_size = loader.batch_size
        self.collate_fn = loader.collate_fn
        self.drop_last = loader.drop_last
        self.pin = pin
        self.stopped = False
        self._infos: dict[int, WorkerInfo] = {}
        self._epoch_started: set[int] = set()
        self.main_dataset = loader.dataset
        self.converter = getattr(loader, "_converter", None)  # native views of converted datasets, or None

    def dataset(self, worker: int | None) -> Any:
        return self.main_dataset if worker is None else self.workers.datasets[worker]

    def info(self, worker: int) -> WorkerInfo:
        info = self._infos.get(worker)
        if info is None:
            info = self._infos[worker] = self.workers.info(worker, self.epoch)
        return info

    def stop(self) -> None:
        """Ends the epoch: fetches in progress stop at their next sample, queued ones return at once."""
        self.stopped = True

    def check_stopped(self) -> None:
        if self.stopped:
            raise Stopped

    def finish(self, data: Any) -> Any:
        return pin_batch(data) if self.pin else data

    def run(self, request: Request) -> Any:
        """The stage function: runs ``request`` as worker ``request.worker`` (the pool thread's index: every
        worker is one thread) in its loader context."""
        if self.workers is None:
            with fetch_scope(None, self.context):
                return self.load(request, None)
        try:
            return self._run_as_worker(request)
        except Stopped:  # the epoch ended meanwhile: nobody waits for this result
            return None

    def _run_as_worker(self, request: Request) -> Any:
        worker = get_worker_info().id  # set by the thread initializer
        failure = self.workers.init_failures[worker]
        if failure is not None:
            return Fatal(failure)
        with fetch_scope(self.info(worker), self.context):
            if worker not in self._epoch_started:  # first request of this worker in this epoch
                self._epoch_started.add(worker)
                set_epoch = getattr(self.dataset(worker), "set_epoch", None)
                if callable(set_epoch):
                    set_epoch(self.epoch)
            with self.workers.global_rngs_of(worker):
                return self.load(request, worker)

    def load(self, request: Request, worker: int | None) -> Any:
        raise NotImplementedError
