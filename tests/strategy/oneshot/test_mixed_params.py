"""Weight sharing over AutoFormer's embed_dim (class token, position embedding, and the sliced
Linear/LayerNorm/Conv2d layers): paths equal the rebuilt subnets with inherited weights,
RandomOneShot, Proxyless and ENAS search the space, mixtures are refused by name."""

from __future__ import annotations

import random

import pytest
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

from nasx.hub import AutoFormer
from nasx.hub.registry import space_entry
from nasx.space import Categorical, ModelSpace, model_context, mutable_layer
from nasx.strategy import DARTS, ENAS, Proxyless, RandomOneShot
from nasx.strategy.oneshot import Supernet, inherit_weights
from nasx.strategy.oneshot.supernet.mixed_params import MixedSlicedParameters

from .toys import FAST_TRAINER, classification


def _small():
    entry = space_entry("autoformer")
    return AutoFormer(**entry.small), entry


def test_autoformer_paths_equal_rebuilt_models_with_inherited_weights():
    torch.manual_seed(0)
    space, entry = _small()
    supernet = Supernet(space, mode="path", alphas=False).eval()
    assert isinstance(supernet.model.cls_token, MixedSlicedParameters)
    assert supernet.model.pos_embed.pos_embed.shape == (1, 17, 32)  # the largest embed_dim
    x = torch.randn(2, *entry.input_size)
    rng = random.Random(0)
    seen = set()
    for _ in range(4):
        arch = supernet.search_space.sample(rng)
        seen.add(arch["embed_dim"])
        supernet.use_arch(arch)
        with model_context(arch):
            model = AutoFormer(**entry.small)
        model = inherit_weights(supernet, model, arch).eval()
        assert model.cls_token.cls_token.shape == (1, 1, arch["embed_dim"])
        with torch.no_grad():
            torch.testing.assert_close(model(x), supernet(x), rtol=1e-5, atol=1e-5)
    assert seen == {16, 32}


def _evaluator(entry):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(4, *entry.input_size, generator=g)
    y = torch.randint(0, 10, (4,), generator=g)
    loader = DataLoader(TensorDataset(x, y), batch_size=2)
    evaluator = classification(train_dataloaders=loader, val_dataloaders=loader, **FAST_TRAINER)
    return evaluator, x


def test_random_one_shot_searches_autoformer():
    space, entry = _small()
    evaluator, x = _evaluator(entry)
    strategy = RandomOneShot(num_samples=2, eval_batches=1)
    torch.manual_seed(0)
    strategy.run(space, evaluator)
    (arch,) = strategy.export_top_models(top_k=1)
    assert strategy.supernet.search_space.validate(arch) == arch
    sub = strategy.subnet(arch).eval()
    strategy.supernet.eval().use_arch(arch)
    with torch.no_grad():
        torch.testing.assert_close(sub(x), strategy.supernet(x), rtol=1e-4, atol=1e-4)


def test_darts_is_refused_naming_the_layer_and_what_works():
    space, entry = _small()
    evaluator, _ = _evaluator(entry)
    with pytest.raises(NotImplementedError, match="MutableClassToken: mixture .*RandomOneShot"):
        DARTS().run(space, evaluator)


class _TwoArgs(nn.Module):
    nasx_sliced_parameters = {"a": "n", "b": "m"}

    def __init__(self, n, m):
        super().__init__()
        self.a, self.b = nn.Parameter(torch.zeros(n)), nn.Parameter(torch.zeros(m))


def test_a_declaration_over_two_arguments_is_refused():
    class Net(ModelSpace):
        def __init__(self):
            super().__init__()
            self.layer = mutable_layer(_TwoArgs)(Categorical([1, 2], label="n"), 2)

    with pytest.raises(ValueError, match="_TwoArgs: nasx_sliced_parameters must size"):
        Supernet(Net(), mode="path", alphas=False)


# Proxyless and ENAS on AutoFormer: Proxyless's binary gates and ENAS's controller pick paths
# through the same sliced weights (embed_dim, num_heads, mlp_ratio, depth) as RandomOneShot.


def _subnet_equals_the_supernet_path(strategy, arch, x):
    assert strategy.supernet.search_space.validate(arch) == arch
    sub = strategy.subnet(arch).eval()
    strategy.supernet.eval().use_arch(arch)
    with torch.no_grad():
        torch.testing.assert_close(sub(x), strategy.supernet(x), rtol=1e-4, atol=1e-4)


def _remembering_its_start(cls):
    """``cls`` keeping a copy of what its arch steps train (alphas, or ENAS's controller), as
    built, so a test can tell that the search moved it."""

    class Remembering(cls):
        def build_supernet(self, model_space):
            supernet = super().build_supernet(model_space)
            learned = getattr(self, "controller", None) or supernet.arch_params
            self.start = {k: v.detach().clone() for k, v in learned.state_dict().items()}
            return supernet

    return Remembering


def _moved(start, module):
    now = module.state_dict()
    return [k for k in start if not torch.equal(start[k], now[k])]


@pytest.mark.parametrize("name", ["proxyless", "enas"])
def test_proxyless_and_enas_search_autoformer(name):
    space, entry = _small()
    evaluator, x = _evaluator(entry)
    strategy = _remembering_its_start({"proxyless": Proxyless, "enas": ENAS}[name])()
    torch.manual_seed(0)
    strategy.run(space, evaluator)
    if name == "proxyless":  # binary gates over the labels, alphas trained by the arch steps
        learned = strategy.supernet.arch_params
        assert {"embed_dim", "depth", "num_head_0", "mlp_ratio_0"} <= set(
            strategy.supernet.alphas()
        )
    else:  # the controller's policy gradient
        learned = strategy.controller
    assert _moved(strategy.start, learned)
    (arch,) = strategy.export_top_models(top_k=1)
    _subnet_equals_the_supernet_path(strategy, arch, x)
