"""A run tells the person what happened (issue 43): when it ends, a few lines with the trials by
outcome, the best trial, the most common error and its hint; a WARNING when no trial succeeded;
``export_top_models`` on such a run raises NoResultError saying why instead of returning [];
and a space without choices is said to be one at the start of run()."""

from __future__ import annotations

import logging

import pytest
import torch.nn as nn

from nasx.experiment import NasExperiment, NoResultError
from nasx.experiment.results.summary import common_failure, failure_hint, run_summary
from nasx.space import ModelSpace
from nasx.strategy import GridSearch
from nasx.trial import Trial, failure

from .helpers import SmallNet, width_metric


def forgets_return(model):
    """The most common first mistake: the metric is computed, never returned."""
    accuracy = width_metric(model)  # noqa: F841 - the point of the test


def _summary(err: str) -> list[str]:
    """The lines after the progress display's last one."""
    lines = err.strip().splitlines()
    stop = next(i for i, line in enumerate(lines) if line.startswith("search stopped after "))
    return lines[stop + 1 :]


def test_an_all_failed_run_names_the_count_the_error_and_its_hint(tmp_path, capsys, caplog):
    exp = NasExperiment(SmallNet(), forgets_return, GridSearch(shuffle=False), workdir=tmp_path)
    with caplog.at_level(logging.WARNING, logger="nasx.experiment"):
        exp.run()
    summary = _summary(capsys.readouterr().err)
    assert summary[0] == f"6 trials in {tmp_path}: 6 failed"
    assert summary[1].startswith("WARNING: no trial succeeded")
    assert summary[2] == (
        "most common error (6 of 6 failed): ValueError: the evaluator returned None: it must "
        "return the metric (a float, or a dict with a 'default' float)"
    )
    hint = "did the evaluation function forget `return`?"
    assert summary[3].startswith(f"  hint: {hint}")
    assert summary[3].endswith("(NNI's `nni.report_final_result(x)` becomes `return x`)")
    assert summary[-1] == f"every trial: nasx show {tmp_path}"
    assert len(summary) <= 5  # a few lines, not one per trial
    # the warning is logged too (a quiet run gets it there: see below)
    (warning,) = [r for r in caplog.records if "no trial succeeded" in r.getMessage()]
    assert warning.levelno == logging.WARNING
    assert f"no trial succeeded in {tmp_path} (6 failed)" in warning.getMessage()
    assert hint in warning.getMessage()


def test_export_top_models_of_an_all_failed_run_raises_and_says_why(tmp_path):
    exp = NasExperiment(
        SmallNet(), forgets_return, GridSearch(shuffle=False), workdir=tmp_path, progress=False
    )
    exp.run()
    with pytest.raises(NoResultError) as caught:
        (best,) = exp.export_top_models(top_k=1)  # README's line: it must not unpack []
    message = str(caught.value)
    assert message.startswith(f"nothing to export: no trial succeeded in {tmp_path} (6 failed)")
    assert "most common error (6 of 6 failed): ValueError: the evaluator returned None" in message
    assert "hint: did the evaluation function forget `return`?" in message
    for export in (
        lambda: exp.export_top_models(3, formatter="instance"),
        lambda: exp.export_top_trials(),
        lambda: exp.export_top_models(include_partial=True),
    ):
        with pytest.raises(NoResultError, match=r"\(6 failed\)"):
            export()
    assert isinstance(caught.value, LookupError)  # nasx's errors keep a built-in base


def test_export_top_models_before_any_run_says_so(tmp_path):
    exp = NasExperiment(SmallNet(), width_metric, GridSearch(), workdir=tmp_path / "new")
    with pytest.raises(NoResultError, match=r"no trial has run in .*new yet: call exp.run\(\)"):
        exp.export_top_models()


def test_a_normal_run_names_its_best_trial(tmp_path, capsys, caplog):
    exp = NasExperiment(SmallNet(), width_metric, GridSearch(shuffle=False), workdir=tmp_path)
    with caplog.at_level(logging.WARNING, logger="nasx.experiment"):
        exp.run()
    (best,) = exp.export_top_trials(1)
    summary = _summary(capsys.readouterr().err)
    assert summary == [
        f"6 trials in {tmp_path}: 6 succeeded",
        f"best: trial {best['id']}, metric 8.5000 (maximize), arch {best['arch']!r}",
        f"every trial: nasx show {tmp_path}",
    ]
    assert best["arch"] == {"width": 8, "act": 1}
    assert not caplog.records


def test_a_run_with_some_failures_names_the_best_and_the_most_common_error(tmp_path, capsys):
    def fails_on_tanh(model):
        if isinstance(model.act, nn.Tanh):
            raise RuntimeError(f"no tanh (width {model.fc1.out_features})")
        return width_metric(model)

    exp = NasExperiment(SmallNet(), fails_on_tanh, GridSearch(shuffle=False), workdir=tmp_path)
    exp.run()
    summary = _summary(capsys.readouterr().err)
    assert summary[0] == f"6 trials in {tmp_path}: 3 succeeded, 3 failed"
    assert summary[1].startswith("best: trial ") and "metric 8.0000" in summary[1]
    failed = exp.trials("failed")[0]  # three distinct errors, one each: the first is named
    assert summary[2] == f"most common error (1 of 3 failed): {failed.error.splitlines()[0]}"
    assert summary[3] == (
        f"  hint: exp.rerun_trial({failed.id}) runs it again in this process with its "
        f"traceback; its log: {tmp_path / 'trials' / str(failed.id) / 'trial.log'}"
    )
    assert not [line for line in summary if "WARNING" in line]


def test_a_quiet_run_prints_nothing_but_still_logs_that_nothing_succeeded(tmp_path, capsys, caplog):
    exp = NasExperiment(
        SmallNet(), forgets_return, GridSearch(), workdir=tmp_path, max_trials=2, progress=False
    )
    with caplog.at_level(logging.WARNING, logger="nasx.experiment"):
        exp.run()
    assert capsys.readouterr().err == ""
    said = [r for r in caplog.records if r.getMessage().startswith("no trial succeeded ")]
    assert (
        len(said) == 1
        and said[0].name == "nasx.experiment"
        and "(2 failed)" in said[0].getMessage()
    )


class Fixed(ModelSpace):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 1)


def test_a_space_without_choices_is_said_at_the_start_of_run(tmp_path, capsys, caplog):
    exp = NasExperiment(Fixed(), lambda model: 1.0, GridSearch(), workdir=tmp_path / "w")
    with (
        caplog.at_level(logging.WARNING, logger="nasx.experiment"),
        pytest.raises(ValueError, match="empty search space"),  # what GridSearch says next
    ):
        exp.run()
    said = "the space Fixed has no choices"
    assert [r.getMessage()[: len(said)] for r in caplog.records] == [said]
    assert capsys.readouterr().err.startswith(f"WARNING: {said} (no LayerChoice, ")


def test_the_most_common_error_groups_trials_whatever_their_number():
    timeout = [
        Trial(i, {}, "failed", error=failure("TrialTimeout", f"trial {i} ran longer than 3 s"))
        for i in (4, 7)
    ]
    trials = [Trial(0, {}, "failed", error="KeyError: 'x'\nTraceback ..."), *timeout]
    found = common_failure(trials, "runs/a")
    assert found is not None
    assert (found.error, found.count, found.failed, found.trial_id) == (
        "TrialTimeout: trial 4 ran longer than 3 s",
        2,
        3,
        4,
    )
    assert found.hint == failure_hint(timeout[0].error) and "trial_timeout" in found.hint
    best = Trial(1, {"w": 2}, "succeeded", metric=0.25)
    assert run_summary([*trials, best], best, "runs/a").splitlines()[:2] == [
        "4 trials in runs/a: 1 succeeded, 3 failed",
        "best: trial 1, metric 0.2500 (maximize), arch {'w': 2}",
    ]
