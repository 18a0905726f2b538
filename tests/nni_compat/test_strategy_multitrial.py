"""NNI 3.0's multi-trial strategies by their documented names and arguments, run through
``NasExperiment`` with a ``FunctionalEvaluator`` (``nni.nas.strategy`` -> ``nasx.strategy``)."""

from __future__ import annotations

import pytest
import torch.nn as nn

from nasx import strategy as strategies
from nasx.evaluator import FunctionalEvaluator
from nasx.experiment import NasExperiment
from nasx.space import InputChoice, LayerChoice, ModelSpace, search_space


class Net(ModelSpace):
    def __init__(self):
        super().__init__()
        self.op = LayerChoice(
            {"a": nn.Identity(), "b": nn.Identity(), "c": nn.Identity()}, label="op"
        )
        self.pick = InputChoice(3, 1, label="pick")

    def forward(self, x):
        return self.pick([x, self.op(x), -x])


def _score(model):
    # the metric only depends on the arch: identity ops, the picked input's sign
    import torch

    return float(model(torch.ones(1)).sum())


CASES = {
    "Random": dict(dedup=True, seed=1),
    "GridSearch": dict(shuffle=True, seed=1),
    "RegularizedEvolution": dict(
        population_size=4, sample_size=2, mutation_prob=0.5, dedup=True, seed=0
    ),
    "PolicyBasedRL": dict(samples_per_update=2, reward_for_invalid=None, seed=0),
    "TPE": dict(seed=0),
}


@pytest.mark.parametrize("name", list(CASES))
def test_strategy_runs_four_valid_distinct_trials(name, tmp_path):
    space = Net()
    exp = NasExperiment(
        space,
        FunctionalEvaluator(_score),
        getattr(strategies, name)(**CASES[name]),
        workdir=tmp_path,
    )
    exp.config.max_trial_number = 4
    exp.run()
    archs = exp.export_top_models(top_k=4)
    assert len(archs) == 4 and len({repr(a) for a in archs}) == 4  # dedup
    for arch in archs:
        search_space(Net()).validate(arch)


def test_nni_names_not_provided_fail_with_a_clear_error():
    # NNI's PPO settings of PolicyBasedRL: nasx's controller is REINFORCE
    with pytest.raises(TypeError, match="REINFORCE"):
        strategies.PolicyBasedRL(policy_fn=lambda *a: None)
