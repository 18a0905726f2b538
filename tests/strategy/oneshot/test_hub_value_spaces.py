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


@pytest.mark.parametrize("name", VALUE_SPACES)
def test_sampled_paths_equal_rebuilt_models_with_inherited_weights(name):
    torch.manual_seed(0)
    space, entry = _space(name)
    supernet = Supernet(space, mode="path", alphas=False).eval()
    x = torch.randn(2, *entry.input_size)
    rng = random.Random(0)
    for _ in range(3):
        arch = supernet.search_space.sample(rng)
        supernet.use_arch(arch)
        model = inherit_weights(supernet, _rebuild(entry, arch), arch).eval()
        with torch.no_grad():
            torch.testing.assert_close(model(x), supernet(x), rtol=1e-5, atol=1e-5)


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
