"""Datasets whose samples are decoded by spdl_torch's native (GIL-releasing) decoders."""

from .folder import ImageFolder

__all__ = ["ImageFolder"]
