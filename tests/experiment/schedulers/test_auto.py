"""AutoASHA: the rung rule on hand-made curves, its cost, the hand-over from the provisional rungs,
exact resume after a kill at any report, determinism, and bad arguments refused by name."""

from __future__ import annotations

import heapq
import json

import pytest

from nasx.experiment.schedulers import ASHA, Assignment, AutoASHA, LearningCurves, simulate
from nasx.experiment.schedulers.screening import (
    expected_best,
    screened_best,
    spearman,
    spearman_interval,
)
from nasx.strategy import Random, RegularizedEvolution

B = 8  # max_budget of the hand-made curves


def curve(final_rank, early=None, budget=B):
    """A curve rising to ``final_rank``; ``early`` overrides the first epochs' values."""
    values = [final_rank + 0.01 * b for b in range(1, budget + 1)]
    for b, v in (early or {}).items():
        values[b - 1] = v
    return values


def run_probes(s, curves):
    """Start one probe per curve and report it fully; returns each probe's last decision."""
    last = []
    for trial, values in enumerate(curves):
        job = s.assign()
        assert job == Assignment(None, s.max_budget)  # a probe trains the full budget
        s.started(trial, job)
        decisions = [s.report(trial, b, v) for b, v in enumerate(values, 1)]
        assert decisions[:-1] == ["continue"] * (len(values) - 1)
        last.append(decisions[-1])
    return last


def candidates(s):
    """The decision's table: budget -> (agreement, low, high, expected best, eta, its s.e.)."""
    return {row[0]: tuple(row[1:]) for row in s.decision["candidates"]}


def test_epoch_one_ranks_as_well_as_the_final_epoch_so_it_is_the_grace_period():
    s = AutoASHA(B, probes=6)
    assert s.decision is None and s.budgets == [1, 8] and s.eta == 8  # the provisional rungs
    assert run_probes(s, [curve(q) for q in (3, 1, 5, 2, 6, 4)]) == ["complete"] * 6
    d, rows = s.decision, candidates(s)
    assert [rows[b][0] for b in (1, 2, 3, 4)] == [pytest.approx(1.0)] * 4
    # the cheapest rung screens the most trials for the budget: the best expected pick
    assert rows[1][3] == max(r[3] for r in rows.values())
    assert d["grace_period"] == 1 and s.budgets == [1, 8]
    # a near-perfect agreement keeps far fewer than 1 in 8: eta is chosen from the curves
    assert d["eta"] == rows[1][4] > 8 and s.eta == d["eta"]
    assert d["probes"] == list(range(6)) and d["probe_budget"] == 6 * B
    assert s.assign() == Assignment(None, 1)


def test_a_first_epoch_that_ranks_backwards_moves_the_grace_period_to_the_second():
    s = AutoASHA(B, probes=6)
    # epoch 1 ranks the archs in reverse; from epoch 2 on they rank as at the end
    run_probes(s, [curve(q, early={1: -q}) for q in (3, 1, 5, 2, 6, 4)])
    rows = candidates(s)
    assert rows[1][0] == pytest.approx(-1.0) and rows[2][0] == pytest.approx(1.0)
    assert s.decision["grace_period"] == 2 and s.budgets == [2, 8] and s.eta >= 4
    assert s.assign() == Assignment(None, 2)


def test_a_lower_eta_where_the_agreement_is_weaker():
    finals = [1, 2, 3, 4, 5, 6]
    weak = AutoASHA(B, probes=6, grace_periods=[1])
    run_probes(weak, [curve(q, early={1: a}) for q, a in zip(finals, [2, 1, 4, 6, 3, 5])])
    strong = AutoASHA(B, probes=6, grace_periods=[1])
    run_probes(strong, [curve(q) for q in finals])
    assert candidates(weak)[1][0] < candidates(strong)[1][0]
    assert 8 <= weak.eta < strong.eta  # keep more where the first rung ranks worse


def test_an_advantage_within_one_standard_error_keeps_the_cheaper_grace_period():
    finals = [1, 2, 3, 4, 5, 6]
    epoch1 = [2, 1, 4, 6, 3, 5]  # rho 0.66 with the final ranking
    epoch2 = [2, 1, 3, 4, 6, 5]  # rho 0.89
    s = AutoASHA(B, probes=6, grace_periods=[1, 2])
    run_probes(s, [curve(q, early={1: a, 2: b}) for q, a, b in zip(finals, epoch1, epoch2)])
    rows = candidates(s)
    assert rows[1][0] == pytest.approx(spearman(epoch1, finals)) == pytest.approx(1 - 72 / 210)
    assert rows[2][0] == pytest.approx(1 - 24 / 210)
    assert rows[2][3] > rows[1][3]  # the estimates favour epoch 2 ...
    assert rows[1][3] >= rows[2][3] - rows[2][5]  # ... by less than one standard error
    assert s.decision["grace_period"] == 1  # so the cheaper rung stays


def test_no_early_stopping_when_no_early_budget_ranks_the_trials():
    s = AutoASHA(B, probes=6)
    run_probes(s, [curve(q, early={b: -q for b in range(1, 5)}) for q in (3, 1, 5, 2, 6, 4)])
    d = s.decision
    assert all(row[0] == pytest.approx(-1.0) for row in candidates(s).values())
    assert d["full_budget_value"] == pytest.approx(expected_best(30))
    assert d["grace_period"] == B and s.budgets == [B]
    job = s.assign()
    assert job == Assignment(None, B)  # every trial trains the full budget from now on
    s.started(6, job)
    assert [s.report(6, b, 0.5) for b in range(1, B + 1)][-1] == "complete"


def test_rank_by_best_measures_the_agreement_on_the_best_value_so_far():
    # the better archs dip at epoch 2 (a noisy mid-schedule epoch); their best so far does not
    curves_ = [curve(q, early={1: q, 2: -q}) for q in (3, 1, 5, 2, 6, 4)]
    last, best = AutoASHA(B, probes=6), AutoASHA(B, probes=6, rank_by="best")
    run_probes(last, curves_)
    run_probes(best, curves_)
    assert last.agreement()[2] == pytest.approx(-1.0)
    assert best.agreement()[2] == pytest.approx(1.0)


def test_trials_paused_before_the_decision_are_continued_to_the_chosen_grace_period():
    s = AutoASHA(B, probes=4)
    probes = [curve(q, early={1: -q}) for q in (3, 1, 4, 2)]
    for trial in range(4):  # four workers take the four probes
        s.started(trial, s.assign())
    # a fifth worker: probes all running, so a new trial at the provisional first rung
    job = s.assign()
    assert job == Assignment(None, 1)
    s.started(4, job)
    assert s.report(4, 1, 7.0) == "pause"
    for trial, values in enumerate(probes):
        for b, v in enumerate(values, 1):
            s.report(trial, b, v)
    assert s.decision["grace_period"] == 2 and s.budgets == [2, 8]
    assert s.assign() == Assignment(4, 2, 1)  # on from its checkpoint at 1 to the new rung
    assert s.report(4, 2, 7.5) == "pause"
    assert s.inner.rungs[0][4] == (7.5,)
    # the probes sit in the rungs as promoted, complete trials: never promoted again
    assert set(s.inner.rungs[1]) == {0, 1, 2, 3} and {0, 1, 2, 3} <= s.inner.promoted[0]


def test_a_failed_probe_is_replaced_by_the_next_new_trial():
    s = AutoASHA(B, probes=4)
    for trial in range(4):
        s.started(trial, s.assign())
    s.report(0, 1, 0.5)
    s.failed(0)
    assert s.probe_trials == [1, 2, 3]
    assert s.assign() == Assignment(None, B)  # the replacement probe
    with pytest.raises(ValueError, match="trial 0 failed earlier"):
        s.report(0, 2, 0.5)


def test_the_probes_cost_is_part_of_the_budget_the_search_spends():
    archs = [{"a": a, "b": b} for a in range(8) for b in range(8)]
    curves_ = LearningCurves.synthetic(archs, epochs=9, seed=0)
    s = AutoASHA(9, probes=4)
    result = simulate(s, Random(seed=0), curves_, workers=1, max_epochs=80)
    assert result.epochs == 80
    probes = result.trials[:4]
    assert [t.budget for t in probes] == [9] * 4  # the first trials trained fully
    assert s.decision["probe_budget"] == 36  # of the 80 epochs counted
    # stopped before the probes are done, there is no decision: they are all it trained
    early = AutoASHA(9, probes=4)
    result = simulate(early, Random(seed=0), curves_, workers=1, max_epochs=30)
    assert early.decision is None and result.epochs == 30


# -- exact resume after a kill ---------------------------------------------------------------


def drive(make, value, workers, reports, kill_at=(), limit=60):
    """An event-driven run of ``workers`` workers (trial ``t``'s epochs take ``1 + t % 3`` time
    units), ``reports`` reports long. After each report counted in ``kill_at``, the scheduler is
    replaced by a new one loaded from its JSON state (the worker-side state carries on, as the
    experiment re-runs its jobs in flight). Returns every assignment and decision, in order."""
    s = make()
    log, heap, trained = [], [], {}
    idle, sequence, count = list(range(workers)), 0, 0

    def dispatch(now):
        nonlocal sequence
        while idle:
            job = s.assign(new_trials=len(trained) < limit)
            if job is None:
                return
            trial = job.trial
            if trial is None:
                trial = len(trained)
                s.started(trial, job)
                trained[trial] = 0
            log.append(("assign", trial, job.budget, job.from_budget))
            heapq.heappush(heap, (now + 1 + trial % 3, sequence, idle.pop(0), trial))
            sequence += 1

    dispatch(0)
    while heap and count < reports:
        now, _, worker, trial = heapq.heappop(heap)
        trained[trial] += 1
        decision = s.report(trial, trained[trial], value(trial, trained[trial]))
        log.append(("report", trial, trained[trial], decision))
        count += 1
        if count in kill_at:
            state = json.loads(json.dumps(s.state_dict()))
            s = make()
            s.load_state_dict(state)
        if decision == "continue":
            heapq.heappush(heap, (now + 1 + trial % 3, sequence, worker, trial))
            sequence += 1
        else:
            idle.append(worker)
            idle.sort()
            dispatch(now)
    return log, s


def quality(trial):
    return ((trial * 37) % 23) / 23


def reversed_first_epoch(trial, budget):  # the decision moves the grace period to 2
    q = quality(trial)
    return -q if budget == 1 else q + 0.001 * budget


def steady(trial, budget):  # the decision keeps the provisional rungs
    return quality(trial) + 0.001 * budget


@pytest.mark.parametrize("value", [reversed_first_epoch, steady])
@pytest.mark.parametrize("workers", [1, 3])
def test_a_run_killed_at_any_report_and_resumed_decides_as_a_straight_run(value, workers):
    def make():
        return AutoASHA(B, probes=4)

    straight, s = drive(make, value, workers, reports=300)
    assert s.decision is not None
    assert s.decision["grace_period"] == (2 if value is reversed_first_epoch else 1)
    assert any(d == "complete" for *_, d in straight[40:])  # promotions after the decision
    if workers > 1 and value is reversed_first_epoch:
        assert any(e[0] == "assign" and e[3] == 1 and e[2] == 2 for e in straight)  # hand-over
    for kill_at in [(5,), (20,), (31,), (32,), (33,), (45,), (120,), (10, 31, 33, 200)]:
        got, resumed = drive(make, value, workers, reports=300, kill_at=kill_at)
        assert got == straight, kill_at
        assert resumed.state_dict() == s.state_dict()


def test_the_state_is_refused_by_an_autoasha_with_other_arguments():
    s = AutoASHA(B, probes=4)
    run_probes(s, [curve(q) for q in (3, 1, 4, 2)])
    with pytest.raises(ValueError, match="probes=4, this one 5"):
        AutoASHA(B, probes=5).load_state_dict(s.state_dict())
    with pytest.raises(ValueError, match="rank_by='last', this one 'best'"):
        AutoASHA(B, probes=4, rank_by="best").load_state_dict(s.state_dict())
    with pytest.raises(ValueError, match="is ASHA, not AutoASHA"):
        AutoASHA(B, probes=4).load_state_dict(ASHA(1, B, 2).state_dict())


# -- determinism -----------------------------------------------------------------------------


def test_a_simulated_search_is_a_function_of_the_seed():
    archs = [{"a": a, "b": b, "c": c} for a in range(6) for b in range(6) for c in range(3)]
    curves_ = LearningCurves.synthetic(archs, epochs=9, seed=1)

    def run(seed, workers):
        s = AutoASHA(9, probes=6)
        strategy = RegularizedEvolution(population_size=8, sample_size=3, seed=seed)
        result = simulate(s, strategy, curves_, workers=workers, max_epochs=200)
        return result.history, [(t.arch, t.budget, t.outcome) for t in result.trials], s

    for workers in (1, 4):
        first, again = run(3, workers), run(3, workers)
        assert first[:2] == again[:2]
        assert json.dumps(first[2].state_dict()) == json.dumps(again[2].state_dict())
        assert first[2].decision is not None
        assert run(4, workers)[1] != first[1]  # another seed, another search


# -- bad arguments ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"max_budget": 1}, r"max_budget must be an integer >= 2 \(whole budget units"),
        ({"max_budget": 2.5}, "max_budget must be an integer >= 2"),
        ({"max_budget": True}, "max_budget must be an integer >= 2"),
        ({"probes": 3}, r"probes must be an integer >= 4 \(the standard error"),
        ({"probes": 6.0}, "probes must be an integer >= 4"),
        ({"grace_periods": []}, "grace_periods must be a non-empty list of whole budgets from 1"),
        ({"grace_periods": [0, 2]}, r"from 1 to 8 \(below max_budget\), got \[0, 2\]"),
        ({"grace_periods": [9]}, "grace_periods must be a non-empty list"),
        ({"grace_periods": [1.5]}, "grace_periods must be a non-empty list"),
        ({"grace_periods": "1"}, "grace_periods must be a list of whole budgets"),
        ({"rank_by": "median"}, "rank_by must be one of 'last', 'mean', 'best', got 'median'"),
        ({"directions": ["maximize", "minimize"]}, "AutoASHA ranks one objective"),
        ({"directions": "up"}, "directions must be 'maximize', 'minimize'"),
    ],
)
def test_bad_arguments_are_refused_by_name(kwargs, message):
    with pytest.raises(ValueError, match=message):
        AutoASHA(**{"max_budget": 9, **kwargs})


def test_asha_points_auto_rungs_to_autoasha():
    with pytest.raises(ValueError, match=r"use AutoASHA\(max_budget=...\)"):
        ASHA(min_budget="auto", max_budget=27)
    with pytest.raises(ValueError, match="AutoASHA"):
        ASHA(1, 27, eta="auto")


def test_the_rule_helpers():
    assert spearman([1, 2, 3, 4], [1, 2, 3, 4]) == pytest.approx(1.0)
    assert spearman([1, 1, 1], [1, 2, 3]) == 0.0  # constant: undefined
    assert spearman([1, 2], [2, 1]) == 0.0  # fewer than three pairs
    assert expected_best(1) == 0.0
    assert all(expected_best(n) < expected_best(n + 1) for n in range(1, 50))
    low, mid, high = spearman_interval(0.5, 20)
    assert low < mid == 0.5 < high and spearman_interval(0.5, 3) == (-1.0, 0.5, 1.0)
    # screening pays where the score agrees with the final value, and more so the better it does
    full = expected_best(30)
    assert screened_best(0.0, 60, 30) == pytest.approx(full, abs=0.01)  # blind: any 30 of them
    assert full < screened_best(0.6, 60, 6) < screened_best(0.9, 60, 6)
    with pytest.raises(ValueError, match="promoted <= screened"):
        screened_best(0.5, 10, 11)


# -- in an experiment ------------------------------------------------------------------------


def test_an_experiment_decides_as_the_simulation_and_resumes_after_a_stop(tmp_path):
    from nasx.experiment import NasExperiment
    from tests.experiment.scheduled_helpers import CURVES, FromList, Net

    from ..test_every_scheduler import StopsAfter, TableEvaluator

    n = 14

    def make():
        return AutoASHA(9, probes=4)

    def experiment(workdir, evaluator, **kwargs):
        return NasExperiment(
            Net(),
            evaluator,
            FromList(n),
            workdir=workdir,
            build_model=False,
            progress=False,
            scheduler=make(),  # a new object each time: a resumed one's state comes from nasx.db
            max_trials=n,
            **kwargs,
        )

    sim = simulate(make(), FromList(n), CURVES, workers=1, max_trials=n)
    whole = experiment(tmp_path / "whole", TableEvaluator())
    whole.run()
    expected = [(t.arch, t.budget, t.status) for t in whole.trials()]
    outcome = {"pause": "paused", "prune": "pruned", "complete": "succeeded"}
    assert expected == [(t.arch, t.budget, outcome[t.outcome]) for t in sim.trials]
    assert [t.budget for t in whole.trials()[:4]] == [9] * 4  # the probes
    evaluator = StopsAfter(40)  # stopped after the probes (36 epochs) and a few screens
    first = experiment(tmp_path / "parts", evaluator)
    evaluator.exp = first
    first.run()
    assert first.stop_reason == "stopped by stop()" and 4 < len(first.trials()) < n
    evaluator.exp = None
    resumed = experiment(tmp_path / "parts", evaluator, resume=True)
    resumed.run()
    assert [(t.arch, t.budget, t.status) for t in resumed.trials()] == expected
