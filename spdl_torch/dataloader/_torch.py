"""torch's own ``DataLoader`` class, bound once when spdl_torch is imported.

Code that makes third-party libraries use ours replaces torch's names (``torch.utils.data.DataLoader =
spdl_torch.DataLoader``, also ``torch.utils.data.dataloader.DataLoader``). Every call of ours into torch's class
goes through :data:`TORCH_DATALOADER`, never through those module attributes, so it reaches torch's code whatever
they hold (looked up at call time they would name our class, and its properties would call themselves).
"""

from __future__ import annotations

import torch.utils.data.dataloader as _torch_dataloader

__all__ = ["TORCH_DATALOADER", "torch_dataloader_class"]


def torch_dataloader_class() -> type:
    """torch's original ``DataLoader``: the class ``torch.utils.data.dataloader.DataLoader`` names, or, when that
    name was already replaced by a subclass (ours, or another library's), the torch class in its MRO."""
    named = _torch_dataloader.__dict__["DataLoader"]
    for cls in named.__mro__:
        if cls.__module__ == _torch_dataloader.__name__ and cls.__qualname__ == "DataLoader":
            return cls
    raise ImportError(f"spdl_torch: torch.utils.data.dataloader.DataLoader is {named!r}, not torch's class")


TORCH_DATALOADER: type = torch_dataloader_class()
