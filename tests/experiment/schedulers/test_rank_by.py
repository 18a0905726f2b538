"""What a rung ranks (``rank_by``): the last value, or the mean or best of the curve so far.

Hand-built curves where the three disagree, checked against values computed by hand; the
running summaries survive a repeated report (and a stop and resume: tests/experiment/
test_every_scheduler.py); bad values are refused.
"""

from __future__ import annotations

import pytest

from nasx.experiment.schedulers import (
    ASHA,
    BOHB,
    Assignment,
    Hyperband,
    LearningCurves,
    SuccessiveHalving,
    simulate,
)

# Three trials' validation curves over epochs 1..3. At epoch 3 (ASHA's second rung with eta 3)
#   last: a 0.70, b 0.72, c 0.60          -> b ranks first
#   mean: a 0.70, b 0.54, c 0.65          -> a
#   best: a 0.75, b 0.72, c 0.80          -> c
CURVES = {"a": [0.65, 0.75, 0.70], "b": [0.40, 0.50, 0.72], "c": [0.80, 0.55, 0.60]}


def _rung_two_ranking(rank_by, direction="maximize", sign=1.0):
    """Each trial trained straight to epoch 3 (ASHA's second rung with eta 3: rungs 1, 3, 9),
    reporting every epoch; the trials' order at that rung, best first."""
    s = ASHA(1, 9, eta=3, rank_by=rank_by, directions=direction)
    for trial, name in enumerate(CURVES):
        s.started(trial, Assignment(None, 3))  # a job to the rung at 3 (passes the one at 1)
        for epoch, value in enumerate(CURVES[name], 1):
            s.report(trial, epoch, sign * value)
    return ["abc"[t] for t in s.ranked(1)], s


@pytest.mark.parametrize(
    ("rank_by", "order", "score_of_a"),
    [("last", "bac", 0.70), ("mean", "acb", 0.70), ("best", "cab", 0.75)],
)
def test_a_rung_ranks_by_the_last_the_mean_or_the_best_value(rank_by, order, score_of_a):
    got, s = _rung_two_ranking(rank_by)
    assert "".join(got) == order
    assert s.rungs[1][0] == pytest.approx((score_of_a,))
    # the first rung saw one report each: the three rules agree there (c, a, b)
    assert "".join("abc"[t] for t in s.ranked(0)) == "cab"


@pytest.mark.parametrize(("rank_by", "order"), [("last", "bac"), ("mean", "acb"), ("best", "cab")])
def test_minimising_ranks_the_same_curves_negated_the_same_way(rank_by, order):
    got, _ = _rung_two_ranking(rank_by, direction="minimize", sign=-1.0)
    assert "".join(got) == order


def test_several_objectives_are_averaged_one_by_one():
    s = ASHA(1, 3, eta=3, rank_by="mean", directions=["maximize", "minimize"])
    s.started(0, Assignment(None, 3))
    for epoch, value in enumerate([(0.5, 4.0), (0.7, 2.0), (0.9, 3.0)], 1):
        s.report(0, epoch, value)
    # scores are signed so that larger is better: latency enters as -4, -2, -3
    assert s.rungs[1][0] == pytest.approx((0.7, -3.0))
    best = ASHA(1, 3, eta=3, rank_by="best", directions=["maximize", "minimize"])
    best.started(0, Assignment(None, 3))
    for epoch, value in enumerate([(0.5, 4.0), (0.7, 2.0), (0.9, 3.0)], 1):
        best.report(0, epoch, value)
    assert best.rungs[1][0] == pytest.approx((0.9, -2.0))  # each objective's best


def test_a_report_heard_again_is_not_counted_twice():
    s = ASHA(1, 9, eta=3, rank_by="mean")
    s.started(0, Assignment(None, 3))
    s.report(0, 1, 0.2)
    s.report(0, 2, 0.4)
    s.report(0, 2, 0.4)  # a job re-run after a kill, asked again at a budget it reported
    s.report(0, 3, 0.9)
    # (0.2 + 0.4 + 0.9) / 3; counted twice the 0.4 would give 1.9 / 4 = 0.475
    assert s.rungs[1][0] == pytest.approx((0.5,))


def _crossing(trial, budget):
    return ((trial * 7919 + budget * 104729) ** 2 % 1009) / 1009


# 80 archs whose curves cross (values a function of the trial and the budget), so that the three
# rules promote different trials; the search proposes them in order, one worker
CROSSING = LearningCurves(
    [{"t": t} for t in range(80)],
    val=[[_crossing(t, b) for b in range(1, 28)] for t in range(80)],
    test=[[_crossing(t, b) for b in range(1, 28)] for t in range(80)],
    seconds=[[1.0] * 27 for _ in range(80)],
)


def _run(scheduler, trials=80):
    """The scheduler's search over CROSSING (simulate: NasExperiment's trial loop), one worker."""
    return simulate(scheduler, InOrder(), CROSSING, workers=1, max_trials=trials)


class InOrder:
    """Proposes CROSSING's archs in the table's order."""

    def setup(self, space, trials, direction="maximize"):
        self.next = 0

    def propose(self):
        if self.next == len(CROSSING.archs):
            return None
        self.next += 1
        return dict(CROSSING.archs[self.next - 1])

    def tell(self, trial):
        pass


def test_the_rules_promote_different_trials_on_crossing_curves():
    """The same search under the three rules is not the same run three times."""
    runs = {r: _run(ASHA(1, 27, eta=3, rank_by=r)) for r in ("last", "mean", "best")}
    # promotions out of the first rung agree (one report each); those to 9 and 27 do not
    to_nine = {r: tuple(t.id for t in run.trials if t.budget >= 9) for r, run in runs.items()}
    assert len(set(to_nine.values())) == 3, to_nine


def test_a_stored_state_resumes_only_with_the_same_rank_by():
    s = ASHA(1, 9, eta=3, rank_by="mean")
    _run(s, trials=5)
    with pytest.raises(ValueError, match=r"ranked rungs by 'mean', this one by 'last'"):
        ASHA(1, 9, eta=3).load_state_dict(s.state_dict())
    plain = ASHA(1, 9, eta=3)
    _run(plain, trials=5)
    assert "rank_by" not in plain.state_dict()  # states stored before rank_by existed load
    with pytest.raises(ValueError, match=r"ranked rungs by 'last', this one by 'best'"):
        ASHA(1, 9, eta=3, rank_by="best").load_state_dict(plain.state_dict())


def test_a_failed_trial_leaves_no_running_summary():
    s = ASHA(1, 9, eta=3, rank_by="best")
    s.started(0, s.assign())
    s.report(0, 1, 0.5)
    s.failed(0)
    assert 0 not in s.curves and s.ranked(0) == []


@pytest.mark.parametrize("make", [ASHA, Hyperband, SuccessiveHalving, BOHB])
def test_every_rung_scheduler_takes_rank_by_and_refuses_a_bad_one(make):
    assert "rank_by='mean'" in repr(make(1, 9, eta=3, rank_by="mean"))
    assert "rank_by" not in repr(make(1, 9, eta=3))
    with pytest.raises(
        ValueError, match="rank_by must be one of 'last', 'mean', 'best', got 'max'"
    ):
        make(1, 9, eta=3, rank_by="max")


def test_asha_promotes_by_the_mean_where_the_last_value_would_promote_another():
    """The promotion itself follows the rule: with rank_by='mean' the trial whose curve is
    higher on average moves up, though another ended the rung higher."""
    curves = {0: [0.8, 0.8, 0.5], 1: [0.3, 0.3, 0.6], 2: [0.1, 0.1, 0.1]}
    for rank_by, promoted in (("last", 1), ("mean", 0)):
        s = ASHA(1, 9, eta=3, rank_by=rank_by)
        for trial, curve in curves.items():
            s.started(trial, Assignment(None, 3))
            for epoch, value in enumerate(curve, 1):
                s.report(trial, epoch, value)
        # three results at the rung at 3: its best third (one trial) goes to 9
        assert s.assign() == Assignment(promoted, 9, 3)
