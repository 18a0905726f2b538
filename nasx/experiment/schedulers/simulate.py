"""Replay a learning-curve table with simulated workers: schedulers and strategies compared over
hundreds of seeds in seconds (Syne Tune's simulator back-end is the model), through the same
trial loop as ``NasExperiment``, on an executor that replays the table (``SimulatedExecutor``,
in ``nasx/experiment/execution/simulated.py``).

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

import math
from dataclasses import dataclass, field
from typing import Any

from nasx.experiment.schedulers.base import PAUSE, PRUNE, Scheduler
from nasx.experiment.schedulers.curves import LearningCurves, SimulatedTrial

__all__ = [
    "LearningCurves",
    "SimulatedTrial",
    "SimulationResult",
    "simulate",
]


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

    It is ``NasExperiment``'s own trial loop (``TrialLoop``, with the same ``ScheduledRun``) on
    a ``SimulatedExecutor`` and a store in memory: a simulated search makes the calls a real
    one makes, in the same order.
    The strategy hears each trial once, when its first job ends (paused, pruned or complete),
    with the validation metric at the budget it reached then, and later ones as updates.
    """
    # (the loop's modules import the schedulers' base: imported here, when the package is whole)
    from nasx.experiment.execution.simulated import BudgetSpent, MemoryStore, SimulatedExecutor
    from nasx.experiment.loop.checkpoints import ReplayedCheckpoints
    from nasx.experiment.loop.scheduled import ScheduledRun
    from nasx.experiment.loop.trial_loop import Limits, TrialLoop

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
    loop = TrialLoop(MemoryStore(), executor, strategy, space, Limits(max_trials), scheduler=run)
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
