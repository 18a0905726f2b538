"""Rewards and constraints on cost: the MnasNet reward and a range of allowed costs.

MnasNet (Tan et al., CVPR 2019, eq. 2) ranks an arch by ``ACC * (LAT / T) ** w`` with
``w = alpha`` when ``LAT <= T`` and ``w = beta`` above the target ``T``. The soft constraint uses
``alpha = beta = -0.07`` (a model twice as slow must be about 5% more accurate to tie); the
hard one ``alpha = 0, beta = -1`` (no reward for being faster than the target, a steep penalty
above it).

    >>> round(mnasnet_reward(0.76, latency=100.0, target=80.0), 4)          # soft: 0.76 * 1.25**-0.07
    0.7482
    >>> mnasnet_reward(0.76, 60.0, 80.0, 'hard'), mnasnet_reward(0.76, 160.0, 80.0, 'hard')
    (0.76, 0.38)
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

PRESETS = {"soft": (-0.07, -0.07), "hard": (0.0, -1.0)}


def mnasnet_reward(
    accuracy: float,
    latency: float,
    target: float,
    constraint: str = "soft",
    *,
    alpha: float | None = None,
    beta: float | None = None,
) -> float:
    """``accuracy * (latency / target) ** w``: ``w = alpha`` at or under ``target``, else ``beta``.

    ``constraint`` picks the paper's exponents (``'soft'``: -0.07, -0.07; ``'hard'``: 0, -1);
    ``alpha``/``beta`` override them. Latency and target in the same unit (any cost works: MACs).
    """
    if constraint not in PRESETS:
        raise ValueError(f"constraint must be one of {sorted(PRESETS)}, got {constraint!r}")
    if not target > 0 or not latency > 0:
        raise ValueError(f"latency and target must be positive, got {latency} and {target}")
    a, b = PRESETS[constraint]
    a = a if alpha is None else alpha
    b = b if beta is None else beta
    w = a if latency <= target else b
    return float(accuracy) * (latency / target) ** w


@dataclass(frozen=True)
class MnasNetReward:
    """The MnasNet reward as an objective over a trial's metrics dict.

    Args:
        target: the latency target (same unit as ``metrics[cost]``).
        constraint: ``'soft'`` or ``'hard'`` (see :func:`mnasnet_reward`).
        accuracy: the metric holding accuracy; cost: the metric holding latency (or FLOPs...).
        alpha, beta: explicit exponents instead of the preset's.

    Example:
        >>> reward = MnasNetReward(target=10.0, constraint='hard')
        >>> reward({'accuracy': 0.9, 'latency_ms': 20.0})
        0.45
    """

    target: float
    constraint: str = "soft"
    accuracy: str = "accuracy"
    cost: str = "latency_ms"
    alpha: float | None = None
    beta: float | None = None

    def __post_init__(self) -> None:
        if self.constraint not in PRESETS:
            raise ValueError(
                f"constraint must be one of {sorted(PRESETS)}, got {self.constraint!r}"
            )
        if not self.target > 0:
            raise ValueError(f"target must be positive, got {self.target}")

    def __call__(self, metrics: Mapping[str, Any]) -> float:
        for name in (self.accuracy, self.cost):
            if name not in metrics:
                raise KeyError(
                    f"the MnasNet reward needs metric {name!r}; the trial has {sorted(metrics)}"
                )
        return mnasnet_reward(
            metrics[self.accuracy],
            metrics[self.cost],
            self.target,
            self.constraint,
            alpha=self.alpha,
            beta=self.beta,
        )


@dataclass(frozen=True)
class CostRange:
    """Allowed ``[low, high]`` of one cost metric (either bound may be None).

    Example:
        >>> r = CostRange('macs', high=300e6)
        >>> r.violation(320e6)
        'macs 3.2e+08 above 3e+08'
        >>> r.violation(250e6) is None
        True
    """

    metric: str
    low: float | None = None
    high: float | None = None

    def __post_init__(self) -> None:
        if self.low is None and self.high is None:
            raise ValueError(f"CostRange({self.metric!r}) needs low, high or both")
        if self.low is not None and self.high is not None and self.low > self.high:
            raise ValueError(
                f"CostRange({self.metric!r}): low {self.low} is above high {self.high}"
            )

    def violation(self, value: float) -> str | None:
        """None when ``value`` lies in the range, else why not."""
        if math.isnan(value):
            return f"{self.metric} is NaN"
        if self.low is not None and value < self.low:
            return f"{self.metric} {value:.4g} below {self.low:.4g}"
        if self.high is not None and value > self.high:
            return f"{self.metric} {value:.4g} above {self.high:.4g}"
        return None

    @classmethod
    def parse(cls, metric: str, bounds: Any) -> CostRange:
        """From ``(low, high)`` (a bound may be None) or a single upper bound.

        >>> CostRange.parse('params', (1e6, None)).low
        1000000.0
        """
        if isinstance(bounds, CostRange):
            return bounds
        if isinstance(bounds, (int, float)):
            return cls(metric, None, float(bounds))
        if isinstance(bounds, (tuple, list)) and len(bounds) == 2:
            low, high = bounds
            return cls(
                metric, None if low is None else float(low), None if high is None else float(high)
            )
        raise ValueError(
            f"the range of {metric!r} must be (low, high) or an upper bound, got {bounds!r}"
        )
