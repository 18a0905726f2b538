"""Every one-shot strategy on every hub cell space: search briefly at a tiny width, export, and
``subnet(arch)`` is the ``model_context`` rebuild with the supernet's weights for ``arch``."""

from __future__ import annotations

import random

import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset

from nasx.hub.registry import space_entry
from nasx.space import model_context
from nasx.strategy import DARTS, ENAS, GumbelDARTS, Proxyless, RandomOneShot
from nasx.strategy.oneshot import Supernet, fixed_state_keys, inherit_weights

from .toys import FAST_TRAINER, classification

CELL_SPACES = ["darts", "nasnet", "enas", "amoebanet", "pnas"]
STRATEGIES = {
    "darts": lambda: DARTS(),
    "gumbel": lambda: GumbelDARTS(),
    "enas": lambda: ENAS(hidden=8),
    "random": lambda: RandomOneShot(num_samples=2, eval_batches=1),
    "proxyless": lambda: Proxyless(),
}


def _space(name):
    entry = space_entry(name)
    return entry.cls(**entry.small), entry


def _rebuild(space, entry, arch, supernet):
    with model_context(arch):
        fixed = entry.cls(**entry.small)
    return inherit_weights(supernet, fixed, arch)


def _assert_same_model(a, b, input_size):
    sa, sb = a.state_dict(), b.state_dict()
    assert sa.keys() == sb.keys()
    for key in sa:
        assert torch.equal(sa[key], sb[key]), key
    x = torch.randn(2, *input_size, generator=torch.Generator().manual_seed(0))
    a.eval(), b.eval()
    with torch.no_grad():
        torch.testing.assert_close(a(x), b(x), rtol=0, atol=0)


@pytest.mark.parametrize(
    "name",
    [n if n in ("darts", "enas") else pytest.param(n, marks=pytest.mark.slow) for n in CELL_SPACES],
)
def test_an_arch_taking_one_op_of_one_input_twice_inherits_into_both_ops(name):
    """What ENAS and random sampling produce and DARTS's export never does (the old KeyError)."""
    space, entry = _space(name)
    supernet = Supernet(space, mode="path", alphas=False)
    arch = supernet.search_space.sample(random.Random(0))
    cell = next(label.split("/")[0] for label in arch if "/op_" in label)
    node = min(int(label.rsplit("_", 2)[-2]) for label in arch if label.startswith(f"{cell}/op_"))
    for k in (0, 1):  # both ops of the first node: the same op of the same input
        arch[f"{cell}/op_{node}_{k}"] = arch[f"{cell}/op_{node}_0"]
        arch[f"{cell}/input_{node}_{k}"] = [0]
    fixed = _rebuild(space, entry, arch, supernet)
    assert set(fixed_state_keys(supernet, arch)) == set(fixed.state_dict())


@pytest.mark.slow
@pytest.mark.parametrize("strategy", list(STRATEGIES))
@pytest.mark.parametrize("name", CELL_SPACES)
def test_search_export_and_subnet_on_every_hub_cell_space(name, strategy):
    space, entry = _space(name)
    g = torch.Generator().manual_seed(0)
    x = torch.randn(8, *entry.input_size, generator=g)
    y = torch.randint(0, 10, (8,), generator=g)
    loader = DataLoader(TensorDataset(x, y), batch_size=4)
    evaluator = classification(
        train_dataloaders=loader, val_dataloaders=loader, **{**FAST_TRAINER, "max_epochs": 1}
    )
    s = STRATEGIES[strategy]()
    torch.manual_seed(0)
    s.run(space, evaluator)
    archs = s.export_top_models(top_k=2)
    assert archs and all(
        supernet_arch == s.supernet.search_space.validate(supernet_arch) for supernet_arch in archs
    )
    for arch in archs:
        _assert_same_model(
            s.subnet(arch), _rebuild(space, entry, arch, s.supernet), entry.input_size
        )


def _arch_with_loose_ends(supernet, cell, reads):
    """A valid arch whose ``cell`` has node ``i`` reading node ``reads[i]`` (both edges)."""
    arch = supernet.search_space.sample(random.Random(0))
    for i, j in reads.items():
        for k in (0, 1):
            arch[f"{cell}/input_{i}_{k}"] = [j]
    return arch


@pytest.mark.parametrize("name", ["enas", "nasnet"])
def test_loose_end_cells_hand_the_next_layers_the_channels_of_their_loose_ends(name):
    """Nodes 2..6 of the normal cell: 3 reads 2, 5 reads 4, so the loose ends are 3, 5, 6
    (0-based 1, 3, 4); the reduce cell: 4 reads 3, 6 reads 5, leaving 2, 4, 6 (0, 2, 4)."""
    entry = space_entry(name)
    kw = {**entry.small, "auxiliary_loss": True}  # the auxiliary head reads a cell too
    supernet = Supernet(entry.cls(**kw), mode="path", alphas=False)
    for p in supernet.model.parameters():  # distinct values, so a wrong block shows
        p.data = torch.randn(p.shape, generator=torch.Generator().manual_seed(p.numel()))
    arch = _arch_with_loose_ends(supernet, "normal", {2: 0, 3: 2, 4: 1, 5: 4, 6: 0})
    arch.update(_arch_with_loose_ends(supernet, "reduce", {2: 1, 3: 0, 4: 3, 5: 1, 6: 5}))
    with model_context(arch):
        fixed = entry.cls(**kw)
    inherit_weights(supernet, fixed, arch)
    src, got = supernet.model.state_dict(), fixed.state_dict()
    c = entry.small["width"]  # stage 0 nodes have c channels, stage 1 2c, stage 2 4c
    normal_0 = [*range(1 * c, 2 * c), *range(3 * c, 4 * c), *range(4 * c, 5 * c)]  # stage 0
    reduce_1 = [*range(0, 2 * c), *range(4 * c, 6 * c), *range(8 * c, 10 * c)]  # stage 1
    reduce_2 = [*range(0, 4 * c), *range(8 * c, 12 * c), *range(16 * c, 20 * c)]  # stage 2
    cases = {  # the small space has one cell per stage: normal, reduce, reduce
        "stages.1.0.preprocessor.pre1.1.weight": normal_0,
        "stages.2.0.preprocessor.pre0.conv_1.weight": normal_0,
        "stages.2.0.preprocessor.pre0.conv_2.weight": normal_0,
        "stages.2.0.preprocessor.pre1.1.weight": reduce_1,
        "classifier.weight": reduce_2,
        "auxiliary_head.features.2.weight": reduce_2,
    }
    for key, channels in cases.items():
        assert got[key].shape[1] == len(channels) != src[key].shape[1], key
        assert torch.equal(got[key], src[key][:, channels]), key
    for key in ("stages.2.0.preprocessor.pre1.2.weight", "classifier.bias"):  # per output channel
        assert torch.equal(got[key], src[key]), key
