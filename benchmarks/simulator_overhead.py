"""What replaying a learning-curve table through NasExperiment's own trial loop costs, against a
direct replay of the same algorithm in the same process.

``simulate()`` runs the trial loop (``TrialLoop`` with its ``ScheduledRun``) on a
``SimulatedExecutor`` (issue 47: one driver for every run). The reference here, ``direct_replay``,
is the event loop the simulator was before: the scheduler and the strategy called directly, no
loop, no trial rows. Both must pick the same arch after the same epochs; the script checks that
on every run it times, then prints the median time per simulation and the ratio.

    PYTHONPATH=. python benchmarks/simulator_overhead.py --repeats 7
"""

from __future__ import annotations

import argparse
import heapq
import math
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from nasx.experiment.schedulers import (
    ASHA,
    BOHB,
    FullBudget,
    Hyperband,
    LearningCurves,
    MedianStopping,
    SimulatedTrial,
    simulate,
)
from nasx.experiment.schedulers.base import CONTINUE, PAUSE, PRUNE, Assignment, Scheduler
from nasx.strategy import Random, RegularizedEvolution
from nasx.trial import SUCCEEDED, Trial

TABLE = Path(__file__).with_name("learning_curves.csv")


def direct_replay(
    scheduler: Scheduler, strategy: Any, curves: LearningCurves, workers: int, max_epochs: int
) -> tuple[int, float, list[tuple[int, float]], list[tuple[int, int, str]]]:
    """The reference: replay ``curves`` with ``workers`` workers by calling the scheduler and the
    strategy directly. Returns (epochs, simulated seconds, history of the pick, each trial's
    (row, budget, outcome)), what ``simulate`` must return too."""
    space = curves.search_space()
    strategy.setup(space, (), curves.direction)
    scheduler.setup(space)
    replay = _DirectReplay(scheduler, strategy, curves, workers, max_epochs)
    replay.dispatch(0.0)
    while replay.events and replay.epochs < max_epochs:
        replay.finish_epoch(*heapq.heappop(replay.events))
    for trial in replay.trials:
        if trial.outcome == PAUSE and not scheduler.promotable(trial.id, trial.budget):
            trial.outcome = PRUNE
    outcomes = [(t.row, t.budget, t.outcome) for t in replay.trials]
    return replay.epochs, replay.now, replay.history, outcomes


class _DirectReplay:
    """One direct replay: trials, idle workers, events in simulated time."""

    def __init__(
        self, scheduler: Scheduler, strategy: Any, curves: LearningCurves, workers: int, limit: int
    ) -> None:
        self.scheduler, self.strategy, self.curves, self.limit = scheduler, strategy, curves, limit
        self.trials: list[SimulatedTrial] = []
        self.events: list[tuple[float, int, int, int]] = []  # (finish, sequence, worker, trial)
        self.idle = list(range(workers))
        self.told: set[int] = set()
        self.sequence = self.epochs = 0
        self.now = 0.0
        self.exhausted = False
        self.sign = 1.0 if curves.direction == "maximize" else -1.0
        self.best: tuple[int, float, int] | None = None
        self.history: list[tuple[int, float]] = []

    def start(self, worker: int, trial: SimulatedTrial, at: float) -> None:
        seconds = self.curves.seconds[trial.row][trial.budget]
        heapq.heappush(self.events, (at + seconds, self.sequence, worker, trial.id))
        self.sequence += 1

    def next_job(self) -> Assignment | None:
        while True:
            job = self.scheduler.assign(new_trials=not self.exhausted)
            if job is None or job.trial is not None:
                return job
            arch = job.arch if job.arch is not None else self.strategy.propose()
            if arch is None:
                self.exhausted = True
                continue
            trial = SimulatedTrial(len(self.trials), self.curves.row(arch), arch)
            self.trials.append(trial)
            self.scheduler.started(trial.id, job)
            return Assignment(trial.id, job.budget, 0, job.bracket)

    def dispatch(self, at: float) -> None:
        while self.idle and self.epochs < self.limit:
            job = self.next_job()
            if job is None or job.trial is None:
                return
            self.trials[job.trial].outcome = "running"
            self.start(self.idle.pop(0), self.trials[job.trial], at)

    def finish_epoch(self, finish: float, _sequence: int, worker: int, trial_id: int) -> None:
        trial = self.trials[trial_id]
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
            self.start(worker, trial, finish)
            return
        trial.outcome = decision
        seen = Trial(trial_id, trial.arch, SUCCEEDED, metric=value, budget=trial.budget)
        if trial_id not in self.told:
            self.told.add(trial_id)
            self.strategy.tell(seen)
        elif (update := getattr(self.strategy, "update", None)) is not None:
            update(seen)
        self.idle.append(worker)
        self.idle.sort()
        self.dispatch(finish)


SCHEDULERS = {
    "ASHA": lambda e: ASHA(1, e, eta=3),
    "Hyperband": lambda e: Hyperband(1, e, eta=3),
    "BOHB": lambda e: BOHB(min_budget=1, max_budget=e, eta=3, seed=0),
    "MedianStopping": lambda e: MedianStopping(max_budget=e),
    "FullBudget": lambda e: FullBudget(e),
}
STRATEGIES = {
    "Random": lambda seed: Random(seed=seed),
    "RegularizedEvolution": lambda seed: RegularizedEvolution(
        population_size=20, sample_size=5, seed=seed
    ),
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--table", default=str(TABLE))
    parser.add_argument("--repeats", type=int, default=5, help="seeds timed per row")
    parser.add_argument("--workers", default="1,8")
    parser.add_argument("--fast", action="store_true", help="a small made-up table (tests)")
    args = parser.parse_args(argv)
    if args.fast:
        archs = [{"w": w, "d": d} for w in range(6) for d in range(6)]
        curves = LearningCurves.synthetic(archs, epochs=9, seed=0)
    else:
        curves = LearningCurves.from_csv(args.table)
    budget = 60 * curves.epochs
    print(
        f"table {args.table if not args.fast else 'synthetic'}: {len(curves.archs)} archs x "
        f"{curves.epochs} epochs; E = {budget} epochs; median of {args.repeats} seeds"
    )
    print(
        f"{'scheduler':15} {'strategy':21} {'workers':>7} {'loop ms':>8} {'direct ms':>9} {'ratio':>6}"
    )
    ratios = []
    for sname, make_scheduler in SCHEDULERS.items():
        for tname, make_strategy in STRATEGIES.items():
            for workers in map(int, args.workers.split(",")):
                loop_times, direct_times = [], []
                for seed in range(args.repeats):
                    t = time.perf_counter()
                    got = simulate(
                        make_scheduler(curves.epochs),
                        make_strategy(seed),
                        curves,
                        workers=workers,
                        max_epochs=budget,
                    )
                    loop_times.append(time.perf_counter() - t)
                    t = time.perf_counter()
                    epochs, seconds, history, outcomes = direct_replay(
                        make_scheduler(curves.epochs), make_strategy(seed), curves, workers, budget
                    )
                    direct_times.append(time.perf_counter() - t)
                    same = (
                        got.epochs,
                        got.history,
                        [(t.row, t.budget, t.outcome) for t in got.trials],
                    )
                    if same != (epochs, history, outcomes) or not math.isclose(
                        got.seconds, seconds
                    ):
                        print(f"MISMATCH: {sname} {tname} workers={workers} seed={seed}")
                        return 1
                loop, direct = statistics.median(loop_times), statistics.median(direct_times)
                ratios.append(loop / direct)
                print(
                    f"{sname:15} {tname:21} {workers:>7} {loop * 1e3:8.1f} {direct * 1e3:9.1f} "
                    f"{loop / direct:6.2f}"
                )
    print(
        f"every run picked the same arch after the same epochs; median ratio "
        f"{statistics.median(ratios):.2f}, largest {max(ratios):.2f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
