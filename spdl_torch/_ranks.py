"""This process' rank and world size for distributed training: from the initialized default process group, else
the ``RANK`` / ``WORLD_SIZE`` environment variables that ``torchrun`` sets, else ``(0, 1)``. Shared by
``spdl_torch.distributed`` and the tar shard dataset."""

from __future__ import annotations

import os

import torch.distributed as dist

__all__ = ["rank_and_world_size", "resolve_rank"]


def rank_and_world_size() -> tuple[int, int]:
    """``(rank, world_size)`` of this process: from ``torch.distributed`` when initialized, else from
    ``RANK`` / ``WORLD_SIZE`` in the environment, else ``(0, 1)``.

    Raises:
        ValueError: the environment variables are not integers or are inconsistent.
    """
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    try:
        rank, world = int(os.environ.get("RANK", "0")), int(os.environ.get("WORLD_SIZE", "1"))
    except ValueError as e:
        raise ValueError(f"RANK / WORLD_SIZE must be integers: {e}") from None
    if not 0 <= rank < world:
        raise ValueError(f"invalid RANK={rank} for WORLD_SIZE={world}")
    return rank, world


def resolve_rank(rank: int | None, world_size: int | None) -> tuple[int, int]:
    """``(rank, world_size)``: the given ones, the missing ones from :func:`rank_and_world_size`.

    Raises:
        ValueError: ``rank`` is not in ``[0, world_size)``.
    """
    if rank is None or world_size is None:
        r, w = rank_and_world_size()
        rank = r if rank is None else rank
        world_size = w if world_size is None else world_size
    if not 0 <= rank < world_size:
        raise ValueError(f"rank={rank} must be in [0, world_size={world_size})")
    return rank, world_size
