"""Synchronous successive halving and Hyperband (Li et al., "Hyperband", JMLR 2018).

A **bracket** starts ``n`` trials at one rung; once every one of them has reported there, the
best ``1/eta`` (at least one) go on to the next rung, and so on to ``max_budget``. Hyperband
runs brackets that start at different rungs: bracket ``s`` starts
``ceil((s_max + 1) / (s + 1) * eta**s)`` trials at budget ``max_budget / eta**s``, hedging
between many cheap trials and few full ones. :class:`SuccessiveHalving` is the one bracket
that starts at ``min_budget``.

A bracket waiting for its rung to fill would leave workers idle; instead, a free worker opens
the next bracket (as Ray Tune's ``HyperBandScheduler`` does), so workers idle only when no
bracket can be opened (the strategy has no architecture left).

    >>> hb = Hyperband(min_budget=1, max_budget=9, eta=3)
    >>> [(b.start_rung, b.size) for b in hb.plan]  # (first rung, trials) per bracket, s = 2, 1, 0
    [(0, 9), (1, 5), (2, 3)]
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from nasx.experiment.schedulers.base import (
    COMPLETE,
    CONTINUE,
    PAUSE,
    Assignment,
    Budget,
    Decision,
    RankBy,
    RungScheduler,
)

__all__ = ["Hyperband", "SuccessiveHalving"]


@dataclass(frozen=True)
class BracketPlan:
    """Bracket ``index`` of a Hyperband round: ``size`` new trials at rung ``start_rung``."""

    start_rung: int
    size: int


@dataclass
class _Bracket:
    """One opened bracket: which trials sit at which rung, and which wait for a worker."""

    plan: BracketPlan
    members: dict[int, list[int]] = field(default_factory=dict)  # rung -> trials assigned there
    queue: list[int] = field(default_factory=list)  # trials promoted, not yet assigned
    rung: int = 0  # the rung being filled now
    started: int = 0  # new trials assigned so far

    def to_json(self) -> dict[str, Any]:
        return {
            "start_rung": self.plan.start_rung,
            "size": self.plan.size,
            "members": sorted([k, sorted(v)] for k, v in self.members.items()),
            "queue": list(self.queue),
            "rung": self.rung,
            "started": self.started,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> _Bracket:
        return cls(
            BracketPlan(int(data["start_rung"]), int(data["size"])),
            {int(k): [int(t) for t in v] for k, v in data["members"]},
            [int(t) for t in data["queue"]],
            int(data["rung"]),
            int(data["started"]),
        )


class Hyperband(RungScheduler):
    """Hyperband: rounds of successive-halving brackets (see the module docstring).

    Args:
        min_budget, max_budget, eta: the rungs, as for :class:`~nasx.experiment.schedulers.ASHA`.
        rank_by: what a rung ranks (``'last'``, ``'mean'``, ``'best'``), as for ASHA.
        directions, objectives, constraints: see :class:`~nasx.experiment.schedulers.Scheduler`.
    """

    def __init__(
        self,
        min_budget: Budget = 1,
        max_budget: Budget = 27,
        eta: int = 3,
        *,
        rank_by: RankBy = "last",
        directions: str | Sequence[str] = "maximize",
        objectives: Any = None,
        constraints: Any = None,
    ) -> None:
        super().__init__(
            min_budget,
            max_budget,
            eta,
            rank_by=rank_by,
            directions=directions,
            objectives=objectives,
            constraints=constraints,
        )
        s_max = self.top_rung
        self.plan = [
            BracketPlan(s_max - s, math.ceil((s_max + 1) / (s + 1) * eta**s))
            for s in range(s_max, -1, -1)
        ]
        self.brackets: list[_Bracket] = []  # every bracket opened, in order
        self.bracket_of: dict[int, int] = {}  # trial -> index into self.brackets

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(min_budget={self.budgets[0]}, max_budget={self.max_budget}, "
            f"eta={self.eta}{self._rank_by_repr()})"
        )

    def planned_budget(self, n_trials: int) -> float:
        """Exact: the brackets of the plan filled in turn (the last one with the trials left),
        each keeping the best ``1/eta`` (at least one) at every rung.

        >>> Hyperband(1, 9, eta=3).planned_budget(9 + 5)  # (9 to 1, 3 to 3, 1 to 9) + (5 to 3, 1 to 9)
        42
        """
        total: float = 0
        left = n_trials
        for index in range(n_trials):  # at most one bracket per trial
            if left <= 0:
                break
            plan = self.plan[index % len(self.plan)]
            size = min(plan.size, left)
            left -= size
            total += self._reached(plan.start_rung, size, lambda n: max(1, n // self.eta))
        return total

    def _done(self, b: _Bracket) -> bool:
        return b.rung == self.top_rung and not b.queue and self._rung_filled(b)

    def _rung_filled(self, b: _Bracket) -> bool:
        """Every trial of the bracket's current rung has reported there (or failed)."""
        expected = b.plan.size if b.rung == b.plan.start_rung else None
        members = b.members.get(b.rung, [])
        if expected is not None and b.started < expected:
            return False
        return all(t in self.rungs[b.rung] or t in self.dead for t in members)

    def assign(self, new_trials: bool = True) -> Assignment | None:
        if not new_trials:  # no architecture left: a bracket's first rung is what it has
            for b in self.brackets:
                if b.rung == b.plan.start_rung and b.started < b.plan.size:
                    b.plan = BracketPlan(b.plan.start_rung, b.started)
                    self._promote_if_filled(b)
        for index, b in enumerate(self.brackets):
            if b.queue:
                trial = b.queue.pop(0)
                self.target[trial] = b.rung
                return Assignment(trial, self.budgets[b.rung], self.budgets[b.rung - 1], index)
            if b.rung == b.plan.start_rung and b.started < b.plan.size and new_trials:
                return Assignment(None, self.budgets[b.rung], 0, index)  # counted in started()
        if not new_trials:
            return None
        # every open bracket is waiting or done: the next one of the round (opened in started())
        plan = self.plan[len(self.brackets) % len(self.plan)]
        return Assignment(None, self.budgets[plan.start_rung], 0, len(self.brackets))

    def started(self, trial: int, assignment: Assignment) -> None:
        if assignment.bracket == len(self.brackets):
            plan = self.plan[len(self.brackets) % len(self.plan)]
            self.brackets.append(_Bracket(plan, rung=plan.start_rung))
        b = self.brackets[assignment.bracket]
        if b.rung != b.plan.start_rung or b.started >= b.plan.size:
            raise ValueError(f"bracket {assignment.bracket} takes no new trial now")
        b.started += 1
        b.members.setdefault(b.plan.start_rung, []).append(trial)
        self.bracket_of[trial] = assignment.bracket
        self.target[trial] = b.plan.start_rung

    def report(self, trial: int, budget: Budget, value: float | Sequence[float]) -> Decision:
        if trial not in self.target:
            raise ValueError(f"trial {trial} has no job: call started() or assign() first")
        k = self.record(trial, budget, value)
        if k is None or k < self.target[trial]:
            return CONTINUE
        self.target.pop(trial)
        if k == self.top_rung:
            return COMPLETE
        self._promote_if_filled(self.brackets[self.bracket_of[trial]])
        return PAUSE

    def failed(self, trial: int) -> None:
        super().failed(trial)
        if trial in self.bracket_of:  # a failed trial may be the last one its rung waited for
            self._promote_if_filled(self.brackets[self.bracket_of[trial]])

    def _promote_if_filled(self, b: _Bracket) -> None:
        if b.rung == self.top_rung or not self._rung_filled(b):
            return
        members = set(b.members.get(b.rung, []))
        ranked = [t for t in self.ranked(b.rung) if t in members]
        keep = ranked[: max(1, len(ranked) // self.eta)] if ranked else []
        b.rung += 1
        b.members[b.rung] = list(keep)
        b.queue.extend(keep)

    def promotable(self, trial: int, budget: Budget) -> bool:
        """False once the bracket's rung at ``budget`` promoted others, not ``trial``."""
        index, k = self.bracket_of.get(trial), self.rung_of(budget)
        if trial in self.dead or k == self.top_rung:
            return False
        if index is None or k is None:  # not a trial of ours at a rung: cannot tell
            return True
        b = self.brackets[index]
        return b.rung <= k or trial in b.members.get(k + 1, ())

    def state_dict(self) -> dict[str, Any]:
        return {
            "kind": type(self).__name__,
            **self._base_state(),
            "brackets": [b.to_json() for b in self.brackets],
            "bracket_of": sorted(self.bracket_of.items()),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if state.get("kind") != type(self).__name__:
            raise ValueError(f"the stored scheduler state is {state.get('kind')}, not {self!r}")
        self._load_base_state(state)
        self.brackets = [_Bracket.from_json(b) for b in state["brackets"]]
        self.bracket_of = {int(t): int(i) for t, i in state["bracket_of"]}


class SuccessiveHalving(Hyperband):
    """Synchronous successive halving: Hyperband's most aggressive bracket only, repeated.

    Each bracket starts ``n_trials`` trials at ``min_budget`` (default ``eta ** s_max``, so that
    one trial reaches ``max_budget``) and halves them (by ``eta``) at each rung.

        >>> sh = SuccessiveHalving(min_budget=1, max_budget=4, eta=2)
        >>> sh.plan
        [BracketPlan(start_rung=0, size=4)]
    """

    def __init__(
        self,
        min_budget: Budget = 1,
        max_budget: Budget = 27,
        eta: int = 3,
        *,
        n_trials: int | None = None,
        rank_by: RankBy = "last",
        directions: str | Sequence[str] = "maximize",
        objectives: Any = None,
        constraints: Any = None,
    ) -> None:
        super().__init__(
            min_budget,
            max_budget,
            eta,
            rank_by=rank_by,
            directions=directions,
            objectives=objectives,
            constraints=constraints,
        )
        size = self.plan[0].size if n_trials is None else n_trials
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise ValueError(f"n_trials must be a positive integer, got {n_trials!r}")
        self.plan = [BracketPlan(0, size)]
