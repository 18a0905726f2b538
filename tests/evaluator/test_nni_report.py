"""NNI's nni.report_intermediate_result / report_final_result, bound to the trial being evaluated."""

from __future__ import annotations

import logging

import pytest
import torch

import nasx
from nasx.evaluator import FunctionalEvaluator
from nasx.experiment.execution.jobs import Job
from nasx.experiment.execution.runner import run_trial


def nni_style(model):
    for epoch in range(3):
        nasx.report_intermediate_result(0.1 * (epoch + 1))
    nasx.report_final_result(0.75)  # returns None, as NNI's evaluation functions do


def test_final_result_is_the_metric_and_intermediates_reach_report():
    seen = []
    assert FunctionalEvaluator(nni_style).evaluate(None, report=seen.append) == 0.75
    assert seen == pytest.approx([0.1, 0.2, 0.3])


def test_any_evaluator_run_by_a_trial_may_report_the_nni_way():
    class Evaluator(nasx.evaluator.Evaluator):  # not a FunctionalEvaluator: the runner binds it
        def evaluate(self, model, report=None):
            nasx.report_intermediate_result({"default": 0.5, "loss": 1.0})
            nasx.report_final_result({"default": 0.9, "loss": 0.1})

    result = run_trial(lambda arch: torch.nn.Identity(), Evaluator(), Job(id=7, arch={}))
    assert result.status == "succeeded", result.error
    assert result.metric == 0.9 and result.metrics == {"default": 0.9, "loss": 0.1}
    assert result.intermediates == [0.5]


def test_reporting_twice_or_returning_another_value_is_refused():
    def twice(model):
        nasx.report_final_result(0.5)
        nasx.report_final_result(0.6)

    with pytest.raises(RuntimeError, match="called twice"):
        FunctionalEvaluator(twice).evaluate(None)

    def both(model):
        nasx.report_final_result(0.5)
        return 0.6

    with pytest.raises(ValueError, match="reported 0.5 .* but returned 0.6"):
        FunctionalEvaluator(both).evaluate(None)

    def same(model):
        nasx.report_final_result(0.5)
        return 0.5

    assert FunctionalEvaluator(same).evaluate(None) == 0.5


def test_outside_an_evaluation_the_values_are_logged_only(caplog):
    with caplog.at_level(logging.INFO, logger="nasx.evaluator.nni_report"):
        nasx.report_intermediate_result(0.25)
        nasx.report_final_result(0.5)
    assert "Intermediate result: 0.25" in caplog.text and "Final result: 0.5" in caplog.text
    # and a previous evaluation's binding is gone
    FunctionalEvaluator(nni_style).evaluate(None)
    nasx.report_final_result(0.1)  # no "called twice": that evaluation is over


def test_a_report_never_leaks_into_the_next_evaluation():
    def fails(model):
        nasx.report_final_result(0.5)
        raise RuntimeError("training diverged")

    with pytest.raises(RuntimeError, match="diverged"):
        FunctionalEvaluator(fails).evaluate(None)
    assert FunctionalEvaluator(lambda model: 0.2).evaluate(None) == 0.2
