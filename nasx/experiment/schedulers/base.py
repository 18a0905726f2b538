"""The scheduler seam: what a free worker runs next, and what a trial does after each report.

A multi-fidelity search trains each architecture at a **budget** (epochs by default). A
:class:`Scheduler` sits between the evaluator's ``report(value)`` and the store:

- :meth:`Scheduler.assign` tells a free worker what to run: a new architecture (the strategy
  proposes it, or the scheduler itself: BOHB) up to some budget, or a paused trial promoted to a larger one;
- :meth:`Scheduler.report` answers each intermediate result, while the trial runs, with a
  :data:`Decision`: ``'continue'``; ``'pause'`` (stop now, keep the checkpoint: it may be
  promoted later); ``'prune'`` (stop for good); ``'complete'`` (the maximum budget is reached).

As Syne Tune separates pausing from stopping, and Ray Tune's schedulers ``save``/``restore``
their state, every scheduler here is plain data: :meth:`Scheduler.state_dict` is JSON, so its
state can live in ``nasx.db`` next to the trials, and the same events in the same order lead
to the same decisions (no random draws; BOHB's draws come from its seed and the number of trials
started, so they too are a function of the events).

    >>> from nasx.experiment.schedulers import ASHA
    >>> asha = ASHA(min_budget=1, max_budget=9, eta=3)
    >>> asha.budgets
    [1, 3, 9]
    >>> job = asha.assign(); job
    Assignment(trial=None, budget=1, from_budget=0, bracket=0)
    >>> asha.started(0, job); asha.report(0, 1, 0.5)
    'pause'
"""

from __future__ import annotations

import abc
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal, get_args

from nasx.experiment.schedulers.objectives import MetricGoal
from nasx.experiment.schedulers.pareto import Score, best_first, to_score

__all__ = [
    "COMPLETE",
    "CONTINUE",
    "PAUSE",
    "PRUNE",
    "RANK_BY",
    "Assignment",
    "Decision",
    "RankBy",
    "RungScheduler",
    "Scheduler",
    "rung_budgets",
]

#: What :meth:`Scheduler.report` decides for a trial after a budget unit, one of
#: :data:`CONTINUE`, :data:`PAUSE`, :data:`PRUNE` and :data:`COMPLETE`.
Decision = Literal["continue", "pause", "prune", "complete"]
#: The trial trains on.
CONTINUE: Final = "continue"
#: The trial stops here, at a rung, and may be promoted to a larger budget later.
PAUSE: Final = "pause"
#: The trial stops for good, not good enough at this budget.
PRUNE: Final = "prune"
#: The trial reached the scheduler's maximum budget and is done.
COMPLETE: Final = "complete"

Budget = float | int


@dataclass(frozen=True, repr=False)
class Assignment:
    """What a free worker runs: ``trial`` (None: a new architecture) trained from
    ``from_budget`` (0 for a new trial; else continue from the checkpoint left there) up to
    ``budget``. ``bracket`` names the Hyperband bracket it belongs to (0 without brackets).

    ``arch``: for a new trial, the architecture the scheduler proposes itself (a model-based
    scheduler such as :class:`~nasx.experiment.schedulers.BOHB`); None, the usual case, means
    the strategy proposes it. The loop trains ``arch`` when given and then calls
    :meth:`Scheduler.started` with this assignment, so the scheduler learns which trial got it.

    >>> Assignment(None, 3, arch={'op': 'conv'})
    Assignment(trial=None, budget=3, from_budget=0, bracket=0, arch={'op': 'conv'})
    """

    trial: int | None
    budget: Budget
    from_budget: Budget = 0
    bracket: int = 0
    arch: dict[str, Any] | None = None

    def __repr__(self) -> str:  # ``arch`` only when a scheduler proposed one
        fields = f"trial={self.trial!r}, budget={self.budget!r}, from_budget={self.from_budget!r}"
        fields += f", bracket={self.bracket!r}"
        return f"Assignment({fields}{'' if self.arch is None else f', arch={self.arch!r}'})"


def rung_budgets(min_budget: Budget, max_budget: Budget, eta: int) -> list[Budget]:
    """The budgets at which rungs sit: ``min_budget * eta**k`` below ``max_budget``, then it.

    Integer arguments give integer budgets (epochs).

    >>> rung_budgets(1, 9, 3), rung_budgets(1, 10, 3), rung_budgets(0.1, 1.0, 2)
    ([1, 3, 9], [1, 3, 9, 10], [0.1, 0.2, 0.4, 0.8, 1.0])
    """
    if not isinstance(eta, int) or isinstance(eta, bool) or eta < 2:
        raise ValueError(f"eta must be an integer >= 2, got {eta!r}")
    for name, value in (("min_budget", min_budget), ("max_budget", max_budget)):
        if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
            raise ValueError(f"{name} must be a positive number, got {value!r}")
        if not math.isfinite(value):
            raise ValueError(f"{name} must be finite, got {value!r}")
    if min_budget > max_budget:
        raise ValueError(
            f"min_budget ({min_budget}) must not exceed max_budget ({max_budget}): "
            "trials start at min_budget and are promoted up to max_budget"
        )
    integral = isinstance(min_budget, int) and isinstance(max_budget, int)
    budgets: list[Budget] = []
    k = 0
    while True:
        b = min_budget * eta**k
        b = int(b) if integral else round(b, 12)
        if b >= max_budget or math.isclose(b, max_budget):
            break
        budgets.append(b)
        k += 1
    budgets.append(max_budget)
    return budgets


def _directions(directions: str | Sequence[str]) -> tuple[str, ...]:
    dirs = (directions,) if isinstance(directions, str) else tuple(directions)
    if not dirs or any(d not in ("maximize", "minimize") for d in dirs):
        raise ValueError(
            f"directions must be 'maximize', 'minimize' or a list of them, got {directions!r}"
        )
    return dirs


class Scheduler(abc.ABC):
    """Base class of multi-fidelity schedulers (see the module docstring for the protocol).

    The loop that drives a scheduler calls :meth:`setup` with the search space once; then, for
    every free worker, :meth:`assign`; when the assignment starts a new trial (trained on the
    assignment's ``arch`` when the scheduler proposed one, else on the strategy's proposal),
    :meth:`started` with the trial's id; then :meth:`report`
    after each budget unit the trial trains, until a decision other than ``'continue'``;
    :meth:`failed` when a trial raised or its worker died.

    Args:
        directions: ``'maximize'``/``'minimize'``, or one per objective when ``report`` gets
            several values (accuracy and latency): then rungs rank by non-dominated fronts.
        objectives: in an experiment, the entries of the evaluator's metrics dict to rank, with
            their directions: ``['accuracy', '-latency_ms']`` or ``{'accuracy': 'maximize',
            'latency_ms': 'minimize'}`` (as ``NasExperiment.pareto_front`` takes them); they set
            ``directions``. None: the reported value, or its ``'default'``.
        constraints: in an experiment, limits on reported metrics (``{'params': (None, 1e6),
            'latency_ms': 5.0}``, :class:`~nasx.experiment.filters.CostFilter`'s forms): a trial
            breaking one is pruned at the first rung that shows it (:mod:`.objectives`).
    """

    def __init__(
        self,
        *,
        directions: str | Sequence[str] = "maximize",
        objectives: Any = None,
        constraints: Any = None,
    ) -> None:
        self.goal = MetricGoal.parse(objectives, constraints)
        dirs = _directions(directions)
        if self.goal.objectives is not None:
            if dirs not in (("maximize",), self.goal.directions):
                raise ValueError(
                    f"directions={directions!r} disagree with objectives={objectives!r}: give "
                    "objectives alone (each metric's direction is part of it)"
                )
            dirs = self.goal.directions
        self.directions = dirs

    @property
    def decides(self) -> bool:
        """Whether the scheduler answers a running trial's reports (it may pause or prune the
        trial there). False for :class:`~nasx.experiment.schedulers.FullBudget` without
        constraints: every trial trains its budget, so no executor asks after each report (from
        a worker, a round trip per epoch)."""
        return True

    def decides_at(self, budget: Budget) -> bool:
        """Whether a report at ``budget`` meets a decision point (a rung): where a trial that
        breaks a constraint is pruned. Every report, for schedulers without rungs."""
        return True

    def planned_budget(self, n_trials: int) -> float | None:
        """The budget ``n_trials`` new trials reach in all (each trial's largest budget, summed),
        promotions included, when it does not depend on the results (and no trial fails or
        breaks a constraint): what a progress display counts towards. None here: pruning on
        results (ASHA, median stopping) leaves it open, at most ``n_trials * max_budget``.
        Successive halving, Hyperband and BOHB plan it exactly.

        >>> from nasx.experiment.schedulers import ASHA, Hyperband
        >>> ASHA(1, 9, eta=3).planned_budget(27), Hyperband(1, 9, eta=3).planned_budget(9)
        (None, 21)
        """
        return None

    @property
    @abc.abstractmethod
    def max_budget(self) -> Budget:
        """The budget at which a trial is complete."""

    def setup(self, search_space: Mapping[str, Any]) -> None:
        """Called by the loop once, before the first :meth:`assign`, with the search space
        (``{label: Choice}``). Schedulers that only decide budgets ignore it; one that proposes
        architectures (sets the ``arch`` of its :class:`Assignment`, as BOHB does) models this
        space."""
        return None  # nothing to model by default

    @abc.abstractmethod
    def assign(self, new_trials: bool = True) -> Assignment | None:
        """What a free worker should run next, or None when nothing can run now (a synchronous
        rung waits to fill). ``new_trials=False``: the strategy has no architecture left, so
        only promotions may be assigned."""

    @abc.abstractmethod
    def started(self, trial: int, assignment: Assignment) -> None:
        """Called when ``assignment`` (from :meth:`assign`, with ``trial=None``) became new
        trial ``trial``."""

    @abc.abstractmethod
    def report(self, trial: int, budget: Budget, value: float | Sequence[float]) -> Decision:
        """Called with the trial's metric once it has trained ``budget`` units in all; returns
        what the trial does next."""

    @abc.abstractmethod
    def failed(self, trial: int) -> None:
        """Called when ``trial`` failed: it is never promoted, and its results stay out of
        every ranking from now on."""

    @abc.abstractmethod
    def state_dict(self) -> dict[str, Any]:
        """The scheduler's state as JSON-compatible data."""

    @abc.abstractmethod
    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore what :meth:`state_dict` returned (for the same scheduler arguments)."""

    def score(self, value: float | Sequence[float]) -> Score:
        """``value`` (one number, or one per objective) as a tuple where larger is better: each
        minimized objective's sign flipped."""
        return to_score(value, self.directions)

    def promotable(self, trial: int, budget: Budget) -> bool:
        """Whether ``trial``, paused at ``budget``, may still be promoted. True unless the
        scheduler knows it never will be (a synchronous rung that promoted others): the
        experiment then deletes the trial's checkpoint. An asynchronous scheduler (ASHA) may
        promote any paused trial later, so it keeps the default."""
        return True


RankBy = Literal["last", "mean", "best"]
RANK_BY: Final = get_args(RankBy)  # ('last', 'mean', 'best')


class RungScheduler(Scheduler):
    """Shared machinery of rung-based schedulers (ASHA, successive halving, Hyperband): the rung
    budgets, each rung's recorded scores, each trial's target rung, the failed trials.

    ``rank_by`` says which score of a trial a rung ranks:

    - ``'last'`` (the default, as in the ASHA and Hyperband papers, Ray Tune and Optuna): the
      value reported at the rung's budget;
    - ``'mean'``: the mean of every value the trial reported up to the rung (the area under its
      curve so far, Vizier's running average);
    - ``'best'``: the best value it reported up to the rung (per objective, with several).

    The last value is the noisiest where a validation metric jumps from epoch to epoch (a high
    learning rate mid-schedule, a small validation split); ``'best'`` and ``'mean'`` smooth it.
    On the three learning-curve tables made here, ``'best'`` was never clearly worse than
    ``'last'`` and up to a point better on the noisiest; ``'mean'`` was the best rule on one and
    lost up to a point on another (``benchmarks/multi_fidelity.results.md``). Both need a report
    at every budget unit (the loop sends each one); a trial's reports are folded in once each,
    in budget order.

        >>> from nasx.experiment.schedulers import ASHA
        >>> asha = ASHA(1, 9, eta=3, rank_by='best')
        >>> asha.started(0, asha.assign())
        >>> asha.report(0, 1, 0.6); asha.started(1, asha.assign()); asha.report(1, 1, 0.5)
        'pause'
        'pause'
        >>> asha.started(2, asha.assign()); asha.report(2, 1, 0.4)
        'pause'
        >>> asha.assign()  # trial 0 is the best third of rung 1: promoted to 3
        Assignment(trial=0, budget=3, from_budget=1, bracket=0)
        >>> asha.report(0, 2, 0.8); asha.report(0, 3, 0.7)  # the rung at 3 records its best, 0.8
        'continue'
        'pause'
        >>> asha.rungs[1]
        {0: (0.8,)}
    """

    def __init__(
        self,
        min_budget: Budget,
        max_budget: Budget,
        eta: int,
        *,
        rank_by: RankBy = "last",
        directions: str | Sequence[str] = "maximize",
        objectives: Any = None,
        constraints: Any = None,
    ) -> None:
        super().__init__(directions=directions, objectives=objectives, constraints=constraints)
        self.budgets = rung_budgets(min_budget, max_budget, eta)
        self.eta = eta
        if rank_by not in RANK_BY:
            raise ValueError(
                f"rank_by must be one of {', '.join(map(repr, RANK_BY))}, got {rank_by!r}: what "
                "a rung ranks (the value at its budget, or the mean or best of the curve so far)"
            )
        self.rank_by = rank_by
        self.rungs: list[dict[int, Score]] = [{} for _ in self.budgets]
        self.target: dict[int, int] = {}  # trial -> index of the rung its current job ends at
        self.dead: set[int] = set()  # failed trials
        # rank_by 'mean' / 'best': trial -> (last budget heard, reports heard, their sum / best)
        self.curves: dict[int, tuple[Budget, int, Score]] = {}

    def _rank_by_repr(self) -> str:
        """``, rank_by=...`` for a ``__repr__`` when it is not the default."""
        return "" if self.rank_by == "last" else f", rank_by={self.rank_by!r}"

    @property
    def max_budget(self) -> Budget:
        return self.budgets[-1]

    @property
    def top_rung(self) -> int:
        return len(self.budgets) - 1

    def decides_at(self, budget: Budget) -> bool:
        return self.rung_of(budget) is not None

    def _reached(self, start_rung: int, size: int, keep: Any) -> float:
        """The budget ``size`` trials starting at ``start_rung`` reach in all, when
        ``keep(n)`` of the ``n`` at a rung go on to the next one."""
        total: float = 0
        below: Budget = 0
        for k in range(start_rung, len(self.budgets)):
            total += size * (self.budgets[k] - below)
            below, size = self.budgets[k], keep(size)
        return total

    def rung_of(self, budget: Budget) -> int | None:
        """Index of the rung at ``budget``, or None between rungs; refuses budgets past the top."""
        if budget > self.max_budget and not math.isclose(budget, self.max_budget):
            raise ValueError(f"budget {budget} is past max_budget {self.max_budget}")
        for k, b in enumerate(self.budgets):
            if math.isclose(budget, b):
                return k
        return None

    def ranked(self, k: int) -> list[int]:
        """The live trials recorded at rung ``k``, best first."""
        live = {t: s for t, s in self.rungs[k].items() if t not in self.dead}
        return best_first(live)

    def record(self, trial: int, budget: Budget, value: float | Sequence[float]) -> int | None:
        """Store ``value`` in the rung at ``budget`` (if any); returns that rung's index."""
        if trial in self.dead:
            raise ValueError(f"trial {trial} failed earlier; it cannot report again")
        k = self.rung_of(budget)
        score = self.score(value) if self.rank_by == "last" else self._fold(trial, budget, value)
        if k is not None:
            self.rungs[k][trial] = score
        return k

    def _fold(self, trial: int, budget: Budget, value: float | Sequence[float]) -> Score:
        """Fold a report into ``trial``'s running mean or best; returns its rank score now. A
        report at a budget heard before (a job re-run after a kill) is not counted again."""
        score = self.score(value)
        heard = self.curves.get(trial)
        if heard is None:
            heard = (budget, 1, score)
        elif budget > heard[0] and not math.isclose(budget, heard[0]):
            _, count, acc = heard
            if self.rank_by == "mean":
                acc = tuple(a + s for a, s in zip(acc, score))
            else:
                acc = tuple(max(a, s) for a, s in zip(acc, score))
            heard = (budget, count + 1, acc)
        self.curves[trial] = heard
        _, count, acc = heard
        return tuple(a / count for a in acc) if self.rank_by == "mean" else acc

    def failed(self, trial: int) -> None:
        self.dead.add(trial)
        self.target.pop(trial, None)
        self.curves.pop(trial, None)

    def _base_state(self) -> dict[str, Any]:
        state = {
            "budgets": list(self.budgets),
            "rungs": [[[t, list(s)] for t, s in sorted(r.items())] for r in self.rungs],
            "target": sorted(self.target.items()),
            "dead": sorted(self.dead),
        }
        if self.goal.objectives is not None:  # the rungs' scores are these metrics
            state["objectives"] = dict(self.goal.objectives)
        if self.rank_by != "last":  # (states stored before rank_by existed have neither key)
            state["rank_by"] = self.rank_by
            state["curves"] = [[t, b, n, list(a)] for t, (b, n, a) in sorted(self.curves.items())]
        return state

    def _load_base_state(self, state: dict[str, Any]) -> None:
        if list(state["budgets"]) != list(self.budgets):
            raise ValueError(
                f"the stored scheduler used budgets {state['budgets']}, this one {self.budgets}: "
                "resume with the same min_budget, max_budget and eta"
            )
        if state.get("objectives") != self.goal.objectives:
            raise ValueError(
                f"the stored scheduler ranked objectives {state.get('objectives')}, this one "
                f"{self.goal.objectives}: resume with the same objectives= (the scores in its "
                "rungs are those metrics)"
            )
        if state.get("rank_by", "last") != self.rank_by:
            raise ValueError(
                f"the stored scheduler ranked rungs by {state.get('rank_by', 'last')!r}, this "
                f"one by {self.rank_by!r}: resume with the same rank_by= (the scores in its "
                "rungs were computed that way)"
            )
        self.curves = {int(t): (b, int(n), tuple(a)) for t, b, n, a in state.get("curves", [])}
        self.rungs = [{int(t): tuple(s) for t, s in rung} for rung in state["rungs"]]
        self.target = {int(t): int(k) for t, k in state["target"]}
        self.dead = {int(t) for t in state["dead"]}
