"""Statistical tests for comparing random draws with a reference's draws: chi-square goodness of fit and
two-sample homogeneity (rare cells pooled), and the two-sample Kolmogorov-Smirnov test."""

import collections
import math

import numpy as np
import torch


def chi2_sf(x: float, df: int) -> float:
    """P(X >= x) for X chi-square with ``df`` degrees of freedom."""
    return float(torch.special.gammaincc(torch.tensor(df / 2, dtype=torch.float64), torch.tensor(x / 2, dtype=torch.float64)))


def homogeneity_p(a: collections.Counter, b: collections.Counter, min_cell: int = 10) -> float:
    """Two-sample chi-square homogeneity p-value of two samples, of equal or different sizes (rare cells
    pooled)."""
    na, nb = sum(a.values()), sum(b.values())
    ka, kb = math.sqrt(nb / na), math.sqrt(na / nb)
    x, df, pool_a, pool_b = 0.0, -1, 0, 0
    for key in set(a) | set(b):
        ca, cb = a[key], b[key]
        if ca + cb < min_cell:
            pool_a, pool_b = pool_a + ca, pool_b + cb
            continue
        x += (ka * ca - kb * cb) ** 2 / (ca + cb)
        df += 1
    if pool_a + pool_b:
        x += (ka * pool_a - kb * pool_b) ** 2 / (pool_a + pool_b)
        df += 1
    return chi2_sf(x, df)


def fit_p(observed: collections.Counter, expected: dict) -> float:
    """Chi-square goodness-of-fit p-value of counts against expected probabilities."""
    n = sum(observed.values())
    assert set(observed) <= set(expected)
    x = sum((observed[k] - n * p) ** 2 / (n * p) for k, p in expected.items())
    return chi2_sf(x, len(expected) - 1)


def ks_p(a, b) -> float:
    """Two-sample Kolmogorov-Smirnov p-value (asymptotic, with Stephens' small-sample correction)."""
    a, b = np.sort(np.asarray(a, dtype=np.float64)), np.sort(np.asarray(b, dtype=np.float64))
    grid = np.concatenate([a, b])
    d = float(np.max(np.abs(np.searchsorted(a, grid, side="right") / len(a)
                            - np.searchsorted(b, grid, side="right") / len(b))))
    ne = len(a) * len(b) / (len(a) + len(b))
    lam = (math.sqrt(ne) + 0.12 + 0.11 / math.sqrt(ne)) * d
    if lam < 0.2:
        return 1.0
    k = np.arange(1, 101)
    return float(min(1.0, max(0.0, 2.0 * np.sum((-1.0) ** (k - 1) * np.exp(-2.0 * k * k * lam * lam)))))
