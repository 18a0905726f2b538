"""Median stopping against hand-computed medians."""

from __future__ import annotations

import json

import pytest

from nasx.experiment.schedulers import Assignment, MedianStopping


def test_prunes_below_the_median_at_the_same_budget_after_the_grace_period():
    m = MedianStopping(min_budget=2, max_budget=4, min_trials=2)
    for trial, curve in enumerate(
        [[0.1, 0.5, 0.6, 0.7], [0.2, 0.6, 0.7, 0.8], [0.3, 0.7, 0.8, 0.9]]
    ):
        m.started(trial, Assignment(None, 4))
        decisions = [m.report(trial, e + 1, v) for e, v in enumerate(curve)]
        assert decisions == ["continue"] * 3 + ["complete"]
    m.started(3, Assignment(None, 4))
    assert m.report(3, 1, 0.0) == "continue"  # budget 1 < min_budget: grace
    # at budget 2 the others have 0.5, 0.6, 0.7: median 0.6; best so far 0.45 is below
    assert m.report(3, 2, 0.45) == "prune"


def test_the_best_value_so_far_counts_and_minimize_flips():
    m = MedianStopping(min_budget=1, max_budget=3, min_trials=1, direction="minimize")
    m.started(0, Assignment(None, 3))
    m.report(0, 1, 0.5)
    m.report(0, 2, 0.5)
    m.started(1, Assignment(None, 3))
    assert m.report(1, 1, 0.4) == "continue"  # lower loss than 0.5
    assert m.report(1, 2, 0.9) == "continue"  # worse now, but its best (0.4) still beats 0.5


def test_refuses_several_objectives_and_bad_arguments():
    with pytest.raises(ValueError, match="use ASHA or Hyperband"):
        MedianStopping(direction=["maximize", "minimize"])
    with pytest.raises(ValueError, match="min_trials"):
        MedianStopping(min_trials=0)
    with pytest.raises(ValueError, match="must not exceed"):
        MedianStopping(min_budget=5, max_budget=2)


def test_state_round_trips():
    m = MedianStopping(1, 3, min_trials=1)
    m.started(0, Assignment(None, 3))
    m.report(0, 1, 0.5)
    copy = MedianStopping(1, 3, min_trials=1)
    copy.load_state_dict(json.loads(json.dumps(m.state_dict())))
    copy.started(1, Assignment(None, 3))
    m.started(1, Assignment(None, 3))
    assert copy.report(1, 1, 0.4) == m.report(1, 1, 0.4) == "prune"
