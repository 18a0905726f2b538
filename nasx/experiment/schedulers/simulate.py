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

from .base import CONTINUE, Assignment, Scheduler

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
    outcome: str = "running"  # or how its last job ended: 'pause', 'prune', 'complete'


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
    trials: list[SimulatedTrial] = []
    jobs: dict[int, Assignment] = {}  # worker -> its job
    events: list[tuple[float, int, int, int]] = []  # (finish time, sequence, worker, trial)
    idle = list(range(workers))
    told: set[int] = set()
    sequence = epochs_done = 0
    busy = now = 0.0
    exhausted = False

    def start_epoch(worker: int, trial: SimulatedTrial, at: float) -> None:
        nonlocal sequence
        seconds = curves.seconds[trial.row][trial.budget]  # the epoch budget + 1 (0-based index)
        heapq.heappush(events, (at + seconds, sequence, worker, trial.id))
        sequence += 1

    def dispatch(at: float) -> None:
        nonlocal exhausted
        while idle and (max_epochs is None or epochs_done < max_epochs):
            allow_new = not exhausted and (max_trials is None or len(trials) < max_trials)
            job = scheduler.assign(new_trials=allow_new)
            if job is not None and job.trial is None:
                arch = strategy.propose()
                if arch is None:  # the strategy is exhausted: promotions only from now on
                    exhausted = True
                    continue  # the assignment is dropped; ask again without new trials
                trial = SimulatedTrial(len(trials), curves.row(arch), arch)
                trials.append(trial)
                scheduler.started(trial.id, job)
                job = Assignment(trial.id, job.budget, 0, job.bracket)
            if job is None:
                return
            worker = idle.pop(0)
            jobs[worker] = job
            assert job.trial is not None
            trials[job.trial].outcome = "running"
            start_epoch(worker, trials[job.trial], at)

    dispatch(0.0)
    while events and (max_epochs is None or epochs_done < max_epochs):
        # (at the epoch limit the search stops: epochs still in flight are not counted)
        finish, _, worker, trial_id = heapq.heappop(events)
        trial = trials[trial_id]
        seconds = curves.seconds[trial.row][trial.budget]
        busy += seconds
        now = finish
        trial.budget += 1
        epochs_done += 1
        decision = scheduler.report(trial_id, trial.budget, curves.val[trial.row][trial.budget - 1])
        if decision == CONTINUE:
            start_epoch(worker, trial, now)
            continue
        trial.outcome = decision
        if trial_id not in told:
            told.add(trial_id)
            strategy.tell(
                Trial(
                    id=trial_id,
                    arch=trial.arch,
                    status=SUCCEEDED,
                    metric=curves.val[trial.row][trial.budget - 1],
                    metrics={"default": curves.val[trial.row][trial.budget - 1]},
                )
            )
        del jobs[worker]
        idle.append(worker)
        idle.sort()
        dispatch(now)

    return _result(trials, curves, epochs_done, now, busy, workers)


def _result(
    trials: list[SimulatedTrial],
    curves: LearningCurves,
    epochs: int,
    seconds: float,
    busy: float,
    workers: int,
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
    )
