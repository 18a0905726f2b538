"""A multi-fidelity scheduler inside the trial loop: what the loop asks it, what it keeps.

The loop (:class:`~nasx.experiment.loop.TrialLoop`) holds one :class:`ScheduledRun` when
``NasExperiment(..., scheduler=ASHA(...))`` is given. For every free worker it asks
:meth:`ScheduledRun.next_assignment`: a new trial (the strategy's arch, or the scheduler's own when
:attr:`~nasx.experiment.schedulers.Assignment.arch` is set) trained up to a budget, or a paused
trial promoted to a larger one. Each ``report(value)`` of a running trial goes to
:meth:`ScheduledRun.decide` in the same process (the sequential executor passes it to
:func:`~nasx.experiment.runner.run_trial`), which stops the trial at ``'pause'``/``'prune'``.
After each assignment and each finished job the scheduler's ``state_dict`` is written to the
store's meta under :data:`STATE_KEY`, so a resumed run continues its rungs.

A promoted trial is trained again from scratch up to its new budget (nasx's evaluators cannot
yet continue from a checkpoint); its reports below the budget it was promoted from are not
asked again, so the scheduler decides exactly as if it had continued, and the run says once
that it restarts them.

    >>> from nasx.experiment.schedulers import ASHA
    >>> run = ScheduledRun(ASHA(1, 4, eta=2))
    >>> first = run.next_assignment(allow_new=True); first
    Assignment(trial=None, budget=1, from_budget=0, bracket=0)
    >>> run.started(0, first); run.decide(0, 1, 0.5)
    'pause'
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any

from nasx.evaluator.base import accepts_parameter
from nasx.trial import FAILED, PAUSED, Trial

from .schedulers.base import Assignment, Scheduler

_log = logging.getLogger("nasx.experiment")

__all__ = ["STATE_KEY", "ScheduledRun", "check_scheduler", "scheduled_run"]

#: the meta key of ``nasx.db`` that holds the scheduler's ``state_dict`` (JSON)
STATE_KEY = "scheduler_state"


def check_scheduler(
    scheduler: Any, evaluator: Any, one_shot: bool, execution: str
) -> Scheduler | None:
    """``scheduler``, refused by name when the experiment cannot drive it (None passes).

    >>> check_scheduler(None, lambda model: 1.0, False, 'sequential')
    >>> from nasx.experiment.schedulers import ASHA
    >>> check_scheduler(ASHA(), lambda model, budget: 1.0, False, 'sequential')
    ASHA(min_budget=1, max_budget=27, eta=3, mode='promotion')
    >>> check_scheduler(ASHA(), lambda model: 1.0, False, 'sequential')  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    TypeError: scheduler=ASHA(...) gives each trial a budget, but the evaluator <lambda> declares...
    """
    if scheduler is None:
        return None
    if not isinstance(scheduler, Scheduler):
        raise TypeError(
            "scheduler must be a nasx.experiment.schedulers.Scheduler (ASHA, Hyperband, BOHB, "
            f"MedianStopping, ...), got {type(scheduler).__name__}"
        )
    if one_shot:
        raise ValueError(
            f"scheduler={scheduler!r} needs a multi-trial strategy: a one-shot strategy trains "
            "one supernet, there are no trials to stop early or promote"
        )
    fn = _budget_taker(evaluator)
    if not accepts_parameter(fn, "budget"):
        name = getattr(fn, "__qualname__", type(evaluator).__name__)
        raise TypeError(
            f"scheduler={scheduler!r} gives each trial a budget, but the evaluator {name} "
            "declares no `budget` parameter: write evaluate(model, report=None, budget=None) "
            "(nasx's Lightning, Classification and Regression train `budget` epochs) or "
            "fn(model, budget, report)"
        )
    if len(scheduler.directions) > 1 and scheduler.goal.objectives is None:
        raise ValueError(
            f"scheduler={scheduler!r} ranks {len(scheduler.directions)} objectives "
            f"(directions={list(scheduler.directions)}) but does not say which metrics: an "
            "evaluator reports a metrics dict, so name them with objectives=['accuracy', "
            "'-latency_ms'] (or {'accuracy': 'maximize', 'latency_ms': 'minimize'}) instead"
        )
    if execution != "sequential":
        raise NotImplementedError(
            f"scheduler= runs with execution='sequential' (one trial at a time) for now, not "
            f"{execution!r}: the process pool and Ray do not yet send the scheduler's decisions "
            "back into a running trial (docs/multi_fidelity.md)"
        )
    return scheduler


def _budget_taker(evaluator: Any) -> Any:
    """The function that must declare ``budget``: a wrapper's inner one (FunctionalEvaluator's
    ``fn``, CostEvaluator's ``evaluator``) passes ``budget`` on only when that one declares it."""
    from nasx.evaluator.base import CostEvaluator
    from nasx.evaluator.functional import FunctionalEvaluator

    if isinstance(evaluator, FunctionalEvaluator):
        return evaluator.fn
    if isinstance(evaluator, CostEvaluator):
        return _budget_taker(evaluator.evaluator)
    return getattr(evaluator, "evaluate", evaluator)


class ScheduledRun:
    """The loop's side of a scheduler for one ``run()``: paused trials, the budget spent, which
    trials the strategy has heard of, and the state written to the store.

    Args:
        scheduler: the :class:`~nasx.experiment.schedulers.Scheduler`.
        store: where :meth:`save` writes the state (``set_meta``); None: nowhere.
        stored: the trials stored before this run (a resume): paused ones may be promoted,
            finished ones were told to the strategy already (it replays them in ``setup``).
        state: the scheduler's stored ``state_dict`` (a resume), loaded into it.
    """

    def __init__(
        self,
        scheduler: Scheduler,
        store: Any = None,
        stored: Iterable[Trial] = (),
        state: dict[str, Any] | None = None,
    ) -> None:
        self.scheduler, self.store = scheduler, store
        if state is not None:
            scheduler.load_state_dict(state)
        self.paused: dict[int, Trial] = {}
        self.told: set[int] = set()
        for trial in stored:
            if trial.finished:
                self.told.add(trial.id)
            if trial.status == PAUSED:
                self.paused[trial.id] = trial
        self.spent: float = 0  # budget units trained in this run, trials trained again included
        self._starts: dict[int, float] = {}  # trial -> the budget its running job started from
        # budget reached in this run (each job's budget minus the one it was promoted from, a
        # restart's repeated epochs left out): what the progress display counts
        self.reached: float = 0
        self._from: dict[int, float] = {}  # trial -> the budget its running job was promoted from
        self._said_restart = False

    def next_assignment(self, allow_new: bool) -> Assignment | None:
        """The scheduler's next assignment (:meth:`Scheduler.assign`)."""
        return self.scheduler.assign(new_trials=allow_new)

    def started(self, trial: int, assignment: Assignment) -> None:
        """``assignment`` became new trial ``trial``."""
        self.scheduler.started(trial, assignment)
        self._starts[trial] = self._from[trial] = 0
        self.save()

    def promote(self, assignment: Assignment) -> Trial:
        """The paused trial ``assignment`` promotes (it is trained again from scratch)."""
        assert assignment.trial is not None
        trial = self.paused.pop(assignment.trial)
        if not self._said_restart:
            _log.warning(
                "promoted trials are trained again from scratch up to their new budget (trial "
                "%d: 0 -> %s, not %s -> %s): the evaluator cannot continue from a checkpoint",
                trial.id,
                assignment.budget,
                assignment.from_budget,
                assignment.budget,
            )
            self._said_restart = True
        self._starts[trial.id] = 0
        self._from[trial.id] = assignment.from_budget
        self.save()
        return trial

    def decide(self, trial: int, budget: Any, value: float | Mapping[str, float]) -> str:
        """The scheduler's answer to ``trial`` having reached ``budget`` with ``value`` (what it
        reported: a number or a metrics dict).

        The scheduler ranks the entries its ``objectives=`` name (its ``goal``; without them, the
        value or the dict's ``'default'``). A report that breaks one of its ``constraints=`` at
        a rung prunes the trial there, before it is ranked: the scheduler takes it out as it
        takes out a failed trial (never promoted, in no ranking), so it holds no rung's place.

            >>> from nasx.experiment.schedulers import ASHA
            >>> run = ScheduledRun(ASHA(1, 4, eta=2, objectives=['acc'], constraints={'ms': 5}))
            >>> run.started(0, run.next_assignment(allow_new=True))
            >>> run.decide(0, 1, {'default': 0.9, 'acc': 0.9, 'ms': 7.0})
            'prune'
        """
        goal = self.scheduler.goal
        if goal.constraints and self.scheduler.decides_at(budget):
            why = goal.violation(value)
            if why is not None:
                _log.info("trial %d pruned at budget %s: %s", trial, budget, why)
                self.scheduler.failed(trial)
                return "prune"
        return self.scheduler.report(trial, budget, goal.values(value))

    def finished(self, trial: Trial) -> bool:
        """Book the end of ``trial``'s job; whether the strategy should hear of it now (the
        first time one of its jobs ends, as :func:`~.schedulers.simulate` tells it)."""
        start = self._starts.pop(trial.id, 0)
        self.spent += max(0, (trial.budget or start) - start)
        below = self._from.pop(trial.id, 0)
        if trial.status != FAILED:
            self.reached += max(0, (trial.budget or below) - below)
        if trial.status == FAILED:
            self.scheduler.failed(trial.id)
        elif trial.status == PAUSED:
            self.paused[trial.id] = trial
        self.save()
        first = trial.id not in self.told
        self.told.add(trial.id)
        return first

    def save(self) -> None:
        """Write the scheduler's state to the store (every decision changes it)."""
        if self.store is not None:
            self.store.set_meta(STATE_KEY, self.scheduler.state_dict())


def scheduled_run(scheduler: Scheduler | None, store: Any) -> ScheduledRun | None:
    """The loop's :class:`ScheduledRun` for one ``run()`` on ``store`` (a
    :class:`~nasx.experiment.storage.TrialStore`): the stored state and paused trials of an
    earlier run loaded (a resume), or None without a scheduler."""
    if scheduler is None:
        return None
    state = store.meta().get(STATE_KEY)
    return ScheduledRun(scheduler, store, store.trials(), state)
