"""A multi-fidelity scheduler inside the trial loop: what the loop asks it, what it keeps.

The loop (:class:`~nasx.experiment.loop.TrialLoop`) holds one :class:`ScheduledRun` when
``NasExperiment(..., scheduler=ASHA(...))`` is given. For every free worker it asks
:meth:`ScheduledRun.next_assignment`: a new trial (the strategy's arch, or the scheduler's own when
:attr:`~nasx.experiment.schedulers.Assignment.arch` is set) trained up to a budget, or a paused
trial promoted to a larger one. Each ``report(value)`` of a running trial goes to
:meth:`ScheduledRun.decide`, which stops the trial at ``'pause'``/``'prune'``: in the same
process (the sequential executor passes it to :func:`~nasx.experiment.runner.run_trial`), or
from a worker process or a Ray task, whose ``report`` asks the driver and waits for the answer
(:mod:`~nasx.experiment.execution`, :mod:`~nasx.experiment.ray_execution`).

After each assignment and each finished job the scheduler's ``state_dict`` is written to the
store's meta under :data:`STATE_KEY`, with the jobs in flight and the answers each of them got
(:data:`JOBS_KEY`), in the same transaction as the trial's row (the loop's
``store.atomic()``): a run killed at any moment resumes with its rungs, re-runs the jobs that
were in flight at their budgets, and answers their reports as it answered them before the kill,
so the scheduler hears each (trial, budget) once.

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
from collections.abc import Iterable
from typing import Any

from nasx.evaluator.base import accepts_parameter
from nasx.trial import FAILED, PAUSED, Trial

from .schedulers.base import Assignment, Scheduler

_log = logging.getLogger("nasx.experiment")

__all__ = ["JOBS_KEY", "STATE_KEY", "ScheduledRun", "check_scheduler", "scheduled_run"]

#: the meta key of ``nasx.db`` that holds the scheduler's ``state_dict`` (JSON)
STATE_KEY = "scheduler_state"
#: the meta key of ``nasx.db`` that holds the jobs in flight, ``{'jobs': {trial: [budget,
#: from_budget, [[budget reached, decision], ...]]}}`` (the answers its reports got so far),
#: and ``'promotions'`` waiting for their trial's pausing job to end
#: (:meth:`ScheduledRun.next_assignment`)
JOBS_KEY = "scheduler_jobs"

#: the executions whose workers send each report to the scheduler and wait for its answer
EXECUTIONS = ("sequential", "process", "ray")


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
    if execution not in EXECUTIONS:
        raise NotImplementedError(
            f"scheduler= runs with execution in {EXECUTIONS}, not {execution!r}: its workers "
            "must send each report to the scheduler and wait for the answer "
            "(docs/multi_fidelity.md)"
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
    trials the strategy has heard of, the jobs in flight, and the state written to the store.

    Args:
        scheduler: the :class:`~nasx.experiment.schedulers.Scheduler`.
        store: where :meth:`save` writes the state (``set_meta_all``); None: nowhere.
        stored: the trials stored before this run (a resume): paused ones may be promoted,
            finished ones were told to the strategy already (it replays them in ``setup``).
        state: the scheduler's stored ``state_dict`` (a resume), loaded into it.
        jobs: the stored jobs in flight (:data:`JOBS_KEY`, a resume): the interrupted ones
            run again at their budgets, their reports answered as before.
    """

    def __init__(
        self,
        scheduler: Scheduler,
        store: Any = None,
        stored: Iterable[Trial] = (),
        state: dict[str, Any] | None = None,
        jobs: dict[str, Any] | None = None,
    ) -> None:
        self.scheduler, self.store = scheduler, store
        if state is not None:
            scheduler.load_state_dict(state)
        self.paused: dict[int, Trial] = {}
        self.told: set[int] = set()
        finished: dict[int, Trial] = {}
        for trial in stored:
            if trial.finished:
                self.told.add(trial.id)
                finished[trial.id] = trial
            if trial.status == PAUSED:
                self.paused[trial.id] = trial
        self.spent: float = 0  # budget units trained in this run, trials trained again included
        # trial -> (budget, from_budget) of its job in flight, and the answers its reports got
        self.jobs: dict[int, tuple[Any, Any]] = {}
        self.answers: dict[int, dict[Any, str]] = {}
        # promotions of trials whose pausing job had not ended yet (see next_assignment)
        self.promotions: list[Assignment] = [
            Assignment(trial, budget, start, bracket)
            for trial, budget, start, bracket in (jobs or {}).get("promotions", [])
        ]
        for key, (budget, start, answers) in (jobs or {}).get("jobs", {}).items():
            trial_id = int(key)
            if trial_id in finished:  # (a row failed on resume: crashed, rerun_interrupted=False)
                if finished[trial_id].status == FAILED:
                    self.scheduler.failed(trial_id)
                    self.promotions = [a for a in self.promotions if a.trial != trial_id]
                continue
            self.jobs[trial_id] = (budget, start)
            self.answers[trial_id] = {b: d for b, d in answers}
        self._said_restart = False

    def next_assignment(self, allow_new: bool) -> Assignment | None:
        """The scheduler's next assignment (:meth:`Scheduler.assign`).

        With several trials in flight the scheduler may promote a trial whose job it told to
        pause before that job's result came back: such a promotion waits (in order, and stored
        with the jobs) until the trial is paused in the store, and the worker gets the next
        assignment meanwhile (ASHA's workers never wait).
        """
        # (one whose job ended otherwise than paused will never be: dropped)
        self.promotions = [
            a for a in self.promotions if a.trial in self.paused or a.trial in self.jobs
        ]
        for i, waiting in enumerate(self.promotions):
            if waiting.trial in self.paused:
                return self.promotions.pop(i)
        while True:
            assignment = self.scheduler.assign(new_trials=allow_new)
            if assignment is None or assignment.trial is None or assignment.trial in self.paused:
                return assignment
            self.promotions.append(assignment)  # its pausing job is still in flight

    def started(self, trial: int, assignment: Assignment) -> None:
        """``assignment`` became new trial ``trial``."""
        self.scheduler.started(trial, assignment)
        self._job(trial, assignment.budget, 0)

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
        self._job(trial.id, assignment.budget, assignment.from_budget)
        return trial

    def _job(self, trial: int, budget: Any, start: Any) -> None:
        self.jobs[trial] = (budget, start)
        self.answers[trial] = {}
        self.save()

    def rerun(self, trial: int) -> tuple[Any, Any] | None:
        """``(budget, decided)`` of the job ``trial`` had in flight when the last run stopped
        (``decided``: the budget its reports were decided up to before that job); None when
        the scheduler gave it none (the store's row says what to run)."""
        return self.jobs.get(trial)

    def decide(self, trial: int, budget: Any, value: float) -> str:
        """The scheduler's answer to ``trial`` having reached ``budget`` with ``value``. A job
        re-run after a kill gets the answers its reports got before it, from the store: the
        scheduler hears each (trial, budget) once, as in a run never stopped."""
        answers = self.answers.setdefault(trial, {})
        if budget not in answers:
            answers[budget] = self.scheduler.report(trial, budget, value)
        return answers[budget]

    def finished(self, trial: Trial) -> bool:
        """Book the end of ``trial``'s job; whether the strategy should hear of it now (the
        first time one of its jobs ends, as :func:`~.schedulers.simulate` tells it)."""
        start = self.jobs.pop(trial.id, (None, 0))[1]
        self.answers.pop(trial.id, None)
        self.spent += max(0, (trial.budget or start) - start)
        if trial.status == FAILED:
            self.scheduler.failed(trial.id)
            self.promotions = [a for a in self.promotions if a.trial != trial.id]
        elif trial.status == PAUSED:
            self.paused[trial.id] = trial
        self.save()
        first = trial.id not in self.told
        self.told.add(trial.id)
        return first

    def save(self) -> None:
        """Write the scheduler's state and the jobs in flight to the store, in one
        transaction (every decision changes them)."""
        if self.store is None:
            return
        jobs = {
            "jobs": {
                str(t): [budget, start, sorted(self.answers.get(t, {}).items())]
                for t, (budget, start) in sorted(self.jobs.items())
            },
            "promotions": [[a.trial, a.budget, a.from_budget, a.bracket] for a in self.promotions],
        }
        self.store.set_meta_all({STATE_KEY: self.scheduler.state_dict(), JOBS_KEY: jobs})


def scheduled_run(scheduler: Scheduler | None, store: Any) -> ScheduledRun | None:
    """The loop's :class:`ScheduledRun` for one ``run()`` on ``store`` (a
    :class:`~nasx.experiment.storage.TrialStore`): the stored state and paused trials of an
    earlier run loaded (a resume), or None without a scheduler."""
    if scheduler is None:
        return None
    meta = store.meta()
    return ScheduledRun(scheduler, store, store.trials(), meta.get(STATE_KEY), meta.get(JOBS_KEY))
