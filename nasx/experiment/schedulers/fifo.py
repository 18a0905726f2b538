"""No early stopping: every trial trains the full budget (what a search without a scheduler does,
as a scheduler, so that both run through the same loop and compare in the same simulator).

    >>> s = FullBudget(max_budget=3)
    >>> job = s.assign(); s.started(0, job); job.budget, s.report(0, 1, 0.1), s.report(0, 3, 0.5)
    (3, 'continue', 'complete')
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .base import COMPLETE, CONTINUE, Assignment, Budget, Decision, Scheduler

__all__ = ["FullBudget"]


class FullBudget(Scheduler):
    """Every trial trains ``max_budget``; nothing is paused or pruned."""

    def __init__(
        self,
        max_budget: Budget,
        *,
        directions: str | Sequence[str] = "maximize",
        objectives: Any = None,
        constraints: Any = None,
    ) -> None:
        super().__init__(directions=directions, objectives=objectives, constraints=constraints)
        if isinstance(max_budget, bool) or not isinstance(max_budget, int | float):
            raise ValueError(f"max_budget must be a positive number, got {max_budget!r}")
        if not max_budget > 0:
            raise ValueError(f"max_budget must be a positive number, got {max_budget!r}")
        self._max_budget = max_budget

    def __repr__(self) -> str:
        return f"FullBudget(max_budget={self._max_budget})"

    @property
    def max_budget(self) -> Budget:
        return self._max_budget

    def planned_budget(self, n_trials: int) -> float:
        return n_trials * self._max_budget

    def assign(self, new_trials: bool = True) -> Assignment | None:
        return Assignment(None, self._max_budget) if new_trials else None

    def started(self, trial: int, assignment: Assignment) -> None:
        pass

    def report(self, trial: int, budget: Budget, value: float | Sequence[float]) -> Decision:
        self.score(value)  # refuses a value that does not fit the directions
        return COMPLETE if budget >= self._max_budget else CONTINUE

    def failed(self, trial: int) -> None:
        pass

    def state_dict(self) -> dict[str, Any]:
        return {"kind": "FullBudget"}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if state.get("kind") != "FullBudget":
            raise ValueError(f"the stored scheduler state is {state.get('kind')}, not {self!r}")
