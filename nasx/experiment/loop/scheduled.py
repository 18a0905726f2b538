"""A multi-fidelity scheduler inside the trial loop: what the loop asks it, what it keeps.

The loop (:class:`~nasx.experiment.loop.trial_loop.TrialLoop`) holds one :class:`ScheduledRun` when
``NasExperiment(..., scheduler=ASHA(...))`` is given. For every free worker it asks
:meth:`ScheduledRun.next_assignment`: a new trial (the strategy's arch, or the scheduler's own when
:attr:`~nasx.experiment.schedulers.Assignment.arch` is set) trained up to a budget, or a paused
trial promoted to a larger one. Each ``report(value)`` of a running trial goes to
:meth:`ScheduledRun.decide`, which stops the trial at ``'pause'``/``'prune'``: in the same
process (the sequential executor passes it to :func:`~nasx.experiment.execution.runner.run_trial`), or
from a worker process or a Ray task, whose ``report`` asks the driver and waits for the answer
(:mod:`~nasx.experiment.execution.local`, :mod:`~nasx.experiment.execution.ray`).

After each assignment and each finished job the scheduler's ``state_dict`` is written to the
store's meta under :data:`STATE_KEY`, with the jobs in flight and the answers each of them got
(:data:`JOBS_KEY`), in the same transaction as the trial's row (the loop's
``store.atomic()``): a run killed at any moment resumes with its rungs, re-runs the jobs that
were in flight at their budgets, and answers their reports as it answered them before the kill,
so the scheduler hears each (trial, budget) once.

A promoted trial continues from the checkpoint it left at the budget it paused at, when the
evaluator declares a ``checkpoint`` parameter (:mod:`nasx.evaluator.checkpoint`; nasx's
``Lightning``, ``Classification`` and ``Regression`` do): its job trains from ``b`` to ``B``
only, and :attr:`ScheduledRun.spent` counts ``B - b``. The checkpoints live in the trial's
folder (``trials/<id>/checkpoint``); the one at the budget a paused trial reached is kept, the
others go once its job is stored, and all go when it is pruned, fails or completes. An
evaluator that cannot continue (or a trial without a checkpoint there) is trained again from
scratch up to its new budget, its reports below ``b`` not asked again, so the scheduler
decides exactly as if it had continued; the run says once which evaluator restarts them.

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

from nasx.experiment.loop.checkpoints import Checkpoints, NoCheckpoints, TrialFolders
from nasx.experiment.loop.scheduler_checks import (
    EXECUTIONS as EXECUTIONS,  # (its home before; still importable)
)
from nasx.experiment.loop.scheduler_checks import can_continue, check_scheduler, warn_restarted
from nasx.experiment.schedulers.base import Assignment, Scheduler
from nasx.experiment.schedulers.fifo import FullBudget
from nasx.trial import FAILED, PAUSED, PRUNED, Trial

_log = logging.getLogger("nasx.experiment")

__all__ = [
    "JOBS_KEY",
    "STATE_KEY",
    "ScheduledRun",
    "can_continue",
    "check_scheduler",
    "scheduled_run",
]

#: the meta key of ``nasx.db`` that holds the scheduler's ``state_dict`` (JSON)
STATE_KEY = "scheduler_state"
#: the meta key of ``nasx.db`` that holds the jobs in flight, ``{'jobs': {trial: [budget,
#: from_budget, [[budget reached, decision], ...]]}}`` (the answers its reports got so far),
#: and ``'promotions'`` waiting for their trial's pausing job to end
#: (:meth:`ScheduledRun.next_assignment`)
JOBS_KEY = "scheduler_jobs"

#: how the row of a trial pruned by a constraint begins its reason (its ``error`` column)
CONSTRAINT_BROKEN = "constraint broken"


class ScheduledRun:
    """The loop's side of a scheduler for one ``run()``: paused trials, the budget spent, which
    trials the strategy has heard of, where each job starts from (its checkpoint), and the state
    written to the store.

    Args:
        scheduler: the :class:`~nasx.experiment.schedulers.Scheduler`.
        store: where :meth:`save` writes the state (``set_meta_all``) and the rows of the paused
            trials it prunes (``update``); None: nowhere.
        stored: the trials stored before this run (a resume): paused ones may be promoted,
            finished ones were told to the strategy already (it replays them in ``setup``).
        state: the scheduler's stored ``state_dict`` (a resume), loaded into it.
        evaluator: the experiment's evaluator: one that declares a ``checkpoint`` parameter
            (:func:`can_continue`) continues promoted trials; any other is restarted.
        jobs: the stored jobs in flight (:data:`JOBS_KEY`, a resume): the interrupted ones
            run again, their reports answered as before.
        checkpoints: where the trials' training states are
            (:mod:`~nasx.experiment.loop.checkpoints`; :func:`scheduled_run` gives the store's
            trial folders); None: nowhere, so every promotion restarts.
        continues: whether promoted trials continue from their checkpoints; default: when the
            evaluator can (:func:`can_continue`) and there are checkpoints.

    Without a scheduler a run has ``ScheduledRun(FullBudget())`` (:func:`scheduled_run`):
    every trial is a new one at the evaluator's own budget, and nothing is paused or asked.
    """

    def __init__(
        self,
        scheduler: Scheduler,
        store: Any = None,
        stored: Iterable[Trial] = (),
        state: dict[str, Any] | None = None,
        evaluator: Any = None,
        jobs: dict[str, Any] | None = None,
        checkpoints: Checkpoints | None = None,
        continues: bool | None = None,
    ) -> None:
        self.scheduler, self.store = scheduler, store
        self.checkpoints = checkpoints if checkpoints is not None else NoCheckpoints()
        if state is not None:
            scheduler.load_state_dict(state)
        self.paused: dict[int, Trial] = {}
        self.told: set[int] = set()
        failed: list[int] = []
        finished: dict[int, Trial] = {}
        for trial in stored:
            if trial.finished:
                self.told.add(trial.id)
                finished[trial.id] = trial
            if trial.status == PAUSED:
                self.paused[trial.id] = trial
            elif trial.status == FAILED:
                failed.append(trial.id)
        self.spent: float = 0  # budget units trained in this run, trials trained again included
        self.evaluator = evaluator
        if continues is None:
            continues = (
                evaluator is not None
                and can_continue(evaluator)
                and not isinstance(checkpoints, NoCheckpoints)
            )
        self.continues = continues
        # trial -> (the budget its running job starts from, decided up to, curve before it)
        self._starts: dict[int, tuple[Any, Any, list[float]]] = {}
        # budget reached in this run (each job's budget minus the one it was promoted from, a
        # restart's repeated epochs left out): what the progress display counts
        self.reached: float = 0
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
        #: trial -> why :meth:`decide` pruned its job: a broken constraint (see :meth:`explain`)
        self.reasons: dict[int, str] = {}
        #: paused trials pruned since the loop last looked (:meth:`_drop_unpromotable`)
        self.retired: list[Trial] = []
        # checkpoints nothing will continue, left by a killed run or failed by the resume
        # (an interrupted trial not re-run, one that crashed the process too often)
        self._drop_unpromotable()
        for trial_id in failed:
            self.checkpoints.drop(trial_id)

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
        self._starts[trial] = (0, 0, [])
        self._job(trial, assignment.budget, 0)

    def promote(self, assignment: Assignment) -> Trial:
        """The paused trial ``assignment`` promotes: it continues from its checkpoint at
        ``assignment.from_budget`` when there is one and the evaluator can, else it is trained
        again from scratch (its reports up to there are not asked again)."""
        assert assignment.trial is not None
        trial = self.paused.pop(assignment.trial)
        start = assignment.from_budget
        if not self._continuable(trial.id, start):
            self._say_restart(trial.id, start, assignment.budget)
            start = 0
        self._starts[trial.id] = (start, assignment.from_budget, _curve_before(trial, start))
        self._job(trial.id, assignment.budget, assignment.from_budget)
        return trial

    def _job(self, trial: int, budget: Any, start: Any) -> None:
        """A job of ``trial`` up to ``budget`` began (promoted from ``start``): stored."""
        self.jobs[trial] = (budget, start)
        self.answers[trial] = {}
        self.save()

    def rerun(self, trial: Trial) -> None:
        """``trial`` was interrupted in flight (a stopped or killed run, resumed): its job goes
        on from its last checkpoint below the budget it trained towards, or from scratch."""
        start = self.checkpoints.latest_below(trial.id, trial.budget) if self.continues else 0
        # its reports up to the budget its job was promoted from were decided by earlier jobs
        decided = max(start, self.jobs.get(trial.id, (None, 0))[1])
        self._starts[trial.id] = (start, decided, _curve_before(trial, start))

    def job_fields(self, trial: int, budget: Any) -> dict[str, Any]:
        """The :class:`~nasx.experiment.execution.jobs.Job` fields of ``trial``'s job up to ``budget``:
        where it starts (``from_budget``), up to where it was decided (``decided_budget``) and
        its :class:`~nasx.evaluator.checkpoint.Checkpoint` (None when the evaluator cannot
        continue)."""
        start, decided, _ = self._starts.get(trial, (0, 0, []))
        fields: dict[str, Any] = {"from_budget": start, "decided_budget": decided}
        if self.continues:
            keep = budget is None or budget < self.scheduler.max_budget  # else none continues
            fields["checkpoint"] = self.checkpoints.for_job(trial, start, budget, keep)
        return fields

    def whole_curve(self, result: Any) -> None:
        """Put the values a continued trial reported before its job started in front of the
        job's own (a :class:`~nasx.experiment.execution.jobs.TrialResult`): its row keeps the whole
        curve."""
        _, _, before = self._starts.get(result.id, (0, 0, []))
        if before:
            result.intermediates = before + list(result.intermediates)

    def explain(self, result: Any) -> None:
        """Say in a pruned job's result (a :class:`~nasx.experiment.execution.jobs.TrialResult`) why the
        scheduler pruned it, when a constraint did (:meth:`decide`): its row keeps the reason
        where a failed trial keeps its error, so the trial table, ``nasx show`` and the
        dashboard show it."""
        why = self.reasons.pop(result.id, None)
        if why is not None and result.status == PRUNED and not result.error:
            result.error = why

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
            >>> run.reasons[0]  # what the trial's row says (explain)
            'constraint broken at budget 1: ms 7 above 5'
        """
        goal = self.scheduler.goal
        if goal.constraints and self.scheduler.decides_at(budget):
            why = goal.violation(value)
            if why is not None:
                _log.info("trial %d pruned at budget %s: %s", trial, budget, why)
                self.reasons[trial] = f"{CONSTRAINT_BROKEN} at budget {budget}: {why}"
                self.scheduler.failed(trial)
                return "prune"
        answers = self.answers.setdefault(trial, {})
        if budget not in answers:  # a job re-run after a kill: the answers it got before
            answers[budget] = self.scheduler.report(trial, budget, goal.values(value))
        return answers[budget]

    def finished(self, trial: Trial) -> bool:
        """Book the end of ``trial``'s job; whether the strategy should hear of it now (the
        first time one of its jobs ends, as :func:`~.schedulers.simulate` tells it)."""
        # start: the budget the job trained from; below: the one it was promoted from (what the
        # trial had reached before: a restart's repeated epochs are spent, not reached)
        start, below, _ = self._starts.pop(trial.id, (0, 0, []))
        self.jobs.pop(trial.id, None)
        self.answers.pop(trial.id, None)
        self.spent += max(0, (trial.budget or start) - start)
        if trial.status != FAILED:
            self.reached += max(0, (trial.budget or below) - below)
        if trial.status == FAILED:
            self.scheduler.failed(trial.id)
            self.promotions = [a for a in self.promotions if a.trial != trial.id]
        elif trial.status == PAUSED:
            self.paused[trial.id] = trial
        self.save()
        self._tidy(trial)
        self._drop_unpromotable()
        first = trial.id not in self.told
        self.told.add(trial.id)
        return first

    def save(self) -> None:
        """Write the scheduler's state and the jobs in flight to the store, in one
        transaction (every decision changes them). A scheduler that decides nothing
        (:attr:`~nasx.experiment.schedulers.Scheduler.decides`) has nothing to resume."""
        if self.store is None or not self.scheduler.decides:
            return
        jobs = {
            "jobs": {
                str(t): [budget, start, sorted(self.answers.get(t, {}).items())]
                for t, (budget, start) in sorted(self.jobs.items())
            },
            "promotions": [[a.trial, a.budget, a.from_budget, a.bracket] for a in self.promotions],
        }
        self.store.set_meta_all({STATE_KEY: self.scheduler.state_dict(), JOBS_KEY: jobs})

    # ----------------------------------------------------------------- checkpoints
    def _continuable(self, trial: int, budget: Any) -> bool:
        if not self.continues:
            return False
        if self.checkpoints.at(trial, budget):
            return True
        _log.warning(
            "trial %d has no checkpoint at budget %s (its evaluator did not save one there): "
            "it is trained again from scratch",
            trial,
            budget,
        )
        return False

    def _say_restart(self, trial: int, start: Any, budget: Any) -> None:
        if self._said_restart or self.continues:
            return
        self._said_restart = True
        warn_restarted(self.evaluator, trial, start, budget)

    def _drop_unpromotable(self) -> None:
        """The paused trials the scheduler will never promote (a synchronous rung promoted
        others) are pruned: their rows say ``'pruned'`` (at the budget they reached, with its
        metric and the reason), they lose their checkpoints and leave :attr:`paused`; the loop
        takes them from :attr:`retired` to count them. Only the scheduler's word decides it, so
        a resumed run that could still promote a trial finds it paused."""
        if type(self.scheduler).promotable is Scheduler.promotable:
            return  # the default: any paused trial may be promoted (ASHA)
        for trial in list(self.paused.values()):
            if trial.budget is not None and not self.scheduler.promotable(trial.id, trial.budget):
                del self.paused[trial.id]
                trial.status = PRUNED
                trial.error = (
                    f"not promoted: its rung at budget {trial.budget} promoted others "
                    f"({type(self.scheduler).__name__})"
                )
                self.retired.append(trial)
                if self.store is not None:
                    self.store.update(trial)
                self.checkpoints.drop(trial.id)

    def _tidy(self, trial: Trial) -> None:
        """After ``trial``'s job is stored: a paused trial keeps the checkpoint at the budget it
        reached (the older ones go, and so would a newer one its job wrote before a pause);
        one pruned, failed or complete keeps none, as nothing will continue it."""
        if trial.status == PAUSED and trial.budget is not None:
            self.checkpoints.keep_only(trial.id, trial.budget)
        else:
            self.checkpoints.drop(trial.id)


def _curve_before(trial: Trial, start: Any) -> list[float]:
    """The values ``trial`` reported before a job that starts at ``start`` (none from 0)."""
    return list(trial.intermediates) if start else []


def scheduled_run(
    scheduler: Scheduler | None,
    store: Any,
    evaluator: Any = None,
    search_space: Mapping[str, Any] | None = None,
) -> ScheduledRun:
    """The loop's :class:`ScheduledRun` for one ``run()`` on ``store`` (a
    :class:`~nasx.experiment.storage.store.TrialStore`): the stored state and paused trials of an
    earlier run loaded (a resume). ``evaluator``: the experiment's (whether promoted trials
    continue from checkpoints: :func:`can_continue`). ``search_space``: the joint space the
    strategy searches; the scheduler is set up with it before its stored state is loaded (BOHB
    encodes its stored archs by these labels).

    Without a scheduler, every trial trains as long as its evaluator does
    (:class:`~nasx.experiment.schedulers.FullBudget` with no budget): nothing is stored, loaded
    or asked, as no decision is made."""
    if scheduler is None:
        return ScheduledRun(FullBudget())
    if search_space is not None:
        scheduler.setup(search_space)  # as simulate() does: before the first assign()
    meta = store.meta()
    state, jobs = meta.get(STATE_KEY), meta.get(JOBS_KEY)
    checkpoints = TrialFolders(store.trial_dir)
    return ScheduledRun(scheduler, store, store.trials(), state, evaluator, jobs, checkpoints)
