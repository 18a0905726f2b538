"""Replay a learning-curve table with simulated workers: schedulers and strategies compared over
hundreds of seeds in seconds (Syne Tune's simulator back-end is the model), through the same
trial loop as ``NasExperiment``, on an executor that replays the table (:class:`SimulatedExecutor`).

A :class:`LearningCurves` table holds, for every architecture of a space, what training it once
for the full budget gave after each epoch: validation metric, test metric, seconds. :func:`simulate`
runs a strategy (the proposer) and a scheduler against it with ``workers`` simulated workers:
each epoch of a trial takes the table's seconds on one worker, the scheduler hears the table's
validation value after each epoch, and a promoted trial continues where it paused (the table is
one training run, so continuing from a checkpoint gives the same curve). The result says which
architecture the search picks, what it cost (epochs, simulated seconds) and how busy the workers
were.

    >>> import math
    >>> from nasx.experiment.schedulers import ASHA
    >>> from nasx.strategy import Random
    >>> archs = [{'w': w, 'd': d} for w in range(8) for d in range(8)]
    >>> curves = LearningCurves.synthetic(archs, epochs=9, seed=0)
    >>> result = simulate(ASHA(1, 9, eta=3), Random(seed=0), curves, workers=4, max_epochs=120)
    >>> result.epochs <= 120, 0.9 < result.utilisation <= 1.0
    (True, True)
"""

from __future__ import annotations

import csv
import heapq
import json
import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nasx.experiment.jobs import Job, TrialResult
from nasx.space import Categorical, SearchSpace
from nasx.trial import PAUSED, PRUNED, SUCCEEDED, Trial, TrialStatus, arch_key

from .base import COMPLETE, CONTINUE, PAUSE, PRUNE, Scheduler

__all__ = [
    "BudgetSpent",
    "LearningCurves",
    "SimulatedExecutor",
    "SimulatedTrial",
    "SimulationResult",
    "simulate",
]

_COLUMNS = ("arch", "epoch", "val", "test", "seconds")


@dataclass(frozen=True)
class LearningCurves:
    """Per-epoch ``val``/``test`` metric and ``seconds`` of each arch in ``archs``, trained once.

    ``val[i][e]`` is arch ``i``'s validation metric after epoch ``e + 1`` (larger is better unless
    ``direction='minimize'``). Read from and written to CSV with one row per (arch, epoch):
    ``arch`` (JSON), ``epoch`` (1-based), ``val``, ``test``, ``seconds``.
    """

    archs: list[dict[str, Any]]
    val: list[list[float]]
    test: list[list[float]]
    seconds: list[list[float]]
    direction: str = "maximize"
    _rows: dict[str, int] = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        n = len(self.archs)
        if not n:
            raise ValueError("a learning-curve table needs at least one arch")
        for name in ("val", "test", "seconds"):
            table = getattr(self, name)
            if len(table) != n or len({len(r) for r in table} | {len(self.val[0])}) != 1:
                raise ValueError(f"{name} must have one row per arch, each {len(self.val[0])} long")
        self._rows.update({arch_key(a): i for i, a in enumerate(self.archs)})
        if len(self._rows) != n:
            raise ValueError("the table lists an arch twice")

    @property
    def epochs(self) -> int:
        return len(self.val[0])

    def row(self, arch: dict[str, Any]) -> int:
        """The index of ``arch`` in the table (KeyError naming it when absent)."""
        try:
            return self._rows[arch_key(arch)]
        except KeyError:
            raise KeyError(f"arch {arch!r} is not in the learning-curve table") from None

    def search_space(self) -> SearchSpace:
        """One ``Categorical`` per label, over the values the table's archs take."""
        labels: dict[str, list[Any]] = {}
        for arch in self.archs:
            for label, value in arch.items():
                if value not in labels.setdefault(label, []):
                    labels[label].append(value)
        return SearchSpace(
            **{k: Categorical(sorted(v, key=repr), label=k) for k, v in labels.items()}
        )

    def best_test(self) -> float:
        """The best test metric any arch reaches at the full budget (the oracle's pick)."""
        finals = [row[-1] for row in self.test]
        return max(finals) if self.direction == "maximize" else min(finals)

    @classmethod
    def synthetic(cls, archs: Sequence[dict[str, Any]], epochs: int, seed: int) -> LearningCurves:
        """Made-up saturating curves with noise, for tests and examples (not a benchmark):
        ``val = q * (1 - exp(-epoch / tau)) + noise``, ``q`` and ``tau`` drawn per arch."""
        rng = random.Random(seed)
        val, test, seconds = [], [], []
        for _ in archs:
            q, tau, cost = rng.uniform(0.5, 0.95), rng.uniform(1.0, 4.0), rng.uniform(1.0, 3.0)
            curve = [q * (1 - math.exp(-(e + 1) / tau)) for e in range(epochs)]
            val.append([v + rng.gauss(0, 0.01) for v in curve])
            test.append([v + rng.gauss(0, 0.01) for v in curve])
            seconds.append([cost * rng.uniform(0.9, 1.1) for _ in range(epochs)])
        return cls([dict(a) for a in archs], val, test, seconds)

    def to_csv(self, path: str | Path) -> None:
        """Write the curves to ``path`` as a CSV table, one row per arch and epoch: columns
        ``arch`` (JSON), ``epoch`` (from 1), ``val``, ``test``, ``seconds``."""
        with open(path, "w", newline="") as f:
            out = csv.writer(f)
            out.writerow(_COLUMNS)
            for i, arch in enumerate(self.archs):
                for e in range(self.epochs):
                    row = (self.val[i][e], self.test[i][e], self.seconds[i][e])
                    out.writerow([json.dumps(arch, sort_keys=True), e + 1, *map(repr, row)])

    @classmethod
    def from_csv(cls, path: str | Path, direction: str = "maximize") -> LearningCurves:
        """Read a table written by :meth:`to_csv` (or by ``benchmarks/``'s table builder)."""
        per_arch: dict[str, dict[int, tuple[float, float, float]]] = {}
        with open(path, newline="") as f:
            reader = csv.DictReader(f)
            if tuple(reader.fieldnames or ()) != _COLUMNS:
                raise ValueError(
                    f"{path}: expected columns {list(_COLUMNS)}, got {reader.fieldnames}"
                )
            for line in reader:
                epochs = per_arch.setdefault(line["arch"], {})
                epochs[int(line["epoch"])] = (
                    float(line["val"]),
                    float(line["test"]),
                    float(line["seconds"]),
                )
        archs, val, test, seconds = [], [], [], []
        for arch_json, epochs in per_arch.items():
            if sorted(epochs) != list(range(1, len(epochs) + 1)):
                raise ValueError(f"{path}: arch {arch_json} lacks some epochs: {sorted(epochs)}")
            archs.append(json.loads(arch_json))
            val.append([epochs[e][0] for e in sorted(epochs)])
            test.append([epochs[e][1] for e in sorted(epochs)])
            seconds.append([epochs[e][2] for e in sorted(epochs)])
        return cls(archs, val, test, seconds, direction)


@dataclass
class SimulatedTrial:
    """One trial of a simulation: its arch's table row and the budget (epochs) it reached."""

    id: int
    row: int
    arch: dict[str, Any]
    budget: int = 0
    # or how its last job ended: 'pause', 'prune', 'complete'; a paused trial the scheduler
    # will never promote (Scheduler.promotable) ends 'prune', as in an experiment's store
    outcome: str = "running"


@dataclass(frozen=True)
class SimulationResult:
    """What a simulated search found and what it cost."""

    pick: SimulatedTrial | None  # the best trial at the highest budget any trial reached
    pick_val: float
    pick_test: float  # the pick's test metric at the full budget (the table's last epoch)
    epochs: int  # epochs trained, all trials together
    seconds: float  # simulated wall time
    utilisation: float  # busy worker-seconds / (workers * seconds)
    trials: list[SimulatedTrial]
    #: ``(epochs, pick_test)`` each time the pick changed, the anytime curve of the search
    history: list[tuple[int, float]] = field(default_factory=list)

    def test_at(self, epochs: int) -> float:
        """The pick's test metric had the search stopped after ``epochs`` epochs in all (what
        the same run with ``max_epochs=epochs`` returns as ``pick_test``; NaN before the first
        epoch ended), so one long run answers for every smaller budget.

        >>> r = SimulationResult(None, math.nan, math.nan, 5, 5.0, 1.0, [], [(1, 0.5), (4, 0.7)])
        >>> r.test_at(0), r.test_at(3), r.test_at(4), r.test_at(99)
        (nan, 0.5, 0.7, 0.7)
        """
        found = math.nan
        for spent, test in self.history:
            if spent > epochs:
                break
            found = test
        return found


def simulate(
    scheduler: Scheduler,
    strategy: Any,
    curves: LearningCurves,
    *,
    workers: int = 1,
    max_epochs: int | None = None,
    max_trials: int | None = None,
) -> SimulationResult:
    """Run ``strategy`` (a :class:`~nasx.strategy.MultiTrialStrategy`) under ``scheduler`` on
    ``curves`` with ``workers`` simulated workers, until ``max_epochs`` epochs were trained in all,
    ``max_trials`` trials started, or nothing is left to run. Scheduling decisions take no
    simulated time.

    It is ``NasExperiment``'s own trial loop (:class:`~nasx.experiment.loop.TrialLoop`, with the
    same :class:`~nasx.experiment.fidelity.ScheduledRun`) on a :class:`SimulatedExecutor` and a
    store in memory: a simulated search makes the calls a real one makes, in the same order.
    The strategy hears each trial once, when its first job ends (paused, pruned or complete),
    with the validation metric at the budget it reached then, and later ones as updates.
    """
    from nasx.experiment.fidelity import ScheduledRun
    from nasx.experiment.loop import Limits, TrialLoop
    from nasx.experiment.trial_checkpoints import ReplayedCheckpoints

    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ValueError(f"workers must be a positive integer, got {workers!r}")
    budget = scheduler.max_budget
    if budget is not None and (int(budget) != budget or budget > curves.epochs):
        raise ValueError(
            f"the scheduler's max_budget ({budget}) must be a whole number of "
            f"epochs the table has (1..{curves.epochs})"
        )
    space = curves.search_space()
    strategy.setup(space, (), curves.direction)
    scheduler.setup(space)
    executor = SimulatedExecutor(curves, workers, max_epochs)
    # the table is one training run: a promoted trial continues where it paused
    run = ScheduledRun(scheduler, checkpoints=ReplayedCheckpoints(), continues=True)
    loop = TrialLoop(_MemoryStore(), executor, strategy, space, Limits(max_trials), scheduler=run)
    try:
        loop.run()
    except BudgetSpent:  # at the epoch limit the search stops: epochs in flight are not counted
        pass
    trials = executor.trials
    for trial in trials:  # as the experiment stores them: never promoted, so pruned
        if trial.outcome == PAUSE and not scheduler.promotable(trial.id, trial.budget):
            trial.outcome = PRUNE
    return _result(
        trials, curves, executor.epochs, executor.now, executor.busy, workers, executor.history
    )


class BudgetSpent(Exception):
    """:meth:`SimulatedExecutor.wait` once ``max_epochs`` epochs were trained: the search ends
    there, with the epochs in flight lost (a stop criterion of Syne Tune's simulator)."""


class _MemoryStore:
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


@dataclass
class _Job:
    """A job on a simulated worker: the trial it trains and its values so far."""

    job: Job
    worker: int
    values: list[float] = field(default_factory=list)
    last: str | None = None  # the last decision other than 'continue'


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
        self.decide: Callable[[int, Any, Any], str] | None = None
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
            if decision != CONTINUE:
                running.last = decision
            if decision in (PAUSE, PRUNE):
                return self._end_job(trial, running)
        if trial.budget < (job.budget or self.curves.epochs) and trial.budget < self.curves.epochs:
            self._start_epoch(trial)
            return None
        return self._end_job(trial, running)

    def _end_job(self, trial: SimulatedTrial, running: _Job) -> TrialResult:
        del self._running[trial.id]
        self._idle.append(running.worker)
        self._idle.sort()
        trial.outcome = running.last if running.last in (PAUSE, PRUNE) else COMPLETE
        value = running.values[-1]
        return TrialResult(
            trial.id,
            _STATUS[trial.outcome],
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


_STATUS: dict[str, TrialStatus] = {PAUSE: PAUSED, PRUNE: PRUNED, COMPLETE: SUCCEEDED}


def _result(
    trials: list[SimulatedTrial],
    curves: LearningCurves,
    epochs: int,
    seconds: float,
    busy: float,
    workers: int,
    history: list[tuple[int, float]],
) -> SimulationResult:
    sign = 1.0 if curves.direction == "maximize" else -1.0
    pick = None
    if trials:
        top = max(t.budget for t in trials)
        at_top = [t for t in trials if t.budget == top]
        pick = max(at_top, key=lambda t: (sign * curves.val[t.row][top - 1], -t.id))
    return SimulationResult(
        pick=pick,
        pick_val=curves.val[pick.row][pick.budget - 1] if pick else math.nan,
        pick_test=curves.test[pick.row][-1] if pick else math.nan,
        epochs=epochs,
        seconds=seconds,
        utilisation=busy / (workers * seconds) if seconds else 0.0,
        trials=trials,
        history=history,
    )
