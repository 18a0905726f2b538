"""CurveFitting: the power law recovered exactly, pruning against hand-computed predictions,
exact resume, and bad arguments refused by name."""

from __future__ import annotations

import json

import pytest

from nasx.experiment.schedulers import CurveFitting, LearningCurves, simulate
from nasx.experiment.schedulers.curvefit import extrapolate
from nasx.strategy import Random


def test_extrapolate_recovers_a_power_law_on_its_grid():
    xs = [1, 2, 3, 4, 5, 6]
    for c, a, alpha in [(0.9, 0.5, 1.0), (80.0, 30.0, 0.5), (0.7, -0.2, 2.0)]:
        ys = [c - a * x**-alpha for x in xs]
        assert extrapolate(xs, ys, 27) == pytest.approx(c - a * 27**-alpha, abs=1e-9)
    with pytest.raises(ValueError, match="two budgets or more"):
        extrapolate([3], [0.5], 9)


def test_prunes_against_the_best_final_value():
    cf = CurveFitting(9, start_step=3, threshold=0.9)
    cf.started(0, cf.assign())
    cf.started(1, cf.assign())
    # no trial complete yet: nothing is judged, however poor
    assert [cf.report(1, e, 0.1) for e in (1, 2, 3)] == ["continue"] * 3
    for e in range(1, 10):
        decision = cf.report(0, e, 0.9 - 0.5 / e)
    assert decision == "complete" and cf.best == pytest.approx(0.9 - 0.5 / 9)
    # trial 1 predicted: a flat 0.1 -> 0.1 < 0.9 * 0.844
    assert cf.report(1, 4, 0.1) == "prune"
    # trial 2 follows 0.85 - 0.5 / x: predicted 0.794 >= 0.9 * 0.844 = 0.76 -> continues
    cf.started(2, cf.assign())
    assert [cf.report(2, e, 0.85 - 0.5 / e) for e in range(1, 6)] == ["continue"] * 5
    # trial 3 follows 0.8 - 0.5 / x: predicted 0.744 < 0.76 -> pruned at the start step
    cf.started(3, cf.assign())
    assert [cf.report(3, e, 0.8 - 0.5 / e) for e in (1, 2, 3)] == ["continue", "continue", "prune"]


def test_gap_and_minimize():
    cf = CurveFitting(9, start_step=2, gap=3, direction="minimize", threshold=0.5)
    cf.started(0, cf.assign())
    for e in range(1, 10):
        cf.report(0, e, 1.0 + 1.0 / e)
    cf.started(1, cf.assign())
    # loss 5 + 1/x -> predicted 5.11 > best 1.11 / 0.5; judged at reports 2, 5, 8 only
    assert cf.report(1, 1, 6.0) == "continue"
    assert cf.report(1, 2, 5.5) == "prune"
    cf.started(2, cf.assign())
    decisions = [cf.report(2, e, 2.0 + 2.0 / e) for e in range(1, 9)]  # predicted 2.22 <= 2.22
    assert decisions[:2] == ["continue", "continue"]


def test_exact_resume_and_simulated_search():
    archs = [{"a": a, "b": b} for a in range(10) for b in range(10)]
    curves = LearningCurves.synthetic(archs, epochs=9, seed=2)
    whole = simulate(
        CurveFitting(9, start_step=3), Random(seed=1), curves, workers=2, max_epochs=300
    )
    assert any(t.outcome == "prune" for t in whole.trials)
    cf = CurveFitting(9, start_step=3)
    cf.started(0, cf.assign())
    for e in range(1, 10):
        cf.report(0, e, curves.val[0][e - 1])
    cf.started(1, cf.assign())
    cf.report(1, 1, 0.3)
    state = json.loads(json.dumps(cf.state_dict()))
    back = CurveFitting(9, start_step=3)
    back.load_state_dict(state)
    assert back.state_dict() == state
    assert [back.report(1, e, 0.3) for e in (2, 3)] == [cf.report(1, e, 0.3) for e in (2, 3)]


def test_bad_arguments():
    for kwargs, message in [
        ({"start_step": 1}, "start_step must be an integer >= 2"),
        ({"gap": 0}, "gap must be an integer >= 1"),
        ({"threshold": 1.5}, r"threshold must be a number in \(0, 1\]"),
        ({"direction": ["maximize", "minimize"]}, "ranks one objective"),
    ]:
        with pytest.raises(ValueError, match=message):
            CurveFitting(9, **kwargs)
    with pytest.raises(ValueError, match="max_budget must be a positive number"):
        CurveFitting(0)
    cf = CurveFitting(9)
    with pytest.raises(ValueError, match="trial 5 has no job"):
        cf.report(5, 1, 0.5)
