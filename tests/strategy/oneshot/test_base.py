"""One-shot strategies through NasExperiment: run, export dicts and instances, like multi-trial."""

import torch

from nasx.experiment import NasExperiment
from nasx.space import search_space
from nasx.strategy import DARTS

from .toys import TOY_RIGHT, ToySpace, toy_evaluator


def test_nas_experiment_runs_a_one_shot_strategy(tmp_path):
    torch.manual_seed(0)
    space = ToySpace()
    exp = NasExperiment(
        space, toy_evaluator(epochs=3), DARTS(arc_learning_rate=3e-2), workdir=tmp_path
    )
    exp.run()
    assert exp.export_top_models(formatter="dict") == [TOY_RIGHT]
    (model,) = exp.export_top_models(formatter="instance")
    assert isinstance(model, ToySpace) and search_space(model) == {}
    assert model.op.__class__.__name__ == "Linear"
    assert (tmp_path / "checkpoints" / "last.ckpt").exists()


def test_subnet_inherits_trained_weights():
    torch.manual_seed(0)
    s = DARTS(arc_learning_rate=3e-2)
    s.run(ToySpace(), toy_evaluator(epochs=1))
    model = s.subnet(TOY_RIGHT)
    assert torch.equal(model.op.weight, s.supernet.model.op.candidate("linear").weight)
