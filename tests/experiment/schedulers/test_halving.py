"""Synchronous successive halving and Hyperband: brackets, barriers, promotions, resume."""

from __future__ import annotations

import json

import pytest

from nasx.experiment.schedulers import Assignment, Hyperband, SuccessiveHalving


def test_hyperband_brackets_follow_the_paper():
    # Li et al. 2018 with R = 81, eta = 3: s_max = 4, n = 81, 34, 15, 8, 5 at r = 1, 3, 9, 27, 81
    hb = Hyperband(1, 81, eta=3)
    assert [(b.start_rung, b.size) for b in hb.plan] == [(0, 81), (1, 34), (2, 15), (3, 8), (4, 5)]


def test_a_rung_waits_until_every_member_reported_then_keeps_the_top_third():
    sh = SuccessiveHalving(1, 9, eta=3)  # one bracket: 9 trials at 1, 3 at 3, 1 at 9
    for trial in range(9):
        job = sh.assign()
        assert job == Assignment(None, 1, 0, 0)
        sh.started(trial, job)
    values = [0.5, 0.9, 0.1, 0.7, 0.3, 0.8, 0.2, 0.6, 0.4]
    for trial in range(8):
        assert sh.report(trial, 1, values[trial]) == "pause"
    # 8 of 9 reported: no promotion yet; a free worker opens the next bracket instead of idling
    assert sh.assign() == Assignment(None, 1, 0, 1)
    assert sh.assign(new_trials=False) is None  # and without new archs: it waits
    sh.report(8, 1, values[8])
    promoted = [sh.assign(new_trials=False) for _ in range(3)]
    assert promoted == [Assignment(t, 3, 1, 0) for t in (1, 5, 3)]  # 0.9, 0.8, 0.7
    for t, v in [(1, 0.91), (5, 0.95), (3, 0.2)]:
        assert sh.report(t, 3, v) == "pause"
    assert sh.assign(new_trials=False) == Assignment(5, 9, 3, 0)
    assert sh.report(5, 9, 0.97) == "complete"


def test_a_failed_member_does_not_block_its_rung():
    sh = SuccessiveHalving(1, 4, eta=2, n_trials=2)
    for trial in range(2):
        sh.started(trial, sh.assign())
    sh.report(0, 1, 0.3)
    sh.failed(1)
    assert sh.assign(new_trials=False) == Assignment(0, 2, 1, 0)


def test_an_exhausted_strategy_shrinks_the_open_bracket():
    sh = SuccessiveHalving(1, 4, eta=2)  # wants 4 trials at rung 0
    for trial in range(2):
        sh.started(trial, sh.assign())
        sh.report(trial, 1, [0.2, 0.6][trial])
    # the strategy has no third arch: the two that ran are the rung; the better one goes on
    assert sh.assign(new_trials=False) == Assignment(1, 2, 1, 0)


def test_state_round_trips_and_bad_arguments():
    hb = Hyperband(1, 9, eta=3)
    for trial in range(4):
        hb.started(trial, hb.assign())
        hb.report(trial, 1, trial / 10)
    copy = Hyperband(1, 9, eta=3)
    copy.load_state_dict(json.loads(json.dumps(hb.state_dict())))
    assert copy.assign() == hb.assign()
    with pytest.raises(ValueError, match="not SuccessiveHalving"):
        SuccessiveHalving(1, 9, eta=3).load_state_dict(hb.state_dict())
    with pytest.raises(ValueError, match="n_trials must be a positive integer"):
        SuccessiveHalving(1, 9, n_trials=0)


def test_a_trial_its_filled_rung_did_not_keep_is_never_promotable():
    from nasx.experiment.schedulers import ASHA

    sh = SuccessiveHalving(1, 9, eta=3)  # 9 trials at 1, the best 3 go on to 3
    for trial in range(9):
        sh.started(trial, sh.assign())
    for trial in range(8):
        sh.report(trial, 1, trial / 10)
    assert all(sh.promotable(t, 1) for t in range(8))  # the rung still waits for trial 8
    sh.report(8, 1, 0.0)
    assert [t for t in range(9) if sh.promotable(t, 1)] == [5, 6, 7]  # kept, to be promoted
    sh.failed(7)
    assert not sh.promotable(7, 1)
    assert not sh.promotable(6, 9)  # the top rung: nothing is beyond it
    asha = ASHA(1, 9, eta=3)  # asynchronous: any paused trial may be promoted later
    asha.started(0, asha.assign())
    asha.report(0, 1, 0.1)
    assert asha.promotable(0, 1)
