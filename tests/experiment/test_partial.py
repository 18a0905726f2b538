"""A scheduled run that ends with no trial at the full budget says so (issue 31): one warning
at the end of the run (logged, and on the progress display's last line) and the error
export_top_models raises (issue 43; a UserWarning and [] before), naming the full budget, the
highest reached and what to change; and
``include_partial=True`` ranks the trials by the budget they reached, the pick of the scheduler's
own simulation first."""

from __future__ import annotations

import logging

import pytest

from nasx.experiment import NasExperiment, NoResultError
from nasx.experiment.results.partial import no_full_budget, rank_by_budget
from nasx.experiment.schedulers import ASHA, simulate
from nasx.trial import Trial

from .scheduled_helpers import CURVES, FromList, Net
from .test_scheduled_experiment import TableEvaluator

# ASHA(1, 9, eta=3) with 4 trials: the best third of rung 1 goes to 3, none reaches 9
FEW = 4


def _experiment(workdir, n, scheduler=None, **kwargs):
    return NasExperiment(
        Net(),
        TableEvaluator(),
        FromList(n),
        workdir=workdir,
        build_model=False,
        scheduler=scheduler if scheduler is not None else ASHA(1, 9, eta=3),
        max_trials=n,
        **{"progress": False, **kwargs},
    )


def _val(trial) -> float:
    return CURVES.val[CURVES.row(trial.arch)][trial.budget - 1]


def test_a_run_with_no_trial_at_the_full_budget_says_why_at_its_end(tmp_path, caplog, capsys):
    exp = _experiment(tmp_path, FEW, progress=True)
    with caplog.at_level(logging.WARNING, logger="nasx.experiment"):
        exp.run()
    trials = exp.trials()
    assert sorted(t.budget for t in trials) == [1, 1, 1, 3] and "succeeded" not in {
        t.status for t in trials
    }
    top = max((t for t in trials if t.budget == 3), key=_val)
    said = [r.getMessage() for r in caplog.records if "full budget" in r.getMessage()]
    assert said == [
        f"no trial reached the full budget (9): the highest reached was 3 (trial {top.id}, "
        f"metric {top.metric:.4g}), so export_top_models() ranks none; run more trials (or "
        "resume a stopped run: ASHA(eta=3) promotes the best 1/3 of a rung, so one trial "
        "reaches 9 once at least 9 trials ran), or rank the trials by the budget they reached "
        "with export_top_models(include_partial=True)"
    ]
    assert exp.stop_reason == "max_trials (4) reached"  # the reason itself is unchanged...
    err = capsys.readouterr().err.strip().splitlines()  # ...and the display says both
    (last,) = [line for line in err if line.startswith("search stopped after ")]
    assert f"{exp.stop_reason}; {said[0]}" in last
    # the summary after it says how to rank them, and warns of no failure: none failed
    assert "best: no trial reached the full budget; export_top_models(include_partial=True)" in (
        "\n".join(err)
    )
    assert not [r for r in caplog.records if "no trial succeeded" in r.getMessage()]


def test_export_top_models_says_why_and_ranks_partial_trials_when_asked(tmp_path):
    exp = _experiment(tmp_path, FEW)
    exp.run()
    # nothing to export is an error that says why (it returned [] with a UserWarning before
    # issue 43: `(best,) = exp.export_top_models()` then failed to unpack, naming nothing)
    with pytest.raises(NoResultError, match=r"^no trial reached the full budget \(9\): .* was 3 "):
        exp.export_top_models()
    with pytest.raises(NoResultError, match="include_partial=True"):
        exp.export_top_trials(2)
    # the reference: by hand (budget reached, then the table's value there), and the pick of
    # the scheduler's own simulation of the same search
    by_hand = sorted(exp.trials(), key=lambda t: (-t.budget, -_val(t), t.id))
    sim = simulate(ASHA(1, 9, eta=3), FromList(FEW), CURVES, workers=1, max_trials=FEW)
    assert exp.export_top_models(FEW, include_partial=True) == [t.arch for t in by_hand]
    assert exp.export_top_models(include_partial=True) == [sim.pick.arch]
    best = exp.export_top_trials(include_partial=True)[0]
    assert (best["id"], best["metric"]) == (by_hand[0].id, _val(by_hand[0]))


def test_a_run_that_reached_the_full_budget_ranks_its_complete_trials_first(tmp_path, caplog):
    exp = _experiment(tmp_path, 20)
    with caplog.at_level(logging.WARNING, logger="nasx.experiment"):
        exp.run()  # (a UserWarning would fail the test: filterwarnings = error)
    assert not [r for r in caplog.records if "full budget" in r.getMessage()]
    trials = exp.trials()
    complete = sorted((t for t in trials if t.status == "succeeded"), key=lambda t: -t.metric)
    assert complete and exp.export_top_models(len(complete)) == [t.arch for t in complete]
    ranked = exp.export_top_models(len(trials), include_partial=True)
    assert ranked[: len(complete)] == [t.arch for t in complete]
    assert len(ranked) == len(trials)
    budgets = [next(t.budget for t in trials if t.arch == arch) for arch in ranked]
    assert budgets == sorted(budgets, reverse=True)


def test_a_run_without_a_scheduler_ranks_the_same_either_way(tmp_path):
    exp = NasExperiment(
        Net(),
        lambda model, arch: CURVES.val[CURVES.row(arch)][-1],
        FromList(5),
        workdir=tmp_path,
        build_model=False,
        progress=False,
        max_trials=5,
    )
    exp.run()
    assert exp.export_top_models(5, include_partial=True) == exp.export_top_models(5)
    assert len(exp.export_top_models(5)) == 5


def test_include_partial_leaves_out_what_a_constraint_pruned_failed_or_was_rejected():
    trials = [
        Trial(0, {}, "pruned", metric=0.9, budget=3, error="constraint broken at budget 3: ..."),
        Trial(1, {}, "pruned", metric=0.5, budget=3, error="not promoted: ..."),
        Trial(2, {}, "paused", metric=0.7, budget=1),
        Trial(3, {}, "failed", budget=3),
        Trial(4, {}, "rejected"),
        Trial(5, {}, "paused", metric=0.8, budget=1),
    ]
    assert [t.id for t in rank_by_budget(trials, "maximize")] == [1, 5, 2]
    assert [t.id for t in rank_by_budget(trials, "minimize", 2)] == [1, 2]
    assert "the highest reached was 3 (trial 1, metric 0.5)" in no_full_budget(trials, "maximize")


def test_no_full_budget_is_silent_when_a_trial_succeeded_or_none_stopped_early():
    paused = Trial(0, {}, "paused", metric=0.5, budget=1)
    assert (
        no_full_budget([paused, Trial(1, {}, "succeeded", metric=0.1, budget=9)], "maximize")
        is None
    )
    assert no_full_budget([Trial(0, {}, "failed")], "maximize") is None
    assert no_full_budget([paused], "maximize").startswith("no trial reached the full budget:")
    assert no_full_budget([paused, Trial(1, {}, "succeeded", metric=0.1)], "maximize") is None
