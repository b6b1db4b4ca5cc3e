"""``SampleGeometry`` and ``sample_geometry``: the crop box and flips that ``decode_images`` draws for one sample
(every geometry), from the op ``sample_geometry``; :meth:`FusedPlan.sample_geometry` asks it with a plan's
arguments."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import torch

__all__ = ["SampleGeometry", "sample_geometry"]


@dataclasses.dataclass(frozen=True)
class SampleGeometry:
    """One sample's geometry, as :func:`spdl_torch.io.decode_images` draws it.

    Attributes:
        top, left, height, width: ``geometry="train"``: the ``RandomResizedCrop`` box in source pixels (of the
            EXIF-oriented image); ``"random_crop"``: the ``RandomCrop`` box in the resized and padded image
            (torchvision's ``RandomCrop.make_params`` coordinates); ``"eval"`` / ``"resize"``: the whole source
            image.
        hflip, vflip: whether the sample is flipped horizontally / vertically.
    """

    top: int
    left: int
    height: int
    width: int
    hflip: bool
    vflip: bool


def sample_geometry(
    seed: int,
    image_height: int,
    image_width: int,
    *,
    out_size: tuple[int, int],
    geometry: str = "train",
    resize_shorter: int = 0,
    max_size: int = 0,
    scale: Sequence[float] = (0.08, 1.0),
    ratio: Sequence[float] = (3.0 / 4.0, 4.0 / 3.0),
    padding: Sequence[int] | None = None,
    pad_if_needed: bool = False,
    hflip_prob: float = 0.0,
    vflip_prob: float = 0.0,
) -> SampleGeometry:
    """The box and flips :func:`~spdl_torch.io.decode_images` draws for a sample with this ``seed`` whose
    (EXIF-oriented) image is ``image_height x image_width`` pixels, with the same geometry arguments
    (``out_size`` = ``(height, width)`` of the op's output).

    Raises:
        ValueError: invalid arguments, or (``random_crop``) a crop larger than the padded resized image.
    """
    top, left, h, w, hflip, vflip = torch.ops.spdl_torch.sample_geometry(
        int(seed), int(image_height), int(image_width), height=int(out_size[0]), width=int(out_size[1]),
        geometry=geometry, resize_shorter=int(resize_shorter), max_size=int(max_size),
        scale=[float(s) for s in scale], ratio=[float(r) for r in ratio],
        padding=[] if padding is None else [int(p) for p in padding], pad_if_needed=bool(pad_if_needed),
        hflip_prob=float(hflip_prob), vflip_prob=float(vflip_prob),
    )
    return SampleGeometry(top, left, h, w, bool(hflip), bool(vflip))
