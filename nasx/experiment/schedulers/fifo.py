"""No early stopping: every trial trains the full budget, first come first served (Ray Tune's and
Syne Tune's ``FIFOScheduler``). A search without a scheduler runs through the same loop with
``FullBudget()`` (:func:`nasx.experiment.loop.scheduled.scheduled_run`), so both make the same calls and
compare in the same simulator.

    >>> s = FullBudget(max_budget=3)
    >>> job = s.assign(); s.started(0, job); job.budget, s.report(0, 1, 0.1), s.report(0, 3, 0.5)
    (3, 'continue', 'complete')
    >>> FullBudget().assign().budget is None  # the evaluator's own full training
    True
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from nasx.experiment.schedulers.base import (
    COMPLETE,
    CONTINUE,
    Assignment,
    Budget,
    Decision,
    Scheduler,
)

__all__ = ["FullBudget"]


class FullBudget(Scheduler):
    """Every trial trains ``max_budget``; nothing is paused or pruned (but for a broken
    ``constraints=`` entry, as with any scheduler).

    Args:
        max_budget: the budget every trial trains (epochs by default); None: no budget is
            passed, each trial trains as long as its evaluator does (a search without a
            scheduler).
        directions, objectives, constraints: as for every
            :class:`~nasx.experiment.schedulers.Scheduler`.
    """

    def __init__(
        self,
        max_budget: Budget | None = None,
        *,
        directions: str | Sequence[str] = "maximize",
        objectives: Any = None,
        constraints: Any = None,
    ) -> None:
        super().__init__(directions=directions, objectives=objectives, constraints=constraints)
        if max_budget is not None and (
            isinstance(max_budget, bool)
            or not isinstance(max_budget, int | float)
            or not max_budget > 0
        ):
            raise ValueError(
                f"max_budget must be a positive number (or None: the evaluator's own "
                f"training), got {max_budget!r}"
            )
        self._max_budget = max_budget

    def __repr__(self) -> str:
        return f"FullBudget(max_budget={self._max_budget})"

    @property
    def max_budget(self) -> Budget:
        # None (the evaluator's own training) has no number: the loop's jobs carry None
        return self._max_budget  # type: ignore[return-value]

    @property
    def decides(self) -> bool:
        """True only with constraints (the one thing that stops a trial early); without, no
        report is asked."""
        return bool(self.goal.constraints)

    def planned_budget(self, n_trials: int) -> float | None:
        return None if self._max_budget is None else n_trials * self._max_budget

    def assign(self, new_trials: bool = True) -> Assignment | None:
        return Assignment(None, self._max_budget) if new_trials else None  # type: ignore[arg-type]

    def started(self, trial: int, assignment: Assignment) -> None:
        pass

    def report(self, trial: int, budget: Budget, value: float | Sequence[float]) -> Decision:
        self.score(value)  # refuses a value that does not fit the directions
        done = self._max_budget is not None and budget >= self._max_budget
        return COMPLETE if done else CONTINUE

    def failed(self, trial: int) -> None:
        pass

    def state_dict(self) -> dict[str, Any]:
        return {"kind": "FullBudget"}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if state.get("kind") != "FullBudget":
            raise ValueError(f"the stored scheduler state is {state.get('kind')}, not {self!r}")
