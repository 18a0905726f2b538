"""One-shot strategies through NasExperiment: run, export dicts and instances, like multi-trial."""

import pytest
import torch

from nasx.experiment import NasExperiment
from nasx.space import search_space
from nasx.strategy import DARTS

from .toys import TOY_RIGHT, ToySpace, toy_evaluator


# Lightning's own deprecation, which nasx keeps from users (nasx/_third_party.py): pyproject.toml
# ignores it suite-wide; here it fails the run if one-shot search lets it out, as the
# hardware-aware tutorial's output once showed.
@pytest.mark.filterwarnings("error:`isinstance\\(treespec, LeafSpec\\)` is deprecated")
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


def _devices_after_search(accelerator: str):
    from nasx.strategy import RandomOneShot

    from .toys import TOY_RIGHT, ToySpace, toy_evaluator

    s = RandomOneShot(num_samples=2, eval_batches=1)
    s.run(ToySpace(), toy_evaluator(epochs=1, accelerator=accelerator))
    sub = s.subnet(TOY_RIGHT)
    return s, {p.device for p in s.supernet.parameters()}, {p.device for p in sub.parameters()}


def test_supernet_and_subnet_stay_on_the_training_device():
    s, supernet_devices, subnet_devices = _devices_after_search("cpu")
    assert supernet_devices == subnet_devices == {s.device} == {torch.device("cpu")}


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_after_a_gpu_search_supernet_subnet_and_ranking_are_on_the_gpu():
    s, supernet_devices, subnet_devices = _devices_after_search("gpu")
    assert s.device.type == "cuda"
    assert {d.type for d in supernet_devices} == {d.type for d in subnet_devices} == {"cuda"}
    x = torch.randn(4, 8, device=s.device)
    assert s.subnet(s.export_top_models()[0])(x).device.type == "cuda"
