"""ASHA whose rungs are chosen during the run, from the learning curves it has seen (issue 44).

Every rung scheduler in Optuna, Ray Tune and Syne Tune asks for a grace period (the first rung's
budget) and a reduction factor ``eta``. The right ones depend on the curves: a rung is worth its
epochs only if the ranking there predicts the final one, and on this project's learning-curve
tables the default rungs at 3 and 9 epochs of a 27-epoch cosine schedule rank the archs *worse*
than epoch 1 does (``benchmarks/multi_fidelity.results.md``). :class:`AutoASHA` measures that
in the run itself and sets the rungs from it:

1. **Probe.** The first ``probes`` new trials (6) train the full ``max_budget``, reporting after
   every budget unit. Meanwhile the other workers run a provisional ASHA with two rungs, the
   smallest candidate grace period and ``max_budget`` (``eta`` their ratio).
2. **Agreement.** For each candidate grace period ``b`` (every budget up to ``max_budget //
   2``), the Spearman correlation ``rho(b)`` over the probes between their rung score at ``b``
   (``rank_by``) and their final value, with an interval one standard error either side
   (:func:`spearman_interval`).
3. **Rule.** The rungs are two: a grace period ``r`` and ``max_budget``; a rung at ``r``
   keeps the best ``1/eta`` of the trials it ranks. For each ``(b, eta)`` a Gaussian model
   (``screened_best``) gives the expected best final value of a search of ``horizon`` full
   trainings' budget (30) that screens at ``b`` and trains ``1/eta`` of the screened trials
   fully, averaged over ``rho(b)`` and the two ends of its interval. ``eta`` runs from
   ``ceil(max_budget / b)`` (no rung between) upwards, and each ``b`` keeps its best ``eta``. A
   cheap rung screens more trials for the budget, a good agreement lets it keep fewer: the
   more the first epochs agree with the last, the larger ``eta``.
   The grace period is the cheapest candidate whose expected best is within one standard error
   of the largest (the one-standard-error rule: a later rung must be clearly better to be
   paid for). If even at the upper end of its agreement's interval that screen would find
   less than training the same budget's archs fully (``expected_best(horizon)``), the early
   budgets do not rank the trials, and every trial trains ``max_budget``.
4. **Run.** From then on it is :class:`~nasx.experiment.schedulers.ASHA` with the chosen rungs.
   The probes enter its rungs as trials screened and promoted; when the rungs differ from the
   provisional ones, the other trials enter at the budgets they reached (one paused below the
   new grace period is continued to it from its checkpoint; one in flight, when its job ends).

**Cost.** The probes' training, ``probes * max_budget`` budget units (6 full trainings by
default), is part of the search: a simulation or an experiment counts it like any other
training. The probes are complete trials, candidates for the pick like the others, but an ASHA
with the chosen rungs would have trained most of them for ``r`` units only. The decision itself
(a few milliseconds) takes no budget.

**State.** The probes, every curve heard before the decision, the decision (each candidate's
agreement, interval, expected best and ``eta``; the grace period, ``eta``) and the ASHA's
state are JSON (:meth:`AutoASHA.state_dict`), so a killed run resumes to the same rungs and
decisions. Nothing is drawn at random: the same reports in the same order make the same decision.

    >>> auto = AutoASHA(max_budget=4, probes=4)
    >>> finals = {0: [.1, .2, .3, .4], 1: [.3, .4, .5, .6], 2: [.2, .3, .4, .5], 3: [.4, .5, .6, .7]}
    >>> for trial, curve in finals.items():  # the probes train the full budget
    ...     auto.started(trial, auto.assign())
    ...     decisions = [auto.report(trial, b, v) for b, v in enumerate(curve, 1)]
    >>> decisions[-1], auto.decision['grace_period'], auto.decision['eta'], auto.budgets
    ('complete', 1, 8, [1, 4])
    >>> auto.assign()  # a new trial is screened at the first rung
    Assignment(trial=None, budget=1, from_budget=0, bracket=0)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from nasx.experiment.schedulers.asha import ASHA
from nasx.experiment.schedulers.base import (
    COMPLETE,
    CONTINUE,
    PAUSE,
    RANK_BY,
    Assignment,
    Budget,
    Decision,
    RankBy,
    Scheduler,
)
from nasx.experiment.schedulers.screening import (
    expected_best,
    screened_best,
    spearman,
    spearman_interval,
)

__all__ = ["AutoASHA", "expected_best", "screened_best", "spearman", "spearman_interval"]


def _positive_int(name: str, value: Any, minimum: int, why: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum} ({why}), got {value!r}")
    return value


class AutoASHA(Scheduler):
    """ASHA whose grace period and reduction factor come from the curves of its first trials
    (the rule, its cost and its state: the module docstring).

    Args:
        max_budget: the budget of a complete trial, a whole number of budget units (epochs) >= 2:
            the grace period is chosen among the budgets at which trials report.
        probes: how many of the first trials train ``max_budget`` to measure the agreement
            (>= 4: the standard error of a rank correlation needs four); their training is the
            rule's cost.
        horizon: the search's budget the rule plans for, in full trainings (>= 2). The choice
            moves little with it: on the agreements measured here, ``eta`` stays within a factor
            of two for horizons from 10 to 100.
        grace_periods: the candidate grace periods, budgets below ``max_budget`` (default:
            every whole budget up to ``max_budget // 2``, so that ``eta >= 2``).
        rank_by: what a rung ranks, as for :class:`~nasx.experiment.schedulers.ASHA`; the
            agreement is measured on the same scores.
        directions, objectives, constraints: see :class:`~nasx.experiment.schedulers.Scheduler`;
            one objective only (a rank correlation ranks one number).

    ``inner`` is the ASHA it runs: the provisional one (rungs at the smallest candidate and
    ``max_budget``) until ``decision`` is made, then the chosen one; :attr:`budgets` and
    :attr:`eta` are its rungs.
    """

    def __init__(
        self,
        max_budget: int = 27,
        *,
        probes: int = 6,
        horizon: int = 30,
        grace_periods: Sequence[int] | None = None,
        rank_by: RankBy = "last",
        directions: str | Sequence[str] = "maximize",
        objectives: Any = None,
        constraints: Any = None,
    ) -> None:
        super().__init__(directions=directions, objectives=objectives, constraints=constraints)
        if len(self.directions) != 1:
            raise ValueError(
                f"AutoASHA ranks one objective (a rank correlation compares one number), got "
                f"directions {list(self.directions)!r}: give one direction or one objective, or "
                "use ASHA with fixed rungs for several"
            )
        self._max = _positive_int(
            "max_budget", max_budget, 2, "whole budget units: the rungs sit at reported budgets"
        )
        self.probes = _positive_int(
            "probes", probes, 4, "the standard error of a rank correlation needs four trials"
        )
        self.horizon = _positive_int(
            "horizon", horizon, 2, "the search's budget in full trainings, which the rule plans for"
        )
        if grace_periods is None:
            candidates = list(range(1, max_budget // 2 + 1))
        else:
            if isinstance(grace_periods, str | bytes) or not isinstance(grace_periods, Sequence):
                raise ValueError(
                    f"grace_periods must be a list of whole budgets below max_budget "
                    f"({max_budget}), got {grace_periods!r}"
                )
            candidates = sorted(set(grace_periods))
            if not candidates or any(
                isinstance(b, bool) or not isinstance(b, int) or not 1 <= b < max_budget
                for b in candidates
            ):
                raise ValueError(
                    f"grace_periods must be a non-empty list of whole budgets from 1 to "
                    f"{max_budget - 1} (below max_budget), got {grace_periods!r}"
                )
        self.grace_periods: list[int] = candidates
        if rank_by not in RANK_BY:
            raise ValueError(
                f"rank_by must be one of {', '.join(map(repr, RANK_BY))}, got {rank_by!r}"
            )
        self.rank_by = rank_by
        self.probe_trials: list[int] = []  # live probes, in the order they started
        # trial -> {budget: value}: every trial's reports until the decision, the probes' after
        self.curves: dict[int, dict[int, float]] = {}
        # trial -> the budget its job ends at, for the jobs this class answers itself: the
        # probes' before the decision, and those the provisional rungs gave that end after it
        self.jobs: dict[int, int] = {}
        self.dead: set[int] = set()
        self.queue: list[int] = []  # paused below the chosen grace period, to be continued to it
        self.decision: dict[str, Any] | None = None
        self.inner = self._asha(self.grace_periods[0])  # provisional until the decision

    def _asha(self, grace: int, eta: int | None = None) -> ASHA:
        """The two-rung ASHA at ``grace`` (one rung when it is ``max_budget``); ``eta`` defaults
        to the smallest that leaves no rung between (successive halving's equal budget)."""
        eta = max(2, math.ceil(self._max / grace)) if eta is None else eta
        return ASHA(grace, self._max, eta, rank_by=self.rank_by, directions=self.directions)

    def __repr__(self) -> str:
        by = "" if self.rank_by == "last" else f", rank_by={self.rank_by!r}"
        chosen = "" if self.decision is None else f", rungs {self.inner.budgets}"
        return f"AutoASHA(max_budget={self._max}, probes={self.probes}{by}){chosen}"

    @property
    def max_budget(self) -> Budget:
        return self._max

    @property
    def budgets(self) -> list[Budget]:
        """The rungs (the provisional ones until the decision, then the chosen ones)."""
        return self.inner.budgets

    @property
    def eta(self) -> int:
        """The reduction factor (the provisional one until the decision, then the chosen one)."""
        return self.inner.eta

    def decides_at(self, budget: Budget) -> bool:
        return self.inner.decides_at(budget)

    # -- the protocol ---------------------------------------------------------------------

    def assign(self, new_trials: bool = True) -> Assignment | None:
        job = self.inner.assign(new_trials=False)  # promotions first, as ASHA orders them
        if job is not None:
            return job
        if self.queue:  # paused at the provisional first rung, below the chosen one: on to it
            trial = self.queue.pop(0)
            self.inner.target[trial] = 0
            return Assignment(trial, self.inner.budgets[0], self.grace_periods[0])
        if self.decision is None:
            if new_trials and len(self.probe_trials) < self.probes:
                return Assignment(None, self._max)  # a probe (counted in started())
            if not new_trials and not any(t in self.jobs for t in self.probe_trials):
                self._decide()  # no architecture left and no probe running: decide on those done
                return self.assign(new_trials)
        return self.inner.assign(new_trials)

    def started(self, trial: int, assignment: Assignment) -> None:
        if self.decision is None and assignment.budget == self._max:
            # a probe: the provisional rungs start their new trials lower
            self.probe_trials.append(trial)
            self.jobs[trial] = self._max
            self.curves[trial] = {}
            return
        self.inner.started(trial, assignment)
        if self.decision is None:
            self.curves[trial] = {}

    def report(self, trial: int, budget: Budget, value: float | Sequence[float]) -> Decision:
        if trial in self.dead:
            raise ValueError(f"trial {trial} failed earlier; it cannot report again")
        if trial not in self.jobs and trial not in self.inner.target:
            raise ValueError(f"trial {trial} has no job: call started() or assign() first")
        self.score(value)  # refuses a value that does not fit the directions
        if trial in self.curves:  # (a re-run job's report was heard before: kept as it was)
            raw = float(value) if isinstance(value, int | float) else float(value[0])
            self.curves[trial].setdefault(int(budget), raw)
        if trial not in self.jobs:
            return self.inner.report(trial, budget, value)
        end = self.jobs[trial]
        if budget < end:
            return CONTINUE
        del self.jobs[trial]
        if self.decision is not None:  # a job started before the decision, ending after it
            self._hand_over(trial)
        elif self._probes_done():
            self._decide()
        return COMPLETE if budget >= self._max else PAUSE

    def failed(self, trial: int) -> None:
        self.dead.add(trial)
        self.jobs.pop(trial, None)
        if trial in self.queue:
            self.queue.remove(trial)
        if self.decision is None and trial in self.probe_trials:
            self.probe_trials.remove(trial)  # a new probe takes its place
            self.curves.pop(trial, None)
            return
        if trial not in self.probe_trials:
            self.curves.pop(trial, None)
        self.inner.failed(trial)

    # -- the rule -------------------------------------------------------------------------

    def _probes_done(self) -> bool:
        return len(self.probe_trials) >= self.probes and not any(
            t in self.jobs for t in self.probe_trials
        )

    def _signed(self, value: float) -> float:
        return self.score(value)[0]

    def _rung_score(self, curve: dict[int, float], budget: int) -> float | None:
        """What a rung at ``budget`` ranks for a trial with ``curve`` (None: not reported)."""
        if budget not in curve:
            return None
        if self.rank_by == "last":
            return self._signed(curve[budget])
        seen = [self._signed(v) for b, v in curve.items() if b <= budget]
        return sum(seen) / len(seen) if self.rank_by == "mean" else max(seen)

    def agreement(self) -> dict[int, float]:
        """Spearman correlation, over the complete probes, of each candidate grace period's rung
        score with the final value (the rule's observations; 0 where undefined)."""
        done = [self.curves[t] for t in self.probe_trials if self._max in self.curves.get(t, {})]
        final = [self._signed(c[self._max]) for c in done]
        out = {}
        for b in self.grace_periods:
            pairs = [
                (s, f) for c, f in zip(done, final) if (s := self._rung_score(c, b)) is not None
            ]
            out[b] = spearman([s for s, _ in pairs], [f for _, f in pairs])
        return out

    def plan(self, grace: int, rhos: Sequence[float]) -> tuple[float, int]:
        """``(expected best, eta)`` of the best two-rung screen at ``grace`` for a search of
        ``horizon`` full trainings' budget, the rung score's Spearman correlation with the
        final value being each of ``rhos`` alike (an estimate and its interval): the mean of
        ``screened_best`` over them, for ``eta`` from ``ceil(max_budget / grace)`` (two rungs)
        up, on a grid 10% apart, while a screen promotes at least one trial."""
        best: tuple[float, int] | None = None
        step, tried = 0, 0
        while True:
            eta = math.ceil(self._max / grace * 1.1**step - 1e-9)
            step += 1
            if eta <= tried:  # (the grid's first steps round to the same eta)
                continue
            tried = eta
            screened = self.horizon * self._max / (grace + (self._max - grace) / eta)
            if screened / eta < 1:
                break
            value = sum(self._value_at(grace, rho, eta) for rho in rhos) / len(rhos)
            if best is None or value > best[0]:
                best = (value, eta)
        if best is None:  # (not even one trial promoted: the horizon is too short to screen)
            eta = math.ceil(self._max / grace)
            return sum(self._value_at(grace, rho, eta) for rho in rhos) / len(rhos), eta
        return best

    def _value_at(self, grace: int, rho: float, eta: int) -> float:
        """``screened_best`` of a screen at ``grace`` keeping ``1 / eta``, for a search of
        ``horizon`` full trainings' budget, at Spearman correlation ``rho``."""
        pearson = max(-1.0, min(1.0, 2 * math.sin(math.pi * rho / 6)))  # under a normal copula
        screened = self.horizon * self._max / (grace + (self._max - grace) / eta)
        return screened_best(pearson, screened, max(1.0, min(screened, screened / eta)))

    def _decide(self) -> None:
        """Choose the rungs from the probes' curves; hand every trial heard so far to the ASHA
        that runs them (a new one when they differ from the provisional rungs)."""
        agreement = self.agreement()
        done = [t for t in self.probe_trials if self._max in self.curves.get(t, {})]
        rows = {}
        for b, rho in agreement.items():
            low, mid, high = spearman_interval(rho, len(done))
            value, eta = self.plan(b, (low, mid, high))
            spread = (self._value_at(b, high, eta) - self._value_at(b, low, eta)) / 2
            rows[b] = (rho, low, high, value, spread, eta, self._value_at(b, high, eta))
        top = max(self.grace_periods, key=lambda b: (rows[b][3], -b))
        # the one-standard-error rule: the cheapest candidate within one s.e. of the best
        grace = min(b for b in self.grace_periods if rows[b][3] >= rows[top][3] - rows[top][4])
        eta = rows[grace][5]
        full = expected_best(self.horizon)  # the same budget spent on full trainings
        if not rows[grace][6] >= full:
            grace, eta = self._max, 2  # the early budgets do not rank the trials: no screening
        chosen = self._asha(grace, eta)
        self.decision = {
            "grace_period": grace,
            "eta": chosen.eta,
            "probes": done,
            "probe_budget": len(done) * self._max,
            "full_budget_value": full,
            # per candidate: budget, agreement, its interval (low, high), the expected best of
            # its best screen (mean over the interval), that screen's eta, the best's s.e.
            "candidates": [[b, *rows[b][:3], rows[b][3], rows[b][5], rows[b][4]] for b in rows],
        }
        if chosen.budgets == self.inner.budgets and chosen.eta == self.inner.eta:
            handed = list(self.probe_trials)  # the provisional ASHA holds every other trial
        else:
            provisional, self.inner = self.inner, chosen
            for trial, rung in provisional.target.items():  # in flight: ends where it was to
                self.jobs[trial] = int(provisional.budgets[rung])
            handed = sorted(self.curves)
        for trial in handed:
            if trial not in self.jobs:  # those still training are handed over when they end
                self._hand_over(trial)
        for trial in list(self.curves):
            if trial not in self.probe_trials and trial not in self.jobs:
                del self.curves[trial]  # the inner ASHA holds its scores now

    def _hand_over(self, trial: int) -> None:
        """Put ``trial``'s reports in the chosen ASHA's rungs: where it stopped, it waits as any
        paused ASHA trial does (or for its continuation to the grace period, below it)."""
        inner = self.inner
        curve = self.curves[trial]
        for budget in sorted(curve):
            inner.record(trial, budget, curve[budget])
        reached = max(curve, default=0)
        for k in range(inner.top_rung):
            if inner.budgets[k + 1] <= reached:
                inner.promoted[k].add(trial)
        if reached < inner.budgets[0]:
            self.queue.append(trial)
        if trial not in self.probe_trials:
            del self.curves[trial]

    # -- state ----------------------------------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        state: dict[str, Any] = {
            "kind": "AutoASHA",
            "max_budget": self._max,
            "probes": self.probes,
            "horizon": self.horizon,
            "grace_periods": list(self.grace_periods),
            "rank_by": self.rank_by,
            "probe_trials": list(self.probe_trials),
            "curves": [[t, sorted(c.items())] for t, c in sorted(self.curves.items())],
            "jobs": sorted(self.jobs.items()),
            "dead": sorted(self.dead),
            "queue": list(self.queue),
            "decision": self.decision,
            "inner": self.inner.state_dict(),
        }
        if self.goal.objectives is not None:
            state["objectives"] = dict(self.goal.objectives)
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if state.get("kind") != "AutoASHA":
            raise ValueError(f"the stored scheduler state is {state.get('kind')}, not {self!r}")
        mine = {
            "max_budget": self._max,
            "probes": self.probes,
            "horizon": self.horizon,
            "grace_periods": list(self.grace_periods),
            "rank_by": self.rank_by,
            "objectives": self.goal.objectives,
        }
        for name, value in mine.items():
            if state.get(name) != value:
                raise ValueError(
                    f"the stored AutoASHA used {name}={state.get(name)!r}, this one {value!r}: "
                    f"resume with the same {name}= (its probes and decision depend on it)"
                )
        self.probe_trials = [int(t) for t in state["probe_trials"]]
        self.curves = {int(t): {int(b): float(v) for b, v in c} for t, c in state["curves"]}
        self.jobs = {int(t): int(b) for t, b in state["jobs"]}
        self.dead = {int(t) for t in state["dead"]}
        self.queue = [int(t) for t in state["queue"]]
        self.decision = state["decision"]
        if self.decision is None:
            self.inner = self._asha(self.grace_periods[0])
        else:
            self.inner = self._asha(int(self.decision["grace_period"]), int(self.decision["eta"]))
        self.inner.load_state_dict(state["inner"])
