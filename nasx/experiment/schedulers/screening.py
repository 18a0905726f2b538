"""The statistics :class:`~nasx.experiment.schedulers.AutoASHA` chooses its rungs by: how well an
early budget ranks trials (Spearman's correlation and its interval over a few curves), and the
expected best final value of a search that screens at that budget (a Gaussian model).

    >>> round(spearman([1, 2, 3, 4], [10, 20, 40, 30]), 2), round(expected_best(2), 3)
    (0.8, 0.589)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from statistics import NormalDist

import numpy as np

__all__ = ["expected_best", "screened_best", "spearman", "spearman_interval"]

_NORMAL = NormalDist()


def expected_best(n: float) -> float:
    """The expected largest of ``n`` independent standard normal draws (Blom's approximation,
    within 0.03 of the exact value; 0 for one draw; ``n`` may be fractional).

    >>> round(expected_best(1), 3), round(expected_best(2), 3), round(expected_best(27), 2)
    (0.0, 0.589, 2.0)
    """
    if not n >= 1:
        raise ValueError(f"n must be at least 1, got {n!r}")
    return _NORMAL.inv_cdf((n - 0.375) / (n + 0.25))


def _normal_cdf(x: np.ndarray) -> np.ndarray:
    """The standard normal CDF, elementwise (Abramowitz and Stegun 7.1.26: within 1.5e-7)."""
    z = np.abs(x) / math.sqrt(2)
    t = 1 / (1 + 0.3275911 * z)
    poly = t * (
        0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.45315203 + t * 1.061405429)))
    )
    half = poly * np.exp(-z * z) / 2
    return np.asarray(np.where(x >= 0, 1 - half, half))


def screened_best(rho: float, screened: float, promoted: float) -> float:
    """The expected best final value, in standard deviations of the archs' final values, of a
    two-stage screen: ``screened`` archs ranked by a score whose correlation with the final value
    is ``rho`` (bivariate normal), the best ``promoted`` of them trained fully.

    The promoted archs' scores are taken at their expected order statistics (Blom's
    approximation), their finals as ``rho * score`` plus independent normal noise of variance
    ``1 - rho**2``, and the expected largest of those is integrated numerically. Both counts are
    rounded to whole archs. A perfect score finds the best of all that were screened (Blom's
    value for 100 draws), a blind one the best of those promoted (1.163 for 5 draws, exactly):

    >>> round(screened_best(1.0, 100, 5), 3), round(expected_best(100), 3)
    (2.499, 2.499)
    >>> round(screened_best(0.0, 100, 5), 3), round(screened_best(0.8, 100, 5), 3)
    (1.163, 2.375)
    """
    if not 1 <= promoted <= screened:
        raise ValueError(f"need 1 <= promoted <= screened, got {promoted} of {screened}")
    if not -1 <= rho <= 1:
        raise ValueError(f"rho must lie in [-1, 1], got {rho!r}")
    n = max(1, round(screened))
    m = min(n, max(1, round(promoted)))
    quantiles = (n - np.arange(1, m + 1) + 0.625) / (n + 0.25)
    means = rho * np.array([_NORMAL.inv_cdf(q) for q in quantiles])
    sigma = math.sqrt(max(0.0, 1 - rho * rho))
    top = float(means.max())
    if sigma < 1e-9:
        return top
    x = np.linspace(top - 8 * sigma, top + 8 * sigma, 256)
    cdf = _normal_cdf((x[:, None] - means[None, :]) / sigma)
    above = 1 - np.exp(np.log(np.maximum(cdf, 1e-300)).sum(axis=1))  # P(best > x)
    return float(x[0] + np.sum((above[1:] + above[:-1]) / 2 * np.diff(x)))


def spearman_interval(rho: float, n: int) -> tuple[float, float, float]:
    """``(low, rho, high)``: a Spearman correlation measured on ``n`` pairs, one standard error
    either side on Fisher's scale (Fieller, Hartley and Pearson 1957: ``atanh`` of it has
    variance ``1.06 / (n - 3)``). A perfect agreement of ``n`` pairs cannot be told from a very
    good one, so ``rho`` is first held within ``1 - 1 / (2 n)`` of +-1. Below 4 pairs the
    interval is [-1, 1].

    >>> [round(x, 2) for x in spearman_interval(0.8, 8)], spearman_interval(1.0, 6)[1]
    ([0.56, 0.8, 0.92], 0.9166666666666666)
    """
    bound = 1 - 1 / (2 * max(n, 1))
    rho = max(-bound, min(bound, rho))
    if n <= 3:
        return -1.0, rho, 1.0
    z, error = math.atanh(rho), math.sqrt(1.06 / (n - 3))
    return math.tanh(z - error), rho, math.tanh(z + error)


def _ranks(values: Sequence[float]) -> list[float]:
    """1-based ranks, ties sharing their average rank."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return ranks


def spearman(a: Sequence[float], b: Sequence[float]) -> float:
    """Spearman's rank correlation of ``a`` and ``b`` (ties get their average rank); 0 where it is
    undefined (fewer than 3 pairs, or one side constant).

    >>> spearman([1, 2, 3, 4], [10, 20, 40, 30]), spearman([1, 2, 3], [3, 2, 1])
    (0.8, -1.0)
    """
    if len(a) != len(b):
        raise ValueError(f"spearman needs pairs: got {len(a)} and {len(b)} values")
    if len(a) < 3:
        return 0.0
    ra, rb = _ranks(a), _ranks(b)
    ma, mb = sum(ra) / len(ra), sum(rb) / len(rb)
    cov = sum((x - ma) * (y - mb) for x, y in zip(ra, rb))
    va = sum((x - ma) ** 2 for x in ra)
    vb = sum((y - mb) ** 2 for y in rb)
    if va == 0 or vb == 0:
        return 0.0
    return cov / math.sqrt(va * vb)
