"""ASHA: asynchronous successive halving (Li et al., "A System for Massively Parallel
Hyperparameter Tuning", MLSys 2020).

Rungs sit at budgets ``min_budget * eta**k``. Two ways to use them:

- ``mode='promotion'`` (the paper's Algorithm 2): every trial starts at the first rung and
  pauses there; a free worker promotes the best paused trial of the highest rung whose top
  ``1/eta`` holds one not yet promoted, else starts a new trial. No worker ever waits for a rung
  to fill, and a promoted trial continues from its checkpoint.
- ``mode='stopping'`` (Ray Tune's ``ASHAScheduler``): every trial aims at ``max_budget`` and is
  pruned at a rung when it is not in the top ``1/eta`` of the results recorded there so far.
  Nothing needs to be checkpointed.

With several objectives the rungs rank by non-dominated fronts, then crowding (MO-ASHA).

    >>> asha = ASHA(min_budget=1, max_budget=4, eta=2)
    >>> for trial, value in enumerate([0.2, 0.6]):
    ...     asha.started(trial, asha.assign()); asha.report(trial, 1, value)
    'pause'
    'pause'
    >>> asha.assign()  # the better half of rung 1 (trial 1) goes to budget 2
    Assignment(trial=1, budget=2, from_budget=1, bracket=0)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Literal

from nasx.experiment.schedulers.base import (
    COMPLETE,
    CONTINUE,
    PAUSE,
    PRUNE,
    Assignment,
    Budget,
    Decision,
    RankBy,
    RungScheduler,
)

__all__ = ["ASHA"]


class ASHA(RungScheduler):
    """Asynchronous successive halving (see the module docstring).

    Args:
        min_budget: the first rung's budget (epochs by default); every trial trains this much.
        max_budget: the budget of a complete trial.
        eta: each rung keeps (promotes) its best ``1/eta``; an integer >= 2.
        mode: ``'promotion'`` (pause at each rung, promote later) or ``'stopping'`` (run on
            unless worse than the rung's top ``1/eta`` so far).
        rank_by: what a rung ranks: ``'last'`` (the value at its budget), ``'mean'`` or
            ``'best'`` (of the trial's reports so far: less noisy; see
            :class:`~nasx.experiment.schedulers.base.RungScheduler`).
        directions, objectives, constraints: see :class:`~nasx.experiment.schedulers.Scheduler`.
    """

    def __init__(
        self,
        min_budget: Budget = 1,
        max_budget: Budget = 27,
        eta: int = 3,
        *,
        mode: Literal["promotion", "stopping"] = "promotion",
        rank_by: RankBy = "last",
        directions: str | Sequence[str] = "maximize",
        objectives: Any = None,
        constraints: Any = None,
    ) -> None:
        if "auto" in (str(min_budget), str(eta)):
            raise ValueError(
                "ASHA takes fixed rungs: min_budget and eta are numbers; for rungs chosen from "
                "the learning curves during the run, use AutoASHA(max_budget=...) "
                "(nasx.experiment.schedulers.AutoASHA)"
            )
        super().__init__(
            min_budget,
            max_budget,
            eta,
            rank_by=rank_by,
            directions=directions,
            objectives=objectives,
            constraints=constraints,
        )
        if mode not in ("promotion", "stopping"):
            raise ValueError(f"mode must be 'promotion' or 'stopping', got {mode!r}")
        self.mode = mode
        self.promoted: list[set[int]] = [set() for _ in self.budgets]  # promoted out of rung k

    def __repr__(self) -> str:
        return (
            f"ASHA(min_budget={self.budgets[0]}, max_budget={self.max_budget}, eta={self.eta}, "
            f"mode={self.mode!r}{self._rank_by_repr()})"
        )

    def assign(self, new_trials: bool = True) -> Assignment | None:
        if self.mode == "promotion":
            for k in reversed(range(self.top_rung)):  # the highest rung first
                ranked = self.ranked(k)
                for trial in ranked[: len(ranked) // self.eta]:
                    if trial not in self.promoted[k]:
                        self.promoted[k].add(trial)
                        self.target[trial] = k + 1
                        return Assignment(trial, self.budgets[k + 1], self.budgets[k])
            return Assignment(None, self.budgets[0]) if new_trials else None
        return Assignment(None, self.max_budget) if new_trials else None

    def started(self, trial: int, assignment: Assignment) -> None:
        target = self.rung_of(assignment.budget)
        if target is None:
            raise ValueError(f"assignment budget {assignment.budget} is not a rung {self.budgets}")
        self.target[trial] = target

    def report(self, trial: int, budget: Budget, value: float | Sequence[float]) -> Decision:
        if trial not in self.target:
            raise ValueError(f"trial {trial} has no job: call started() or assign() first")
        k = self.record(trial, budget, value)
        if k is None:
            return CONTINUE
        if k == self.top_rung:
            self.target.pop(trial)
            return COMPLETE
        if self.mode == "promotion":
            if k < self.target[trial]:
                return CONTINUE  # passing a rung on the way to its target (it was promoted)
            self.target.pop(trial)
            return PAUSE
        ranked = self.ranked(k)
        keep = max(1, math.ceil(len(ranked) / self.eta))
        if trial in ranked[:keep]:
            return CONTINUE
        self.target.pop(trial)
        return PRUNE

    def paused(self) -> list[int]:
        """Trials waiting at a rung below the top, not promoted (all of them pruned in effect
        when the search ends)."""
        waiting = {
            trial
            for k in range(self.top_rung)
            for trial in self.rungs[k]
            if trial not in self.promoted[k] and trial not in self.dead
        }
        return sorted(waiting - set(self.target))  # not those training now

    def state_dict(self) -> dict[str, Any]:
        return {
            "kind": "ASHA",
            "mode": self.mode,
            **self._base_state(),
            "promoted": [sorted(p) for p in self.promoted],
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if state.get("kind") != "ASHA" or state.get("mode") != self.mode:
            raise ValueError(
                f"the stored scheduler state is {state.get('kind')}({state.get('mode')}), "
                f"not {self!r}"
            )
        self._load_base_state(state)
        self.promoted = [set(p) for p in state["promoted"]]
