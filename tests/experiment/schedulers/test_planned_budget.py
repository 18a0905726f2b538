"""Scheduler.planned_budget: the budget n trials reach in all, checked against the simulator
(which runs the scheduler itself), or the bound it says when the plan depends on the results."""

from __future__ import annotations

import pytest

from nasx.experiment.schedulers import (
    ASHA,
    BOHB,
    FullBudget,
    Hyperband,
    LearningCurves,
    MedianStopping,
    SuccessiveHalving,
    simulate,
)
from nasx.strategy import Random

ARCHS = [{"w": w, "d": d, "k": k} for w in range(6) for d in range(6) for k in range(6)]
CURVES = LearningCurves.synthetic(ARCHS, epochs=9, seed=0)
CURVES_27 = LearningCurves.synthetic(ARCHS, epochs=27, seed=1)


@pytest.mark.parametrize(
    ("make", "curves"),
    [
        (lambda: SuccessiveHalving(1, 9, eta=3), CURVES),
        (lambda: SuccessiveHalving(1, 9, eta=3, n_trials=5), CURVES),
        (lambda: Hyperband(1, 9, eta=3), CURVES),
        (lambda: Hyperband(1, 27, eta=3), CURVES_27),
        (lambda: Hyperband(1, 8, eta=2), CURVES),
        (lambda: BOHB(1, 9, eta=3, seed=0), CURVES),
        (lambda: FullBudget(9), CURVES),
    ],
)
@pytest.mark.parametrize("n", [1, 4, 14, 40])
@pytest.mark.parametrize("workers", [1, 4])
def test_a_plan_that_does_not_depend_on_results_is_exact(make, curves, n, workers):
    result = simulate(make(), Random(seed=n), curves, workers=workers, max_trials=n)
    assert make().planned_budget(n) == sum(t.budget for t in result.trials)


@pytest.mark.parametrize(
    "make", [lambda: ASHA(1, 9, eta=3), lambda: ASHA(1, 9, eta=3, mode="stopping")]
)
def test_a_plan_that_depends_on_results_is_none_and_bounded(make):
    assert make().planned_budget(27) is None
    assert MedianStopping(1, 9).planned_budget(27) is None
    for seed in range(5):
        result = simulate(make(), Random(seed=seed), CURVES, workers=2, max_trials=27)
        assert sum(t.budget for t in result.trials) <= 27 * 9


def test_the_plan_by_hand():
    # Hyperband(1, 9, 3): bracket 0 takes 9 trials at 1, 3 go to 3, 1 to 9: 9 + 3*2 + 1*6 = 21;
    # bracket 1 takes 5 at 3, 1 goes to 9: 15 + 6 = 21; bracket 2 takes 3 at 9: 27
    assert Hyperband(1, 9, eta=3).planned_budget(9) == 21
    assert Hyperband(1, 9, eta=3).planned_budget(9 + 5 + 3) == 21 + 21 + 27
    # a bracket of one trial still promotes it (each rung keeps at least one): 3, then 9
    assert Hyperband(1, 9, eta=3).planned_budget(10) == 21 + 3 + 6
