"""``to_pil``: a uint8 image tensor as the ``PIL.Image`` torchvision's Pillow-based loading gives, for the
transforms that expect one (classic ``torchvision.transforms`` pipelines, timm's)."""

from __future__ import annotations

import torch

__all__ = ["to_pil"]


def to_pil(image: torch.Tensor):
    """A uint8 Tensor[3, H, W] (RGB) as a ``PIL.Image`` of mode ``"RGB"`` (what Pillow's loader gives), a
    Tensor[1, H, W] (a fused ``Grayscale()``) as one of mode ``"L"`` (what ``convert("L")`` gives)."""
    from PIL import Image

    if image.shape[0] == 1:
        return Image.fromarray(image[0].contiguous().numpy(), "L")
    return Image.fromarray(image.permute(1, 2, 0).contiguous().numpy(), "RGB")
