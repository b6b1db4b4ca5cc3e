"""The augmentation programs' own parts (spdl_torch/transforms/_augment_program.py): the moments of
``Rng``'s normal and gamma draws, and the affine rows' centre folding against torchvision's ``F.affine``."""

import math

import numpy as np
import torch
from torchvision.transforms import v2
from torchvision.transforms.v2 import functional as F

from spdl_torch.transforms import _augment_codes as codes, _augment_program as P

from tests._utils.augment import apply_row


N = 20_000


def test_gamma_and_normal_moments():
    # Rng.gamma (Marsaglia-Tsang, boosted below shape 1) and Rng.normal: mean and variance of 20,000 draws
    # within 5 standard errors
    rng = P.Rng(99)
    z = np.array([rng.normal() for _ in range(N)])
    assert abs(z.mean()) < 5 / math.sqrt(N) and abs(z.var() - 1) < 5 * math.sqrt(2 / N)
    for shape in (0.1, 0.5, 1.0, 3.7):
        g = np.array([rng.gamma(shape) for _ in range(N)])
        assert g.min() > 0
        assert abs(g.mean() - shape) < 5 * math.sqrt(shape / N), (shape, g.mean())
        assert abs(g.var() / shape - 1) < 0.15, (shape, g.var())


def _close(a, b, max_frac=0.005):
    """Equal up to 1 level, and no more than ``max_frac`` of the values differ more (an affine whose
    centre is folded into a fractional translation may move a nearest sample across a boundary)."""
    d = (a.int() - b.int()).abs()
    assert (d > 1).float().mean().item() <= max_frac, (d > 1).float().mean().item()


def test_affine_center_folding_equals_torchvision_center():
    img = F.resize(torch.randint(0, 256, (3, 6, 7), dtype=torch.uint8, generator=torch.Generator().manual_seed(1)),
                   [41, 33], antialias=True)
    for angle, shear, center in [(0.0, (20.0, 0.0), (0, 0)), (30.0, (5.0, -12.0), (4, 30)), (-75.0, (0.0, 0.0), (33, 41))]:
        want = F.affine(img, angle=angle, translate=[2, -3], scale=1.0, shear=list(shear), center=list(center),
                        interpolation=v2.InterpolationMode.BILINEAR)
        args = P.affine_args(angle, (2, -3), shear, center, 1, None, 41, 33)
        _close(apply_row(img, codes.row("affine", **args)), want)
