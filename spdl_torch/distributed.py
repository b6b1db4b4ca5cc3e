"""Sharding a map-style dataset by rank for distributed training (``torchrun``, DDP).

Two equivalent ways, both with :class:`torch.utils.data.distributed.DistributedSampler`'s rules
(each rank gets ``ceil(len / world_size)`` samples, the list padded with samples from its start; or
``len // world_size`` with ``drop_last=True``; shuffled with ``seed + epoch``):

* torch's own sampler works unchanged with :class:`spdl_torch.DataLoader`::

      sampler = spdl_torch.distributed.shard_by_rank(dataset, shuffle=True)   # a DistributedSampler
      loader = spdl_torch.DataLoader(dataset, batch_size=32, sampler=sampler, num_workers=4)
      for epoch in range(epochs):
          sampler.set_epoch(epoch)   # as with torch: without it every epoch has the same order
          for batch in loader: ...

* :class:`DistributedShard` wraps the dataset instead; :class:`spdl_torch.DataLoader` calls its
  ``set_epoch`` at the start of every epoch (and restores it on resume), so no manual call is needed::

      loader = spdl_torch.DataLoader(DistributedShard(dataset, shuffle=True), batch_size=32, num_workers=4)

The rank and world size come from the initialized default process group, else from the ``RANK`` and
``WORLD_SIZE`` environment variables that ``torchrun`` sets, else ``(0, 1)``.
"""

from __future__ import annotations

from typing import Any

from torch.utils.data import Dataset, Subset
from torch.utils.data.distributed import DistributedSampler

from ._ranks import resolve_rank

__all__ = ["DistributedShard", "keep_threads", "shard_by_rank"]


def shard_by_rank(
    dataset: Dataset,
    *,
    shuffle: bool = True,
    seed: int = 0,
    drop_last: bool = False,
    rank: int | None = None,
    world_size: int | None = None,
) -> DistributedSampler:
    """A :class:`~torch.utils.data.distributed.DistributedSampler` for this process' rank
    (from the default process group, else ``RANK`` / ``WORLD_SIZE``); pass it as ``sampler=`` and call ``set_epoch`` every epoch."""
    rank, world_size = resolve_rank(rank, world_size)
    return DistributedSampler(dataset, num_replicas=world_size, rank=rank, shuffle=shuffle, seed=seed,
                              drop_last=drop_last)


class DistributedShard(Subset):
    """This rank's shard of a map-style ``dataset``: a :class:`~torch.utils.data.Subset` whose ``indices`` are what
    ``DistributedSampler(dataset, world_size, rank, shuffle, seed, drop_last)`` yields after ``set_epoch(epoch)``,
    so sample ``i`` is ``dataset[indices[i]]``.

    Args:
        dataset: a map-style dataset (``__len__`` and ``__getitem__``; ``__getitems__`` is used when it has one).
        shuffle, seed, drop_last: as :class:`~torch.utils.data.distributed.DistributedSampler`.
        rank, world_size: default: the default process group's, else ``RANK`` / ``WORLD_SIZE``, else ``(0, 1)``.

    Every rank has the same ``len()``, so every rank runs the same number of batches. Being a ``Subset``, it is
    looked through as one: a dataset inside that loads natively (spdl_torch's own, or one
    :class:`spdl_torch.DataLoader` converts, such as ``torchvision.datasets.ImageFolder``) still does.

    Raises:
        ValueError: ``rank`` outside ``[0, world_size)``.
    """

    def __init__(self, dataset: Dataset, *, shuffle: bool = True, seed: int = 0, drop_last: bool = False,
                 rank: int | None = None, world_size: int | None = None) -> None:
        super().__init__(dataset, [])
        self.rank, self.world_size = resolve_rank(rank, world_size)
        self._sampler = DistributedSampler(dataset, num_replicas=self.world_size, rank=self.rank,
                                           shuffle=shuffle, seed=seed, drop_last=drop_last)
        self.epoch = -1
        self.set_epoch(0)

    def set_epoch(self, epoch: int) -> None:
        """Selects the epoch's shuffle (called by :class:`spdl_torch.DataLoader` every epoch)."""
        if epoch != self.epoch:
            self._sampler.set_epoch(epoch)
            self.indices = list(self._sampler)
            self.epoch = epoch


def keep_threads(prepared: Any, like: Any = None) -> Any:
    """Puts a :class:`spdl_torch.DataLoader` back inside a loader that Hugging Face Accelerate's
    ``Accelerator.prepare`` rebuilt.

    ``prepare(loader)`` re-creates every DataLoader as Accelerate's own ``DataLoaderShard``, which wraps a new
    ``torch.utils.data.DataLoader`` (worker *processes*) over the sharded batch sampler it made. This replaces
    that inner loader with a ``spdl_torch.DataLoader`` of the same arguments, so Accelerate's sharding, device
    placement and RNG synchronisation stay and the workers are threads again::

        loader = accelerator.prepare(spdl_torch.DataLoader(ds, batch_size=32, num_workers=4))
        loader = spdl_torch.distributed.keep_threads(loader, like=original_loader)

    Args:
        prepared: what ``Accelerator.prepare`` returned for the loader.
        like: the ``spdl_torch.DataLoader`` given to ``prepare``: its own keywords (``device``, ``on_error``,
            ``worker_rng``, ``dataset_per_worker``, ``worker_mode``) carry over; ``None``: their defaults (the
            ``"auto"`` worker mode: threads for a native dataset).

    Returns:
        ``prepared``, now loading with threads (``isinstance(prepared, spdl_torch.DataLoader)`` holds).

    Raises:
        TypeError: ``prepared`` is not a loader Accelerate prepared (it has no ``base_dataloader``).
    """
    from torch.utils.data import IterableDataset

    from .dataloader._loader import DataLoader  # not spdl_torch.DataLoader: that would close a cycle

    base = prepared.__dict__.get("base_dataloader") if hasattr(prepared, "__dict__") else None
    if base is None:
        raise TypeError(f"keep_threads: expected a loader returned by Accelerator.prepare, got {type(prepared).__name__}")
    if isinstance(base, DataLoader):
        return prepared
    kw: dict[str, Any] = {}
    if isinstance(base.dataset, IterableDataset):
        kw.update(batch_size=base.batch_size, drop_last=base.drop_last)
    elif base.batch_sampler is not None:
        kw.update(batch_sampler=base.batch_sampler)
    else:
        kw.update(batch_size=None, sampler=base.sampler)
    if like is not None:
        kw.update(device=like.device, on_error=like.on_error, worker_rng=like.worker_rng,
                  dataset_per_worker=like.dataset_per_worker, worker_mode=like.worker_mode, transfer_depth=like.transfer_depth,
                  device_transforms=like.device_transforms)
    prepared.base_dataloader = DataLoader(
        base.dataset, num_workers=base.num_workers, collate_fn=base.collate_fn, pin_memory=base.pin_memory,
        timeout=base.timeout, worker_init_fn=base.worker_init_fn, generator=base.generator,
        prefetch_factor=base.prefetch_factor, persistent_workers=base.persistent_workers, in_order=base.in_order,
        **kw)
    return prepared
