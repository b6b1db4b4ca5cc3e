"""The zero-copy collate of fused batches: ``__getitems__`` of the fused datasets returns views ``batch[i]`` of one
batch tensor and registers it here; :func:`collate` recognises such views and returns the batch tensor itself.

From the first fused batch made in a process on, torch's own ``default_collate`` does the same
(:func:`_install_default_collate_rule`): its tensor rule (``default_collate_fn_map[torch.Tensor]``, the extension
point torch's ``collate`` documents) returns the registered batch whose rows, in order, are the tensors it is
given, and stacks anything else as before. A ``collate_fn`` that calls ``default_collate`` (torchvision's reference
``train.py``: ``mixup_cutmix(*default_collate(batch))``) then gets the fused batch without a copy. In torch's
worker processes the rule stacks as before (into shared memory, for the trip to the main process)."""

from __future__ import annotations

import weakref
from typing import Any

import torch
from torch.utils.data import default_collate

__all__ = ["collate", "register_fused_batch"]

# Batch tensors made by __getitems__: only their rows collate without a copy (a dataset that returns rows
# of its own storage keeps default_collate's copy, so a batch never aliases dataset memory).
# Keyed by id() (a WeakSet would compare tensors with ==, elementwise).
_FUSED_BATCHES: "weakref.WeakValueDictionary[int, torch.Tensor]" = weakref.WeakValueDictionary()
_rule_installed = False


def register_fused_batch(batch: torch.Tensor) -> None:
    """Marks ``batch`` (Tensor[N, ...]) as made by a fused ``__getitems__``: its rows collate without a copy (by
    :func:`collate`, and by ``default_collate`` from then on)."""
    if not _rule_installed:
        _install_default_collate_rule()
    _FUSED_BATCHES[id(batch)] = batch


def _batch_base(images: list[Any]) -> torch.Tensor | None:
    """The tensor whose rows the images are, in order and covering it exactly; else None."""
    if not images or not all(isinstance(x, torch.Tensor) for x in images):
        return None
    base = images[0]._base
    if base is None or _FUSED_BATCHES.get(id(base)) is not base or base.dim() != images[0].dim() + 1 or base.shape[0] != len(images):
        return None
    for k, img in enumerate(images):
        if (
            img._base is not base
            or img.storage_offset() != base.storage_offset() + k * base.stride(0)
            or img.shape != base.shape[1:]
            or img.stride() != base.stride()[1:]
        ):
            return None
    return base


def collate(batch: list[Any]) -> Any:
    """``default_collate``, except that ``(image, target)`` samples whose images are, in order, all the rows
    of one batch tensor made by a fused ``__getitems__`` collate to ``[batch_tensor, targets]`` without a
    copy, and so does such a value of dict samples (a batch-decoded member of ``TarShardDataset``: the
    dict's value is that batch tensor). Pass it as ``collate_fn`` to ``spdl_torch.DataLoader`` or
    ``torch.utils.data.DataLoader``."""
    if batch and isinstance(batch[0], (tuple, list)) and len(batch[0]) == 2:
        base = _batch_base([s[0] for s in batch])
        if base is not None:
            # a tuple, as default_collate's transposition gives its fields (strings stay a tuple of str)
            return [base, default_collate(tuple(s[1] for s in batch))]
    if batch and type(batch[0]) is dict:
        keys = batch[0].keys()
        for k, s in enumerate(batch):
            if s.keys() != keys:
                raise KeyError(f"collate: sample {k} has the keys {sorted(s)}, sample 0 {sorted(keys)}: dict samples "
                               "of a batch need the same keys (e.g. every sample the same members; pass a "
                               "collate_fn that handles missing ones)")
        return {key: _collate_value([s[key] for s in batch]) for key in keys}
    return default_collate(batch)


def _collate_value(values: list[Any]) -> Any:
    base = _batch_base(values)
    return base if base is not None else default_collate(values)


def _install_default_collate_rule() -> None:
    """Makes ``torch.utils.data.default_collate`` return a fused batch tensor itself for its rows (see the
    module's docstring). Idempotent; values are unchanged: the rows are exactly that tensor's."""
    global _rule_installed
    from torch.utils.data._utils import collate as torch_collate
    from torch.utils.data._utils import worker as torch_worker

    _rule_installed = True
    rules = torch_collate.default_collate_fn_map
    original = rules.get(torch.Tensor)
    if original is None or getattr(original, "_spdl_fused_rows", False):
        return

    def collate_tensor_fn(batch, *, collate_fn_map=None):
        if torch_worker._worker_info is None:  # not in a worker process of torch's DataLoader
            base = _batch_base(list(batch))
            if base is not None:
                return base
        return original(batch, collate_fn_map=collate_fn_map)

    collate_tensor_fn._spdl_fused_rows = True
    collate_tensor_fn.__wrapped__ = original
    collate_tensor_fn.__doc__ = original.__doc__
    rules[torch.Tensor] = collate_tensor_fn
