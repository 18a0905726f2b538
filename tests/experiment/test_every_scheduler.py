"""Every scheduler class of nasx.experiment.schedulers runs through a real NasExperiment and
decides there as the scheduler's own simulation (schedulers/simulate.py) decides on the same
learning curves: the same archs, in the same order, each reaching the same budget with the same
outcome. BOHB proposes its own archs, so it is set up with the search space before its first
proposal (issue 47: the loop never called ``Scheduler.setup``, only the simulator did)."""

from __future__ import annotations

import inspect

import pytest

from nasx.experiment import NasExperiment, schedulers
from nasx.experiment.schedulers import (
    ASHA,
    BOHB,
    AutoASHA,
    CurveFitting,
    FullBudget,
    Hyperband,
    MedianStopping,
    Scheduler,
    SuccessiveHalving,
    simulate,
)

from .scheduled_helpers import CURVES, FromList, Net

OUTCOME = {"pause": "paused", "prune": "pruned", "complete": "succeeded"}
N_TRIALS = 12

MAKERS = {
    "ASHA": lambda: ASHA(1, 9, eta=3),
    "AutoASHA": lambda: AutoASHA(9, probes=4),
    "BOHB": lambda: BOHB(min_budget=1, max_budget=9, eta=3, seed=0),
    "CurveFitting": lambda: CurveFitting(max_budget=9),
    "FullBudget": lambda: FullBudget(9),
    "Hyperband": lambda: Hyperband(1, 9, eta=3),
    "MedianStopping": lambda: MedianStopping(max_budget=9),
    "SuccessiveHalving": lambda: SuccessiveHalving(1, 9, eta=3),
}


def test_every_scheduler_class_is_covered():
    classes = {
        name
        for name, obj in vars(schedulers).items()
        if inspect.isclass(obj) and issubclass(obj, Scheduler) and not inspect.isabstract(obj)
    }
    assert classes == set(MAKERS)


class TableEvaluator:
    """Trains ``budget`` epochs of the arch's table curve, reporting each."""

    def evaluate(self, model, report=None, arch=None, budget=None):
        row = CURVES.row(arch)
        for epoch in range(int(budget)):
            report(CURVES.val[row][epoch])
        return CURVES.val[row][int(budget) - 1]


# Every scheduler sequentially; two in the process pool too (a worker process per trial, each
# report answered by the driver's scheduler): the synchronous one that proposes its own archs
# and the asynchronous default. One worker: the simulation's order is the pool's.
CASES = [(name, "sequential") for name in sorted(MAKERS)] + [
    ("BOHB", "process"),
    ("ASHA", "process"),
]


@pytest.mark.parametrize(("name", "execution"), CASES)
def test_the_experiment_decides_as_the_simulation(tmp_path, name, execution):
    make = MAKERS[name]
    sim = simulate(make(), FromList(N_TRIALS), CURVES, workers=1, max_trials=N_TRIALS)
    exp = NasExperiment(
        Net(),
        TableEvaluator(),
        FromList(N_TRIALS),
        workdir=tmp_path,
        build_model=False,
        progress=False,
        scheduler=make(),
        max_trials=N_TRIALS,
        execution=execution,
    )
    exp.run()
    trials = exp.trials()
    assert [t.arch for t in trials] == [t.arch for t in sim.trials]
    assert [(t.budget, t.status) for t in trials] == [
        (s.budget, OUTCOME[s.outcome]) for s in sim.trials
    ]


class StopsAfter(TableEvaluator):
    """Calls ``exp.stop()`` once ``epochs`` epochs were trained (the trial in flight is stored;
    run() returns between trials): an interrupted search, resumed from nasx.db."""

    def __init__(self, epochs):
        self.stop_after, self.trained, self.exp = epochs, 0, None

    def evaluate(self, model, report=None, arch=None, budget=None):
        self.trained += int(budget)
        value = super().evaluate(model, report, arch, budget)
        if self.trained >= self.stop_after and self.exp is not None:
            self.exp.stop()
        return value


# Every scheduler, and the rung rules that keep curves in their state (rank_by): stopped midway
# and resumed from nasx.db (its state_dict as JSON, the jobs in flight), a new scheduler object
# decides as one that ran straight through. (This replaced driving the schedulers by hand.)
RESUMED = {name: make for name, make in MAKERS.items()} | {
    f"{cls.__name__}-{rank_by}": (
        lambda cls=cls, rank_by=rank_by: cls(1, 9, eta=3, rank_by=rank_by)
    )
    for cls in (ASHA, Hyperband, SuccessiveHalving)
    for rank_by in ("mean", "best")
}


@pytest.mark.parametrize("name", sorted(RESUMED))
def test_stopped_and_resumed_decides_as_an_uninterrupted_run(tmp_path, name):
    def experiment(workdir, evaluator, **kwargs):
        return NasExperiment(
            Net(),
            evaluator,
            FromList(N_TRIALS),
            workdir=workdir,
            build_model=False,
            progress=False,
            scheduler=RESUMED[name](),  # a new object each time: its state comes from nasx.db
            max_trials=N_TRIALS,
            **kwargs,
        )

    whole = experiment(tmp_path / "whole", TableEvaluator())
    whole.run()
    evaluator = StopsAfter(10)
    first = experiment(tmp_path / "parts", evaluator)
    evaluator.exp = first
    first.run()
    assert first.stop_reason == "stopped by stop()" and 0 < len(first.trials()) < N_TRIALS
    evaluator.exp = None
    resumed = experiment(tmp_path / "parts", evaluator, resume=True)
    resumed.run()
    got = [(t.arch, t.budget, t.status) for t in resumed.trials()]
    assert got == [(t.arch, t.budget, t.status) for t in whole.trials()]
