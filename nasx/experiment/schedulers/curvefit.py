"""Curve fitting: prune a trial whose learning curve, extrapolated to the full budget, ends below
a share of the best final result so far (the idea of NNI's ``Curvefitting`` assessor, Domhan et
al., IJCAI 2015, with one curve model instead of their ensemble of eleven sampled by MCMC).

Every trial aims at ``max_budget``. From ``start_step`` reports on, every ``gap`` reports, the
curve so far is fitted by least squares with the power law ``y = c - a * x**(-alpha)``
(``alpha`` on a fixed grid, ``c`` and ``a`` in closed form for each), and extrapolated to
``max_budget``. The trial is pruned when that prediction is below ``threshold`` times the best
final value of the trials completed so far (``'minimize'``: above that value divided by
``threshold``); before any trial completes, nothing is pruned. Deterministic, so a resumed
search decides as an uninterrupted one.

    >>> cf = CurveFitting(max_budget=9, start_step=3, threshold=0.95)
    >>> cf.started(0, cf.assign())
    >>> [cf.report(0, e, 0.9 - 0.5 / e) for e in range(1, 10)][-1]
    'complete'
    >>> cf.started(1, cf.assign())
    >>> [cf.report(1, e, 0.6 - 0.5 / e) for e in range(1, 4)]  # predicted 0.54 < 0.95 * 0.84
    ['continue', 'continue', 'prune']
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from nasx.experiment.schedulers.base import (
    COMPLETE,
    CONTINUE,
    PRUNE,
    Assignment,
    Budget,
    Decision,
    Scheduler,
)

__all__ = ["CurveFitting", "extrapolate"]

_ALPHAS = 2.0 ** (np.arange(-32, 17) / 8)  # 1/16 .. 4 in steps of 2**(1/8), 1 included


def extrapolate(budgets: Sequence[float], values: Sequence[float], to: float) -> float:
    """The power law ``c - a * x**(-alpha)`` that fits ``(budgets, values)`` best (least squares,
    ``alpha`` on a grid from 1/16 to 4), evaluated at ``to``. Needs two points or more.

    >>> round(extrapolate([1, 2, 3, 4], [0.4, 0.65, 0.7333, 0.775], 9), 3)  # 0.9 - 0.5 / x
    0.844
    """
    x, y = np.asarray(budgets, dtype=float), np.asarray(values, dtype=float)
    if len(x) < 2 or len(set(x.tolist())) < 2:
        raise ValueError(f"extrapolate needs two budgets or more, got {list(budgets)}")
    best: tuple[float, float] | None = None  # (squared error, prediction)
    for alpha in _ALPHAS:
        basis = np.stack([np.ones_like(x), -(x**-alpha)], axis=1)  # y = c * 1 + a * (-x^-alpha)
        (c, a), *_ = np.linalg.lstsq(basis, y, rcond=None)
        error = float(((basis @ np.array([c, a]) - y) ** 2).sum())
        if best is None or error < best[0] - 1e-12:
            best = (error, float(c - a * to**-alpha))
    assert best is not None
    return best[1]


class CurveFitting(Scheduler):
    """Learning-curve extrapolation (see the module docstring); one objective only.

    Args:
        max_budget: the budget of a complete trial (NNI's ``epoch_num``).
        start_step: reports a trial makes before its curve is judged (NNI's default 6), >= 2.
        threshold: the share of the best final value a prediction must reach, in (0, 1].
        gap: judge every ``gap`` reports from ``start_step`` on (NNI's ``gap``).
        direction: ``'maximize'`` or ``'minimize'``; values are taken to be positive.
    """

    def __init__(
        self,
        max_budget: Budget,
        *,
        start_step: int = 6,
        threshold: float = 0.95,
        gap: int = 1,
        direction: str = "maximize",
    ) -> None:
        if not isinstance(direction, str):
            raise ValueError(f"CurveFitting ranks one objective, got direction={direction!r}")
        super().__init__(directions=direction)
        if isinstance(max_budget, bool) or not isinstance(max_budget, int | float):
            raise ValueError(f"max_budget must be a positive number, got {max_budget!r}")
        if not max_budget > 0:
            raise ValueError(f"max_budget must be a positive number, got {max_budget!r}")
        for name, value, low in (("start_step", start_step, 2), ("gap", gap, 1)):
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
        ok = isinstance(threshold, int | float) and not isinstance(threshold, bool)
        if not (ok and 0 < threshold <= 1):
            raise ValueError(f"threshold must be a number in (0, 1], got {threshold!r}")
        self._max_budget, self.start_step, self.threshold, self.gap = (
            max_budget,
            start_step,
            float(threshold),
            gap,
        )
        self.curves: dict[int, list[tuple[float, float]]] = {}  # running trial -> (budget, value)
        self.best: float | None = None  # the best final value, as reported

    def __repr__(self) -> str:
        return (
            f"CurveFitting(max_budget={self._max_budget}, start_step={self.start_step}, "
            f"threshold={self.threshold}, gap={self.gap}, direction={self.directions[0]!r})"
        )

    @property
    def max_budget(self) -> Budget:
        return self._max_budget

    def assign(self, new_trials: bool = True) -> Assignment | None:
        return Assignment(None, self._max_budget) if new_trials else None

    def started(self, trial: int, assignment: Assignment) -> None:
        self.curves[trial] = []

    def report(self, trial: int, budget: Budget, value: float | Sequence[float]) -> Decision:
        if trial not in self.curves:
            raise ValueError(f"trial {trial} has no job: call started() first")
        self.score(value)  # refuses several values
        value = float(value)  # type: ignore[arg-type]
        curve = self.curves[trial]
        curve.append((float(budget), value))
        if budget >= self._max_budget:
            del self.curves[trial]
            if self.best is None or self._better(value, self.best):
                self.best = value
            return COMPLETE
        n = len(curve)
        if self.best is None or n < self.start_step or (n - self.start_step) % self.gap:
            return CONTINUE
        predicted = extrapolate([b for b, _ in curve], [v for _, v in curve], self._max_budget)
        if self._acceptable(predicted):
            return CONTINUE
        del self.curves[trial]
        return PRUNE

    def _better(self, a: float, b: float) -> bool:
        return a > b if self.directions[0] == "maximize" else a < b

    def _acceptable(self, predicted: float) -> bool:
        assert self.best is not None
        if self.directions[0] == "maximize":
            return predicted >= self.threshold * self.best
        return predicted <= self.best / self.threshold

    def failed(self, trial: int) -> None:
        self.curves.pop(trial, None)

    def state_dict(self) -> dict[str, Any]:
        return {
            "kind": "CurveFitting",
            "curves": sorted([t, [list(p) for p in c]] for t, c in self.curves.items()),
            "best": self.best,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if state.get("kind") != "CurveFitting":
            raise ValueError(f"the stored scheduler state is {state.get('kind')}, not {self!r}")
        self.curves = {int(t): [(float(b), float(v)) for b, v in c] for t, c in state["curves"]}
        self.best = None if state["best"] is None else float(state["best"])
