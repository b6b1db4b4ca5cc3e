"""Integer arguments of the decode functions: Python, NumPy and torch integers are accepted; booleans (Python,
NumPy or torch: ``operator.index`` takes them as 0 / 1) and floats are not (they would be truncated)."""

from __future__ import annotations

import operator

import torch

__all__ = ["as_integer", "is_bool"]


def is_bool(value) -> bool:
    """Python, NumPy and torch booleans."""
    return (type(value).__name__ in ("bool", "bool_") or
            (isinstance(value, torch.Tensor) and value.dtype == torch.bool))


def as_integer(value) -> int | None:
    """``value`` as an int when it is an integer and no boolean; ``None`` otherwise (the caller raises, naming
    the argument)."""
    if is_bool(value):
        return None
    try:
        return operator.index(value)
    except TypeError:
        return None
