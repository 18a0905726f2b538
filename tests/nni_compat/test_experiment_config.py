"""NNI 3.0's experiment API (``nni.nas.experiment`` -> ``nasx.experiment``): ``NasExperimentConfig``
given to ``NasExperiment``, ``exp.config`` fields set after construction, ``run(port=...)``,
``export_top_models(formatter='dict')``."""

from __future__ import annotations

import pytest
import torch.nn as nn

from nasx.evaluator import FunctionalEvaluator
from nasx.experiment import NasExperiment, NasExperimentConfig
from nasx.space import LayerChoice, ModelSpace
from nasx.strategy import GridSearch, Random


class Net(ModelSpace):
    def __init__(self):
        super().__init__()
        self.op = LayerChoice(
            {"a": nn.Identity(), "b": nn.Identity(), "c": nn.Identity()}, label="op"
        )

    def forward(self, x):
        return self.op(x)


def _score(model):
    return 1.0


def test_config_object_sets_the_experiment_limits(tmp_path):
    config = NasExperimentConfig("sequential", "raw", "local")
    config.max_trial_number = 2
    config.trial_concurrency = 1
    config.max_experiment_duration = "1h"
    exp = NasExperiment(
        Net(), FunctionalEvaluator(_score), Random(seed=0), config, workdir=tmp_path
    )
    assert (exp.max_trials, exp.max_concurrent_trials, exp.max_duration) == (2, 1, 3600.0)
    exp.run(port=8081)  # NNI's web-UI port: accepted, nasx serves no UI of its own
    assert len(exp.export_top_models(top_k=5, formatter="dict")) == 2


def test_config_after_construction_as_nni_scripts_write_it(tmp_path):
    exp = NasExperiment(Net(), FunctionalEvaluator(_score), GridSearch(), workdir=tmp_path)
    exp.config.max_trial_number = 10
    exp.config.trial_gpu_number = 0  # NNI's training-service field: accepted, no meaning here
    exp.run()
    archs = exp.export_top_models(top_k=10)
    assert sorted(a["op"] for a in archs) == ["a", "b", "c"]  # the grid, each arch once


def test_unknown_config_fields_are_refused_naming_the_known_ones():
    with pytest.raises(AttributeError, match="did you mean 'max_trial_number'"):
        NasExperimentConfig(max_trial_numbr=3)
    config = NasExperimentConfig.default(Net(), None, None)
    assert config.fields() == {} and config.max_trial_number is None
