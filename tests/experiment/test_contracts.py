"""The seams NasExperiment dispatches on: a strategy and an evaluator written only from the
Protocols' docstrings (no nasx base class) run end to end, and wrong objects are refused at
construction with the missing methods named."""

from __future__ import annotations

import inspect
import time

import pytest
import torch.nn as nn

from nasx.evaluator.base import ModelEvaluator
from nasx.experiment import NasExperiment
from nasx.strategy import DARTS, Random
from nasx.strategy.base import MultiTrialStrategy, Strategy
from nasx.strategy.oneshot.base import OneShotStrategy

from .helpers import SmallNet, reference_metric


class Sweep:
    """MultiTrialStrategy from its docstring: grid order, skipping stored archs."""

    def __init__(self):
        self.told = []

    def setup(self, search_space, trials=(), direction="maximize"):
        done = [t.arch for t in trials]
        self.todo = [a for a in search_space.grid() if a not in done]
        self.told = [t for t in trials if t.finished]

    def propose(self):
        return self.todo.pop(0) if self.todo else None

    def tell(self, trial):
        self.told.append(trial)


class NegWidth:
    """ModelEvaluator from its docstring: evaluate(model, report=None) and a direction."""

    direction = "minimize"

    def evaluate(self, model, report=None):
        report(1.0)
        return -float(model.fc1.out_features) - 0.5 * isinstance(model.act, nn.Tanh)


def test_custom_strategy_and_evaluator_from_the_docs_run_and_resume(tmp_path):
    strategy = Sweep()
    assert isinstance(strategy, MultiTrialStrategy) and isinstance(NegWidth(), ModelEvaluator)
    exp = NasExperiment(SmallNet(), NegWidth(), strategy, workdir=tmp_path, max_trials=4)
    assert not exp.is_one_shot and exp.direction == "minimize"
    exp.run()
    assert [t.status for t in exp.trials()] == ["succeeded"] * 4
    assert [t.metric for t in exp.trials()] == [-reference_metric(t.arch) for t in exp.trials()]
    assert [t.intermediates for t in exp.trials()] == [[1.0]] * 4
    assert len(strategy.told) == 4
    # Resume: setup() sees the 4 stored trials, so only the 2 archs left are run.
    again = Sweep()
    NasExperiment(SmallNet(), NegWidth(), again, workdir=tmp_path, resume=True).run()
    trials = exp.trials()
    assert len(trials) == 6 and len({str(t.arch) for t in trials}) == 6
    # minimize: the export starts from the most negative metric (widest, Tanh)
    assert exp.export_top_models() == [{"width": 8, "act": 1}]


def test_one_shot_strategy_from_the_docs_is_dispatched_to_run(tmp_path):
    class DefaultArch:
        def run(self, model_space, evaluator, workdir=None):
            self.workdir = workdir
            self.best = {"width": 4, "act": 1}

        def export_top_models(self, top_k=1):
            return [self.best][:top_k]

    strategy = DefaultArch()
    assert isinstance(strategy, OneShotStrategy)
    exp = NasExperiment(SmallNet(), lambda model: 0.0, strategy, workdir=tmp_path)
    assert exp.is_one_shot
    exp.run()
    assert strategy.workdir == tmp_path
    assert exp.export_top_models() == [{"width": 4, "act": 1}]
    (model,) = exp.export_top_models(formatter="instance")
    assert model.fc1.out_features == 4


def test_a_strategy_with_a_misspelled_method_is_refused_naming_it(tmp_path):
    class Typo(Sweep):
        propose = None  # as if the method were spelled `propse`

    with pytest.raises(
        TypeError, match=r"Typo lacks propose for the first and export_top_models, run"
    ):
        NasExperiment(SmallNet(), lambda model: 0.0, Typo(), workdir=tmp_path)
    with pytest.raises(TypeError, match=r"multi-trial strategy \(setup, propose, tell"):
        NasExperiment(SmallNet(), lambda model: 0.0, "random", workdir=tmp_path)


def test_an_evaluator_that_is_neither_an_evaluator_nor_a_function_is_refused(tmp_path):
    class Evalu8:
        def evalute(self, model):  # misspelled
            return 0.0

    with pytest.raises(TypeError, match=r"evaluate\(model, report=None\).*Evalu8 has no evaluate"):
        NasExperiment(SmallNet(), Evalu8(), Random(seed=0), workdir=tmp_path)


def test_a_strategy_subclass_without_next_arch_fails_when_constructed():
    class Forgetful(Strategy):
        pass

    with pytest.raises(TypeError, match="next_arch"):
        Forgetful()


def test_one_shot_strategy_names_what_its_evaluator_lacks():
    with pytest.raises(TypeError, match=r"has no datamodule, module, train_dataloaders, trainer"):
        DARTS().run(SmallNet(), lambda model: 0.0)


def test_run_is_nasx_own_and_takes_nni_options_at_the_edge(tmp_path):
    """``run()`` takes no argument of its own; NNI's port (positional too) and options are
    translated by nni_config (tests/experiment/test_nni_controls.py: what they do)."""
    assert list(inspect.signature(NasExperiment.run).parameters) == ["self"]
    exp = NasExperiment(SmallNet(), lambda model: 0.0, Random(seed=0), workdir=tmp_path)
    exp.max_trials = 1
    exp.run(None, config=None, debug=True)
    exp.max_trials = 2
    exp.run(port=None, wait_completion=False)
    deadline = time.monotonic() + 30
    while len(exp.trials()) < 2 and time.monotonic() < deadline:
        time.sleep(0.02)
    exp.stop()
    assert [t.id for t in exp.trials()] == [0, 1]


def test_unknown_run_options_and_config_fields_are_refused_with_the_known_ones(tmp_path):
    exp = NasExperiment(SmallNet(), lambda model: 0.0, Random(seed=0), workdir=tmp_path)
    with pytest.raises(TypeError, match=r"'max_trial'.*the dashboard\) and NNI's config, wait_"):
        exp.run(max_trial=3)
    with pytest.raises(
        AttributeError, match=r"'trial_concurency' \(did you mean 'trial_concurrency'"
    ):
        exp.config.trial_concurency = 2
    exp.config.max_trial_duration = "1m"  # NNI's per-trial limit is nasx's trial_timeout
    exp.config.trial_gpu_number = 0  # an NNI field without a meaning here: accepted, ignored
    assert exp.trial_timeout == 60.0
    exp.config.max_trial_duration = None  # (a timeout needs worker processes: slow to start)
    exp.config.max_trial_number = 1
    exp.run(port=8081, wait_completion=True, debug=False)
    assert len(exp.trials()) == 1
