"""simulate() is NasExperiment's trial loop on a simulated executor (issue 47): on every scheduler,
with Random and RegularizedEvolution, 1 and 8 workers, it picks the same arch after the same
epochs, with the same outcome for every trial, as a direct replay of the table that calls the
scheduler and the strategy by hand (benchmarks/simulator_overhead.py's reference)."""

from __future__ import annotations

import pytest

from nasx.experiment.execution.jobs import Job
from nasx.experiment.execution.simulated import BudgetSpent, SimulatedExecutor
from nasx.experiment.schedulers import LearningCurves
from tests.benchmark_scripts import benchmark_module


def test_every_scheduler_decides_as_the_direct_replay(capsys):
    with benchmark_module("simulator_overhead.py") as bench:
        assert bench.main(["--fast", "--repeats", "2"]) == 0
    assert "every run picked the same arch" in capsys.readouterr().out


def test_the_executor_stops_at_the_epoch_limit_and_starts_nothing_after():
    curves = LearningCurves.synthetic([{"w": 1}, {"w": 2}], epochs=4, seed=0)
    ex = SimulatedExecutor(curves, workers=2, max_epochs=3)
    ex.submit(Job(0, {"w": 1}, budget=4))
    ex.submit(Job(1, {"w": 2}, budget=4))
    assert ex.capacity == 2
    with pytest.raises(BudgetSpent):
        ex.wait()
    assert ex.epochs == 3 and ex.capacity == 0


def test_a_pause_ends_the_job_and_a_promotion_continues_where_it_paused():
    curves = LearningCurves.synthetic([{"w": 1}], epochs=6, seed=0)
    ex = SimulatedExecutor(curves, workers=1)
    ex.decide = lambda trial, budget, value: "pause" if budget == 2 else "continue"
    ex.submit(Job(0, {"w": 1}, budget=6))
    (paused,) = ex.wait()
    assert (paused.status, paused.budget, paused.intermediates) == ("paused", 2, curves.val[0][:2])
    ex.decide = None
    ex.submit(Job(0, {"w": 1}, budget=6, from_budget=2, decided_budget=2))
    (done,) = ex.wait()
    assert (done.status, done.budget, done.intermediates) == ("succeeded", 6, curves.val[0][2:])
    assert ex.epochs == 6
