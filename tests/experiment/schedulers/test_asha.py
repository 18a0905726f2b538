"""ASHA: hand-traced promotions and prunings, several objectives, and exact resume."""

from __future__ import annotations

import json

import pytest

from nasx.experiment.schedulers import ASHA, Assignment, LearningCurves, rung_budgets, simulate
from nasx.strategy import Random


def _start(s, trial):
    job = s.assign()
    assert job.trial is None
    s.started(trial, job)
    return job


def test_rung_budgets_and_bad_arguments():
    assert rung_budgets(1, 27, 3) == [1, 3, 9, 27]
    assert rung_budgets(2, 2, 2) == [2]
    with pytest.raises(ValueError, match="eta must be an integer >= 2"):
        ASHA(1, 9, eta=1)
    with pytest.raises(ValueError, match="min_budget .10. must not exceed max_budget .9."):
        ASHA(10, 9)
    with pytest.raises(ValueError, match="min_budget must be a positive number"):
        ASHA(0, 9)
    with pytest.raises(ValueError, match="mode must be"):
        ASHA(1, 9, mode="async")


def test_promotion_trace_by_hand():
    """eta=3, rungs 1, 3, 9. A rung promotes its top floor(n / 3) once they are there."""
    s = ASHA(1, 9, eta=3)
    for trial, value in enumerate([0.3, 0.1, 0.2]):
        _start(s, trial)
        assert s.report(trial, 1, value) == "pause"
    # three results at rung 0: the best (trial 0) goes to budget 3, continuing from 1
    assert s.assign() == Assignment(0, 3, 1)
    assert s.report(0, 2, 0.35) == "continue"  # between rungs
    assert s.report(0, 3, 0.5) == "pause"
    # rung 1 holds one result: floor(1/3) = 0 promotions there; rung 0's top 1 is taken: new trial
    assert s.assign() == Assignment(None, 1)
    s.started(3, Assignment(None, 1))
    assert s.report(3, 1, 0.9) == "pause"
    # rung 0 has 4 results: its top 1 is now trial 3, not yet promoted
    assert s.assign() == Assignment(3, 3, 1)
    assert s.report(3, 3, 0.95) == "pause"
    for trial, value in [(4, 0.05), (5, 0.15)]:
        _start(s, trial)
        s.report(trial, 1, value)
    # 6 results at rung 0: top 2 (trials 3, 0) both promoted; 2 at rung 1: floor(2/3) = 0
    assert s.assign() == Assignment(None, 1)
    assert s.paused() == [0, 1, 2, 3, 4, 5]  # 0 and 3 wait at rung 1, the rest at rung 0


def test_a_promoted_trial_completes_at_the_top_rung():
    s = ASHA(1, 4, eta=2)
    for trial, value in enumerate([0.2, 0.6]):
        _start(s, trial)
        s.report(trial, 1, value)
    assert s.assign() == Assignment(1, 2, 1)
    assert s.report(1, 2, 0.7) == "pause"
    _start(s, 2)
    s.report(2, 1, 0.1)
    _start(s, 3)
    s.report(3, 1, 0.8)
    # rung 1 (budget 2) holds one trial: nothing; rung 0 holds 4: top 2 are 3 and 1 (taken)
    assert s.assign() == Assignment(3, 2, 1)
    s.report(3, 2, 0.9)
    # rung 1 holds 2: its top 1 (trial 3) goes to the top rung
    assert s.assign() == Assignment(3, 4, 2)
    assert s.report(3, 3, 0.91) == "continue"
    assert s.report(3, 4, 0.92) == "complete"


def test_stopping_mode_prunes_below_the_top_third():
    s = ASHA(1, 9, eta=3, mode="stopping")
    job = s.assign()
    assert job == Assignment(None, 9)  # every trial aims at the full budget
    decisions = []
    for trial, value in enumerate([0.5, 0.7, 0.6, 0.4]):
        s.started(trial, s.assign())
        decisions.append(s.report(trial, 1, value))
    # 1 result: keep 1; 2: keep ceil(2/3)=1 (0.7 beats 0.5); 3: keep 1, 0.6 is 2nd; 4: keep 2
    assert decisions == ["continue", "continue", "prune", "prune"]


def test_several_objectives_promote_the_first_front():
    s = ASHA(1, 3, eta=3, directions=["maximize", "minimize"])  # accuracy up, latency down
    values = [(0.9, 20.0), (0.8, 5.0), (0.7, 30.0), (0.6, 40.0), (0.5, 50.0), (0.4, 60.0)]
    for trial, value in enumerate(values):  # six workers report before any asks again
        s.started(trial, Assignment(None, 1))
        s.report(trial, 1, value)
    # first front: trials 0 (most accurate) and 1 (fastest); the other four are dominated
    promoted = {s.assign().trial, s.assign().trial}
    assert promoted == {0, 1}
    with pytest.raises(ValueError, match="1 objective value"):
        _start(s, 6)
        s.report(6, 1, 0.5)


def test_failed_trials_are_never_promoted():
    s = ASHA(1, 9, eta=3)
    for trial, value in enumerate([0.9, 0.1, 0.2]):
        _start(s, trial)
        s.report(trial, 1, value)
    s.failed(0)
    assert s.assign() == Assignment(None, 1)  # rung 0 has 2 live results: floor(2/3) = 0
    with pytest.raises(ValueError, match="failed earlier"):
        s.target[0] = 1
        s.report(0, 3, 0.9)


def test_a_stored_state_loads_only_into_the_same_rungs():
    # (that a stored state decides as a straight run: tests/experiment/test_every_scheduler.py,
    # stopped and resumed through nasx.db)
    first = ASHA(1, 27, eta=3)
    curves = LearningCurves.synthetic([{"w": w} for w in range(30)], epochs=27, seed=0)
    simulate(first, Random(seed=0), curves, workers=1, max_trials=25)
    state = json.loads(json.dumps(first.state_dict()))
    resumed = ASHA(1, 27, eta=3)
    resumed.load_state_dict(state)
    assert resumed.state_dict() == state
    with pytest.raises(ValueError, match="same min_budget, max_budget and eta"):
        ASHA(1, 9, eta=3).load_state_dict(state)
