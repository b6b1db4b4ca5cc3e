"""``normalize``: ``ToDtype(scale=True)`` + ``Normalize`` of a uint8 batch on its device (torchvision's operations, or
one CUDA kernel), and the fake kernel of its op ``normalize_batch``."""

from __future__ import annotations

from collections.abc import Sequence

import torch

__all__ = ["NORMALIZE_IMPLS", "normalize"]

#: Implementations of the uint8 -> float normalisation on the device: "torch" (torchvision's ops: ``to``,
#: ``mul_``, ``sub``, ``div_``) or "kernel" (``spdl_torch::normalize_batch``: one pass; the CUDA variant).
NORMALIZE_IMPLS = ("torch", "kernel")


def normalize(batch: torch.Tensor, dtype: torch.dtype, mean: Sequence[float] | None = None,
              std: Sequence[float] | None = None, *, impl: str = "torch") -> torch.Tensor:
    """``v2.ToDtype(dtype, scale=True)`` then ``v2.Normalize(mean, std)`` of a uint8 batch, on its device.

    Args:
        batch: uint8 Tensor[N, C, H, W] (values 0..255), any device for ``impl="torch"``, CUDA for ``"kernel"``.
        dtype: ``torch.float32`` or ``torch.bfloat16``.
        mean, std: per-channel values (C of them, or 1), or ``None`` for no normalisation.
        impl: ``"torch"``: torchvision's own operations in its order (bit for bit ``ToDtype`` + ``Normalize``);
            ``"kernel"``: one CUDA kernel with the same operations and roundings (``normalize_batch``).

    Returns:
        Tensor[N, C, H, W] of ``dtype``: ``(x / 255 - mean) / std``, in ``batch``'s memory format.

    Raises:
        ValueError: ``dtype`` not a float type, ``impl`` unknown, mean without std, a zero std.
        RuntimeError: ``impl="kernel"`` without the CUDA variant or on a CPU tensor.
    """
    if dtype not in (torch.float32, torch.bfloat16):
        raise ValueError(f"normalize: expected dtype float32 or bfloat16, got {dtype=}")
    if impl not in NORMALIZE_IMPLS:
        raise ValueError(f"normalize: expected impl in {NORMALIZE_IMPLS}, got {impl=}")
    if (mean is None) != (std is None):
        raise ValueError("normalize: expected both mean and std, or neither")
    if std is not None and not all(std):
        raise ValueError("normalize: std evaluated to zero, leading to division by zero")
    if impl == "kernel":
        from .._build_info import check_cuda

        check_cuda("normalize(impl='kernel')", needs_build=True)
        return torch.ops.spdl_torch.normalize_batch(
            batch, mean=None if mean is None else [float(m) for m in mean],
            std=None if std is None else [float(s) for s in std], dtype=dtype)
    out = batch.to(dtype).mul_(1.0 / 255)  # torchvision's to_dtype_image (int -> float)
    if mean is None:
        return out
    m = torch.as_tensor(mean, dtype=dtype, device=batch.device).view(-1, 1, 1)  # torchvision's normalize_image
    s = torch.as_tensor(std, dtype=dtype, device=batch.device).view(-1, 1, 1)
    return out.sub(m).div_(s)


@torch.library.register_fake("spdl_torch::normalize_batch")
def _normalize_batch_fake(batch, *, mean, std, dtype):
    channels_last = batch.dim() == 4 and batch.is_contiguous(memory_format=torch.channels_last) and not batch.is_contiguous()
    memory_format = torch.channels_last if channels_last else torch.contiguous_format
    return torch.empty(batch.shape, dtype=dtype, device=batch.device, memory_format=memory_format)
