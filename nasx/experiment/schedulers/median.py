"""Median stopping: prune a trial whose best result so far is worse than the median of what the
other trials reported at the same budget (Google Vizier's rule; Optuna's ``MedianPruner``,
NNI's ``Medianstop`` assessor).

Every trial aims at ``max_budget``. From ``min_budget`` on (the grace period), at each report,
once at least ``min_trials`` other trials have reported at that budget, a trial whose best
value so far is worse than their median is pruned. The other trials' values count as soon as
they are reported (running trials included), so the rule needs no barrier; Optuna counts
completed trials only, which waits longer before pruning the first ones.

    >>> m = MedianStopping(min_budget=1, max_budget=3, min_trials=2)
    >>> for trial, value in enumerate([0.5, 0.7, 0.6]):
    ...     m.started(trial, m.assign()); m.report(trial, 1, value)
    'continue'
    'continue'
    'continue'
    >>> m.started(3, m.assign()); m.report(3, 1, 0.4)  # median of 0.5, 0.7, 0.6 is 0.6
    'prune'
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any

from nasx.experiment.schedulers.base import (
    COMPLETE,
    CONTINUE,
    PRUNE,
    Assignment,
    Budget,
    Decision,
    Scheduler,
)

__all__ = ["MedianStopping"]


class MedianStopping(Scheduler):
    """Median stopping rule (see the module docstring); one objective only.

    Args:
        min_budget: no trial is pruned before it has trained this much (the grace period).
        max_budget: the budget of a complete trial.
        min_trials: how many other trials must have reported at a budget before it prunes.
        direction: ``'maximize'`` or ``'minimize'``.
    """

    def __init__(
        self,
        min_budget: Budget = 1,
        max_budget: Budget = 27,
        *,
        min_trials: int = 5,
        direction: str = "maximize",
    ) -> None:
        if not isinstance(direction, str):
            raise ValueError(
                "MedianStopping ranks one objective; for several, use ASHA or Hyperband with "
                f"directions=[...] (got direction={direction!r})"
            )
        super().__init__(directions=direction)
        for name, value in (("min_budget", min_budget), ("max_budget", max_budget)):
            if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
                raise ValueError(f"{name} must be a positive number, got {value!r}")
        if min_budget > max_budget:
            raise ValueError(f"min_budget ({min_budget}) must not exceed max_budget ({max_budget})")
        if isinstance(min_trials, bool) or not isinstance(min_trials, int) or min_trials < 1:
            raise ValueError(f"min_trials must be a positive integer, got {min_trials!r}")
        self.min_budget, self._max_budget, self.min_trials = min_budget, max_budget, min_trials
        self.values: dict[float, dict[int, float]] = {}  # budget -> trial -> score
        self.best: dict[int, float] = {}  # trial -> best score so far
        self.running: set[int] = set()
        self.dead: set[int] = set()

    def __repr__(self) -> str:
        return (
            f"MedianStopping(min_budget={self.min_budget}, max_budget={self._max_budget}, "
            f"min_trials={self.min_trials}, direction={self.directions[0]!r})"
        )

    @property
    def max_budget(self) -> Budget:
        return self._max_budget

    def assign(self, new_trials: bool = True) -> Assignment | None:
        return Assignment(None, self._max_budget) if new_trials else None

    def started(self, trial: int, assignment: Assignment) -> None:
        self.running.add(trial)

    def report(self, trial: int, budget: Budget, value: float | Sequence[float]) -> Decision:
        if trial not in self.running:
            raise ValueError(f"trial {trial} has no job: call started() first")
        (score,) = self.score(value)
        self.values.setdefault(float(budget), {})[trial] = score
        self.best[trial] = max(score, self.best.get(trial, score))
        if budget >= self._max_budget:
            self.running.discard(trial)
            return COMPLETE
        if budget < self.min_budget:
            return CONTINUE
        others = [
            v for t, v in self.values[float(budget)].items() if t != trial and t not in self.dead
        ]
        if len(others) < self.min_trials or self.best[trial] >= statistics.median(others):
            return CONTINUE
        self.running.discard(trial)
        return PRUNE

    def failed(self, trial: int) -> None:
        self.dead.add(trial)
        self.running.discard(trial)

    def state_dict(self) -> dict[str, Any]:
        return {
            "kind": "MedianStopping",
            "values": sorted([b, sorted(v.items())] for b, v in self.values.items()),
            "best": sorted(self.best.items()),
            "running": sorted(self.running),
            "dead": sorted(self.dead),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if state.get("kind") != "MedianStopping":
            raise ValueError(f"the stored scheduler state is {state.get('kind')}, not {self!r}")
        self.values = {float(b): {int(t): float(s) for t, s in v} for b, v in state["values"]}
        self.best = {int(t): float(s) for t, s in state["best"]}
        self.running = {int(t) for t in state["running"]}
        self.dead = {int(t) for t in state["dead"]}
