"""The numbers behind the dashboard's charts of large experiments, computed on the server.

Above a few thousand trials a chart that draws every trial (20,000 scatter markers, 20,000
learning curves) takes seconds to draw and megabytes to send, and shows a blur. The dashboard
then draws summaries instead: quantile bands over bins of trials, point density, and the exact
running best and Pareto front (which stay exact: they are what a user reads off the chart).

    >>> bands = binned_quantiles([0, 1, 2, 3], [1.0, 3.0, 2.0, 4.0], bins=2)
    >>> bands.center.tolist(), bands.median.tolist(), bands.count.tolist()
    ([0.75, 2.25], [2.0, 3.0], [2, 2])
    >>> pareto_indices([(1, 1), (2, 3), (3, 2), (2, 2), (0, 4)])
    [4, 1, 2]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

QUANTILES = (0.1, 0.5, 0.9)


@dataclass
class Bands:
    """Per bin (or per step): where it is, how many values, and their spread. Arrays of one
    length ``B`` (bins that hold no value are left out)."""

    center: np.ndarray  # (B,) x of each bin: its centre, or the step number
    count: np.ndarray  # (B,) values in the bin
    low: np.ndarray  # (B,) minimum
    q10: np.ndarray  # (B,) 10th percentile
    median: np.ndarray  # (B,)
    q90: np.ndarray  # (B,) 90th percentile
    high: np.ndarray  # (B,) maximum


def binned_quantiles(xs: Sequence[float], ys: Sequence[float], bins: int = 200) -> Bands:
    """Quantiles of ``ys`` in ``bins`` equal-width bins of ``xs`` (e.g. metric by trial id).

    >>> b = binned_quantiles(range(10), range(10), bins=5)
    >>> b.low.tolist(), b.high.tolist()
    ([0.0, 2.0, 4.0, 6.0, 8.0], [1.0, 3.0, 5.0, 7.0, 9.0])
    """
    if bins < 1:
        raise ValueError(f"bins must be at least 1, got {bins}")
    x = np.asarray(xs, dtype=float)  # (N,)
    y = np.asarray(ys, dtype=float)  # (N,)
    if x.shape != y.shape:
        raise ValueError(f"xs and ys differ in length: {x.shape[0]} and {y.shape[0]}")
    if x.size == 0:
        return _bands([], [])
    lo, hi = float(x.min()), float(x.max())
    edges = np.linspace(lo, hi if hi > lo else lo + 1.0, bins + 1)  # (bins + 1,)
    which = np.clip(np.searchsorted(edges, x, side="right") - 1, 0, bins - 1)  # (N,)
    order = np.argsort(which, kind="stable")
    groups = np.split(y[order], np.flatnonzero(np.diff(which[order])) + 1)
    present = np.unique(which)
    centers = (edges[present] + edges[present + 1]) / 2
    return _bands(centers.tolist(), groups)


def step_quantiles(curves: Sequence[Sequence[float]]) -> Bands:
    """Quantiles across ``curves`` at each step (1, 2, ...): a curve adds to the steps it reached.

    >>> b = step_quantiles([[1.0, 2.0], [3.0], [5.0, 6.0]])
    >>> b.center.tolist(), b.count.tolist(), b.median.tolist()
    ([1.0, 2.0], [3, 2], [3.0, 4.0])
    """
    longest = max((len(c) for c in curves), default=0)
    if longest == 0:
        return _bands([], [])
    table = np.full((len(curves), longest), np.nan)  # (N, L): a curve per row, NaN past its end
    for row, curve in enumerate(curves):
        table[row, : len(curve)] = [np.nan if v is None else v for v in curve]
    table[~np.isfinite(table)] = np.nan
    count = np.sum(~np.isnan(table), axis=0)  # (L,)
    reached = count > 0
    table = table[:, reached]
    with np.errstate(all="ignore"):
        q = np.nanquantile(table, QUANTILES, axis=0)  # (3, L')
    return Bands(
        center=np.flatnonzero(reached).astype(float) + 1,
        count=count[reached],
        low=np.nanmin(table, axis=0),
        q10=q[0],
        median=q[1],
        q90=q[2],
        high=np.nanmax(table, axis=0),
    )


def _bands(centers: Sequence[float], groups: Sequence[np.ndarray]) -> Bands:
    if not groups:
        empty = np.zeros(0)
        return Bands(empty, np.zeros(0, dtype=int), empty, empty, empty, empty, empty)
    q = np.array([np.quantile(g, QUANTILES) for g in groups])  # (B, 3)
    return Bands(
        center=np.asarray(centers, dtype=float),
        count=np.array([g.size for g in groups]),
        low=np.array([g.min() for g in groups]),
        q10=q[:, 0],
        median=q[:, 1],
        q90=q[:, 2],
        high=np.array([g.max() for g in groups]),
    )


def pareto_indices(
    points: Sequence[tuple[float, float]], directions: tuple[str, str] = ("maximize", "maximize")
) -> list[int]:
    """The non-dominated points, as :func:`nasx.plot.charts.pareto_front` finds them (same
    indices, same order: by first coordinate), in O(N log N) rather than O(N^2).

    A sweep from the best first coordinate to the worst: a point is on the front when its second
    coordinate beats every point before it, ties on the first coordinate taken together.

    >>> pareto_indices([(0.9, 10), (0.8, 5), (0.85, 20)], ('maximize', 'minimize'))
    [1, 0]
    """
    for d in directions:
        if d not in ("maximize", "minimize"):
            raise ValueError(f"direction must be 'maximize' or 'minimize', got {d!r}")
    sx, sy = (1.0 if d == "maximize" else -1.0 for d in directions)
    scored = [(sx * x, sy * y, i) for i, (x, y) in enumerate(points)]
    scored.sort(key=lambda p: (-p[0], -p[1]))  # best first coordinate first, then best second
    front: list[int] = []
    best_y = -np.inf  # the best second coordinate among points with a strictly better first one
    k = 0
    while k < len(scored):
        end = k
        while end < len(scored) and scored[end][0] == scored[k][0]:
            end += 1
        group = scored[k:end]  # the points sharing this first coordinate, best second first
        top = group[0][1]
        # equal points do not dominate each other: every copy of the group's best is on the front
        if top > best_y:
            front += [i for _, b, i in group if b == top]
            best_y = top
        k = end
    return sorted(front, key=lambda i: (points[i][0], points[i][1]))
