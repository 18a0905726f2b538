"""Replay a learning-curve table with simulated workers: schedulers and strategies compared over
hundreds of seeds in seconds (Syne Tune's simulator back-end is the model).

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
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nasx.space import Categorical, SearchSpace
from nasx.trial import SUCCEEDED, Trial, arch_key

from .base import CONTINUE, PAUSE, PRUNE, Assignment, Scheduler

__all__ = ["LearningCurves", "SimulatedTrial", "SimulationResult", "simulate"]

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

    The strategy hears each trial once, when its first job ends (paused, pruned or complete),
    with the validation metric at the budget it reached then.
    """
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ValueError(f"workers must be a positive integer, got {workers!r}")
    if int(scheduler.max_budget) != scheduler.max_budget or scheduler.max_budget > curves.epochs:
        raise ValueError(
            f"the scheduler's max_budget ({scheduler.max_budget}) must be a whole number of "
            f"epochs the table has (1..{curves.epochs})"
        )
    strategy.setup(curves.search_space(), (), curves.direction)
    scheduler.setup(curves.search_space())
    run = _Simulation(scheduler, strategy, curves, workers, max_epochs, max_trials)
    run.dispatch(0.0)
    while run.events and not run.out_of_epochs():
        # (at the epoch limit the search stops: epochs still in flight are not counted)
        run.finish_epoch(*heapq.heappop(run.events))
    for trial in run.trials:  # as the experiment stores them: never promoted, so pruned
        if trial.outcome == PAUSE and not scheduler.promotable(trial.id, trial.budget):
            trial.outcome = PRUNE
    return _result(run.trials, curves, run.epochs, run.now, run.busy, workers, run.history)


class _Simulation:
    """The state of one :func:`simulate` run: trials, idle workers, events in simulated time."""

    def __init__(
        self,
        scheduler: Scheduler,
        strategy: Any,
        curves: LearningCurves,
        workers: int,
        max_epochs: int | None,
        max_trials: int | None,
    ) -> None:
        self.scheduler, self.strategy, self.curves = scheduler, strategy, curves
        self.max_epochs, self.max_trials = max_epochs, max_trials
        self.trials: list[SimulatedTrial] = []
        self.events: list[tuple[float, int, int, int]] = []  # (finish, sequence, worker, trial)
        self.idle = list(range(workers))
        self.told: set[int] = set()  # trials the strategy has heard of
        self.sequence = self.epochs = 0
        self.busy = self.now = 0.0
        self.exhausted = False  # the strategy proposed None: promotions only from then on
        # the pick so far is the trial with the largest (budget, signed val there, -id): a
        # trial's key only grows, so the running maximum is the pick (see _result)
        self.sign = 1.0 if curves.direction == "maximize" else -1.0
        self.best: tuple[int, float, int] | None = None
        self.history: list[tuple[int, float]] = []

    def out_of_epochs(self) -> bool:
        return self.max_epochs is not None and self.epochs >= self.max_epochs

    def start_epoch(self, worker: int, trial: SimulatedTrial, at: float) -> None:
        seconds = self.curves.seconds[trial.row][trial.budget]  # epoch budget + 1, 0-based
        heapq.heappush(self.events, (at + seconds, self.sequence, worker, trial.id))
        self.sequence += 1

    def next_job(self) -> Assignment | None:
        """The scheduler's next assignment, with a new trial made for it when it asks for one."""
        while True:
            allow_new = not self.exhausted and (
                self.max_trials is None or len(self.trials) < self.max_trials
            )
            job = self.scheduler.assign(new_trials=allow_new)
            if job is None or job.trial is not None:
                return job
            arch = job.arch if job.arch is not None else self.strategy.propose()
            if arch is None:  # the assignment is dropped; ask again without new trials
                self.exhausted = True
                continue
            trial = SimulatedTrial(len(self.trials), self.curves.row(arch), arch)
            self.trials.append(trial)
            self.scheduler.started(trial.id, job)
            return Assignment(trial.id, job.budget, 0, job.bracket, job.arch)

    def dispatch(self, at: float) -> None:
        """Give every idle worker a job, while the scheduler has one."""
        while self.idle and not self.out_of_epochs():
            job = self.next_job()
            if job is None or job.trial is None:
                return
            trial = self.trials[job.trial]
            trial.outcome = "running"
            self.start_epoch(self.idle.pop(0), trial, at)

    def finish_epoch(self, finish: float, _sequence: int, worker: int, trial_id: int) -> None:
        """An epoch ended: the scheduler hears the table's value and decides."""
        trial = self.trials[trial_id]
        self.busy += self.curves.seconds[trial.row][trial.budget]
        self.now = finish
        trial.budget += 1
        self.epochs += 1
        value = self.curves.val[trial.row][trial.budget - 1]
        key = (trial.budget, self.sign * value, -trial_id)
        if self.best is None or key > self.best:
            if self.best is None or self.best[2] != -trial_id:
                self.history.append((self.epochs, self.curves.test[trial.row][-1]))
            self.best = key
        decision = self.scheduler.report(trial_id, trial.budget, value)
        if decision == CONTINUE:
            self.start_epoch(worker, trial, finish)
            return
        trial.outcome = decision
        # the strategy hears each arch's result at its highest budget: told at the first job's
        # end, updated at each later one (as NasExperiment's loop does)
        seen = Trial(
            trial_id,
            trial.arch,
            SUCCEEDED,
            metric=value,
            metrics={"default": value},
            budget=trial.budget,
        )
        if trial_id not in self.told:
            self.told.add(trial_id)
            self.strategy.tell(seen)
        elif (update := getattr(self.strategy, "update", None)) is not None:
            update(seen)
        self.idle.append(worker)
        self.idle.sort()
        self.dispatch(finish)


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
