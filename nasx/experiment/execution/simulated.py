"""An executor that trains nothing: it replays a learning-curve table in simulated time, so
:func:`~nasx.experiment.schedulers.simulate` runs ``NasExperiment``'s own trial loop over
hundreds of seeds in seconds (Syne Tune's simulator back-end is the model).

    >>> from nasx.experiment.execution.jobs import Job
    >>> from nasx.experiment.schedulers import LearningCurves
    >>> curves = LearningCurves.synthetic([{'w': 1}, {'w': 2}], epochs=3, seed=0)
    >>> ex = SimulatedExecutor(curves, workers=2)
    >>> ex.submit(Job(0, {'w': 1}, budget=2)); ex.submit(Job(1, {'w': 2}, budget=3))
    >>> [(r.id, r.status, r.budget) for r in ex.wait()], ex.epochs
    ([(0, 'succeeded', 2)], 3)
"""

from __future__ import annotations

import contextlib
import heapq
from dataclasses import dataclass, field
from typing import Any

from nasx._errors import NasxError
from nasx.experiment.execution.jobs import STATUS_AFTER, Decide, Job, TrialResult
from nasx.experiment.schedulers.base import COMPLETE, PAUSE, PRUNE
from nasx.experiment.schedulers.curves import LearningCurves, SimulatedTrial
from nasx.trial import Trial

__all__ = ["BudgetSpent", "MemoryStore", "SimulatedExecutor"]


class BudgetSpent(NasxError, RuntimeError):
    """:meth:`SimulatedExecutor.wait` once ``max_epochs`` epochs were trained: the search ends
    there, with the epochs in flight lost (a stop criterion of Syne Tune's simulator)."""


class MemoryStore:
    """The loop's store in a simulation: ids only, rows nowhere (the executor keeps the
    trials)."""

    def __init__(self) -> None:
        self.count = 0

    def add(self, trial: Trial) -> None:
        self.count += 1

    def update(self, trial: Trial) -> None:
        pass

    def next_id(self) -> int:
        return self.count

    def log_path(self, trial_id: int) -> None:
        return None

    def atomic(self) -> contextlib.AbstractContextManager[Any]:
        return contextlib.nullcontext()


@dataclass
class _Job:
    """A job on a simulated worker: the trial it trains and its values so far."""

    job: Job
    worker: int
    values: list[float] = field(default_factory=list)


class SimulatedExecutor:
    """An executor of the trial loop that trains nothing: each job replays its arch's curve from
    ``curves`` epoch by epoch on one of ``workers`` simulated workers, each epoch taking the
    table's seconds, in simulated time (Syne Tune's simulator back-end is the model).

    After each epoch the trial's report is answered by ``decide`` (the loop's scheduler), as a
    worker's report is: ``'pause'`` or ``'prune'`` ends the job there. :meth:`wait` returns the
    next job to end in simulated time, one at a time, so the loop's scheduler and strategy hear
    the events in the order they happen; a promoted trial continues from the budget it reached.
    :meth:`wait` raises :class:`BudgetSpent` once ``max_epochs`` epochs were trained in all,
    and no job starts after that.

    It keeps the search's bookkeeping: :attr:`trials` (one :class:`SimulatedTrial` per trial
    id), :attr:`epochs`, :attr:`now` (simulated seconds), :attr:`busy` (busy worker-seconds)
    and :attr:`history` (each change of the pick, see :class:`SimulationResult`).
    """

    def __init__(self, curves: LearningCurves, workers: int, max_epochs: int | None = None):
        self.curves, self.workers, self.max_epochs = curves, workers, max_epochs
        self.decide: Decide | None = None
        self.trials: list[SimulatedTrial] = []
        self.epochs, self.now, self.busy = 0, 0.0, 0.0
        self.history: list[tuple[int, float]] = []
        self._idle = list(range(workers))
        self._running: dict[int, _Job] = {}
        self._events: list[tuple[float, int, int]] = []  # (finish, sequence, trial)
        self._sequence = 0
        # the pick so far is the trial with the largest (budget, signed val there, -id): a
        # trial's key only grows, so the running maximum is the pick (see _result)
        self._sign = 1.0 if curves.direction == "maximize" else -1.0
        self._best: tuple[int, float, int] | None = None

    @property
    def capacity(self) -> int:
        """The workers; none once the epochs are spent, so no job starts after it."""
        return 0 if self._spent() else self.workers

    def _spent(self) -> bool:
        return self.max_epochs is not None and self.epochs >= self.max_epochs

    def submit(self, job: Job) -> None:
        if job.id == len(self.trials):  # a new trial (the loop numbers them from 0)
            self.trials.append(SimulatedTrial(job.id, self.curves.row(job.arch), job.arch))
        trial = self.trials[job.id]
        trial.outcome = "running"
        self._running[job.id] = _Job(job, self._idle.pop(0))
        self._start_epoch(trial)

    def wait(self, timeout: float | None = None) -> list[TrialResult]:
        """The next job to end (simulated time runs until one does); [] when none runs."""
        while self._events:
            if self._spent():
                raise BudgetSpent
            finish, _, trial_id = heapq.heappop(self._events)
            result = self._end_epoch(self.trials[trial_id], finish)
            if result is not None:
                return [result]
        return []

    def shutdown(self) -> None:
        pass

    def _start_epoch(self, trial: SimulatedTrial) -> None:
        seconds = self.curves.seconds[trial.row][trial.budget]  # epoch budget + 1, 0-based
        heapq.heappush(self._events, (self.now + seconds, self._sequence, trial.id))
        self._sequence += 1

    def _end_epoch(self, trial: SimulatedTrial, finish: float) -> TrialResult | None:
        """An epoch of ``trial`` ended at ``finish``: its report is decided; the job's result
        when that ends it."""
        running = self._running[trial.id]
        self.busy += self.curves.seconds[trial.row][trial.budget]
        self.now = finish
        trial.budget += 1
        self.epochs += 1
        value = self.curves.val[trial.row][trial.budget - 1]
        running.values.append(value)
        self._track_pick(trial, value)
        job = running.job
        if self.decide is not None and trial.budget > job.decided_budget:
            decision = self.decide(trial.id, trial.budget, value)
            if decision in (PAUSE, PRUNE):  # the job ends at this report
                return self._end_job(trial, running, decision)
        if trial.budget < min(job.budget or self.curves.epochs, self.curves.epochs):
            self._start_epoch(trial)
            return None
        return self._end_job(trial, running, COMPLETE)  # trained its budget

    def _end_job(self, trial: SimulatedTrial, running: _Job, outcome: str) -> TrialResult:
        del self._running[trial.id]
        self._idle.append(running.worker)
        self._idle.sort()
        trial.outcome = outcome
        value = running.values[-1]
        return TrialResult(
            trial.id,
            STATUS_AFTER[outcome],
            metric=value,
            metrics={"default": value},
            intermediates=running.values,
            budget=trial.budget,
        )

    def _track_pick(self, trial: SimulatedTrial, value: float) -> None:
        key = (trial.budget, self._sign * value, -trial.id)
        if self._best is None or key > self._best:
            if self._best is None or self._best[2] != -trial.id:
                self.history.append((self.epochs, self.curves.test[trial.row][-1]))
            self._best = key
