"""The hub's mobile spaces (value choices in every block) searched one-shot: each strategy trains a
few steps on CPU at a small resolution, exports a valid arch, and its subnet equals the supernet's
path with the inherited weights."""

from __future__ import annotations

import random

import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset

from nasx.hub.registry import space_entry
from nasx.space import model_context
from nasx.strategy import DARTS, Proxyless, RandomOneShot
from nasx.strategy.oneshot import Supernet, inherit_weights

from .toys import FAST_TRAINER, classification

VALUE_SPACES = ["mnasnet", "proxylessnas", "mobilenetv3"]
STRATEGIES = {
    "random": lambda: RandomOneShot(num_samples=2, eval_batches=1),
    "proxyless": lambda: Proxyless(),
    "darts": lambda: DARTS(),
}


def _space(name):
    entry = space_entry(name)
    return entry.cls(**entry.small), entry


def _rebuild(entry, arch):
    with model_context(arch):
        return entry.cls(**entry.small)


def _norms(module: torch.nn.Module) -> list[torch.nn.Module]:
    """Batch norm layers, the supernet's sliced ones (MixedBatchNorm2d) included."""
    return [m for m in module.modules() if getattr(m, "running_var", None) is not None]


def _give_norms_real_weights(supernet: torch.nn.Module, x: torch.Tensor, seed: int = 0) -> None:
    """Set every norm layer on the supernet's current path to the statistics of the batch ``x``
    and give it random per-channel scales and shifts. Freshly built, each holds mean 0,
    variance 1, scale 1 and shift 0 in every channel, so a model that took the wrong channels of
    them computes the same output as the right one; and with those statistics the signal of a
    deep random network fades, so its output hardly depends on the input or the weights."""
    g = torch.Generator().manual_seed(seed)
    norms = _norms(supernet)
    momenta = [m.momentum for m in norms]
    was_training = supernet.training
    with torch.no_grad():
        for m in norms:
            m.reset_running_stats()
            m.momentum = None  # a cumulative average: after one batch, that batch's statistics
        supernet.train()(x)
        for m, momentum in zip(norms, momenta):
            m.momentum = momentum
            if m.weight is not None:
                n = m.weight.shape[0]
                m.weight.copy_(0.5 + torch.rand(n, generator=g))
                m.bias.copy_(0.2 * (torch.rand(n, generator=g) - 0.5))
    supernet.train(was_training)


@pytest.mark.parametrize("name", VALUE_SPACES)
@pytest.mark.parametrize("train", [False, True], ids=["eval", "train"])
def test_sampled_paths_equal_rebuilt_models_with_inherited_weights(name, train):
    torch.manual_seed(0)
    space, entry = _space(name)
    supernet = Supernet(space, mode="path", alphas=False)
    x = torch.randn(4, *entry.input_size)
    rng = random.Random(0)
    for _ in range(3):
        arch = supernet.search_space.sample(rng)
        supernet.use_arch(arch)
        # weights that matter: fresh norm layers make the output blind to the weights
        _give_norms_real_weights(supernet, x)
        model = inherit_weights(supernet, _rebuild(entry, arch), arch)
        # train mode as well: batch statistics through the supernet's sliced norm layers;
        # dropout draws the same mask on both sides under the same seed
        supernet.train(train)
        model.train(train)
        with torch.no_grad():
            torch.manual_seed(1)
            want = supernet(x)
            torch.manual_seed(1)
            got = model(x)
        # outputs that vary with the input: a constant output would hide any wrong weight
        assert want.std(0).min() > 1e-3, "the output does not depend on the input"
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)


def test_the_equality_check_sees_a_wrong_slice():
    """The check above fails for a model that inherited the wrong channels of one norm layer."""
    torch.manual_seed(0)
    space, entry = _space("mnasnet")
    supernet = Supernet(space, mode="path", alphas=False).eval()
    x = torch.randn(4, *entry.input_size)
    arch = supernet.search_space.sample(random.Random(0))
    supernet.use_arch(arch)
    _give_norms_real_weights(supernet, x)
    model = inherit_weights(supernet, _rebuild(entry, arch), arch).eval()
    bn = next(m for m in model.modules() if isinstance(m, torch.nn.BatchNorm2d))
    with torch.no_grad():
        torch.testing.assert_close(model(x), supernet(x), rtol=1e-4, atol=1e-4)
        bn.running_mean.copy_(bn.running_mean.flip(0))  # the right values, in the wrong channels
        assert not torch.allclose(model(x), supernet(x), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize(
    "name, strategy",
    [
        (n, s) if (n, s) == ("mnasnet", "random") else pytest.param(n, s, marks=pytest.mark.slow)
        for n in VALUE_SPACES
        for s in STRATEGIES
    ],
)
def test_one_shot_strategies_search_the_space(name, strategy):
    space, entry = _space(name)
    g = torch.Generator().manual_seed(0)
    x = torch.randn(4, *entry.input_size, generator=g)
    y = torch.randint(0, 10, (4,), generator=g)
    loader = DataLoader(TensorDataset(x, y), batch_size=2)
    evaluator = classification(train_dataloaders=loader, val_dataloaders=loader, **FAST_TRAINER)
    s = STRATEGIES[strategy]()
    torch.manual_seed(0)
    s.run(space, evaluator)
    (arch,) = s.export_top_models(top_k=1)
    assert s.supernet.search_space.validate(arch) == arch
    sub = s.subnet(arch).eval()
    s.supernet.eval().use_arch(arch)
    with torch.no_grad():
        torch.testing.assert_close(sub(x), s.supernet(x), rtol=1e-4, atol=1e-4)
