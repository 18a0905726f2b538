"""Mutator: NNI's one-shot pattern (reset / forward / export) on the supernet's mechanism."""

from __future__ import annotations

import json

import pytest
import torch
import torch.nn as nn

from nasx.space import InputChoice, LayerChoice, ModelSpace, model_context, search_space
from nasx.strategy import Mutator, RandomMutator


class Const(nn.Module):
    def __init__(self, c: float):
        super().__init__()
        self.c = c

    def forward(self, x):
        return torch.full_like(x, self.c)


class Space(ModelSpace):
    """op: constant 1, 2 or 3; pick: two of three inputs summed."""

    def __init__(self):
        super().__init__()
        self.op = LayerChoice(
            {"one": Const(1.0), "two": Const(2.0), "three": Const(3.0)}, label="op"
        )
        self.pick = InputChoice(3, 2, label="pick")

    def forward(self, x):
        h = self.op(x)
        return self.pick([h, 10 * h, 100 * h])


def test_reset_applies_the_sampled_path_and_export_is_json_ready():
    model = Space()
    mutator = RandomMutator(model, seed=0)
    assert [(m.key, m.kind, len(m)) for m in mutator.mutables] == [
        ("op", "layer", 3),
        ("pick", "input", 3),
    ]
    for _ in range(10):
        mutator.reset()
        op = mutator.decision("op")
        pick = mutator.decision("pick")
        c = float(torch.tensor([1.0, 2.0, 3.0])[op].sum())
        scale = float(torch.tensor([1.0, 10.0, 100.0])[pick].sum())
        assert torch.equal(model(torch.zeros(2)), torch.full((2,), c * scale))
        # the one mechanism: the supernet's state holds the arch the decision names
        assert mutator.supernet.state.arch == mutator._arch_of({"op": op, "pick": pick})
    arch = mutator.export()
    assert json.loads(json.dumps(arch)) == arch and len(arch["pick"]) == 2
    with model_context(arch):
        fixed = Space()
    assert isinstance(fixed.op, Const)


class Darts(Mutator):
    """A DARTS-style mutator: alphas are the mutator's parameters, decisions their softmax."""

    def __init__(self, model):
        super().__init__(model, mode="mixture")
        self.alphas = nn.ParameterDict(
            {m.key: nn.Parameter(torch.zeros(len(m))) for m in self.mutables}
        )

    def sample_search(self):
        return {k: a.softmax(-1) for k, a in self.alphas.items()}

    def sample_final(self):
        return {k: a.detach() for k, a in self.alphas.items()}


def test_mixture_mutator_weights_every_candidate_and_trains_its_alphas():
    model = Space()
    mutator = Darts(model)
    with torch.no_grad():
        mutator.alphas["op"].copy_(torch.tensor([0.0, 0.0, 1.0]))
        mutator.alphas["pick"].copy_(torch.tensor([2.0, 0.0, 0.0]))
    mutator.reset()
    w_op, w_pick = mutator.decision("op").detach(), mutator.decision("pick").detach()
    out = model(torch.zeros(1))
    # op: weighted constants; pick: 'sum' of 2 inputs = 2 * the convex mixture (nasx's scaling)
    expected = (
        float((w_op * torch.tensor([1.0, 2.0, 3.0])).sum())
        * 2
        * float((w_pick * torch.tensor([1.0, 10.0, 100.0])).sum())
    )
    assert float(out.detach()) == pytest.approx(expected)
    out.sum().backward()
    assert all(a.grad is not None and a.grad.abs().sum() > 0 for a in mutator.parameters())
    # export: the strongest op; the n_chosen=2 strongest inputs (alphas [2, 0, 0]: 0 first)
    arch = mutator.export()
    assert arch["op"] == "three" and len(arch["pick"]) == 2 and 0 in arch["pick"]


def test_hooks_take_over_a_choice_nni_style():
    calls = []

    class Always2(RandomMutator):
        def on_forward_layer_choice(self, mutable, *args, **kwargs):
            calls.append(mutable.label)
            mask = torch.tensor([False, True, False])
            return mutable.candidate("two")(*args, **kwargs), mask  # NNI 1.x: (output, mask)

    model = Space()
    mutator = Always2(model, seed=0)
    mutator.reset()
    pick = mutator.decision("pick")
    out = model(torch.zeros(1))
    assert calls == ["op"] and float(out) == 2.0 * float(
        torch.tensor([1.0, 10.0, 100.0])[pick].sum()
    )


def test_decisions_are_checked_and_the_base_class_asks_for_sample_search():
    class Wrong(Mutator):
        def sample_search(self):
            return {"op": torch.tensor([True, False, False])}

    with pytest.raises(ValueError, match=r"missing \['pick'\]"):
        Wrong(Space()).reset()

    class Short(Mutator):
        def sample_search(self):
            return {"op": torch.tensor([True, False]), "pick": torch.tensor([True, True, False])}

    with pytest.raises(ValueError, match="1-D tensor of 3"):
        Short(Space()).reset()
    with pytest.raises(NotImplementedError, match="sample_search"):
        Mutator(Space()).reset()
    with pytest.raises(RuntimeError, match="reset"):
        RandomMutator(Space()).decision("op")


def test_random_mutator_on_a_cell_space_and_rebuild():
    from nasx.hub import DARTS

    model = DARTS(width=4, num_cells=3)
    labels = list(search_space(model))
    mutator = RandomMutator(model, seed=1)
    mutator.reset()
    assert model(torch.randn(2, 3, 16, 16)).shape == (2, 10)
    arch = mutator.export()
    assert list(arch) == labels
    with model_context(arch):
        assert DARTS(width=4, num_cells=3)(torch.randn(1, 3, 16, 16)).shape == (1, 10)
