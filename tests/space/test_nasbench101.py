"""NasBench101Cell: NNI's labels, the paper's pruning and channel rule (hand-computed), parameter
counts by hand, constraint errors, TorchScript of the rebuilt cell."""

import random

import pytest
import torch
import torch.nn as nn

from nasx.space import ConstraintViolation, ModelSpace, model_context, search_space
from nasx.space.nasbench101 import NasBench101Cell, prune, vertex_channels

OPS = {"conv1x1": lambda c: nn.Conv2d(c, c, 1), "relu": lambda c: nn.ReLU()}


def proj(i, o):
    return nn.Conv2d(i, o, 1)


def build(arch, in_features=4, out_features=6, max_num_nodes=4, max_num_edges=9):
    with model_context(arch, strict=False):
        return NasBench101Cell(
            OPS, in_features, out_features, proj, max_num_nodes, max_num_edges, label="c"
        )


def test_labels_follow_nni():
    class Net(ModelSpace):
        def __init__(self):
            super().__init__()
            self.cell = NasBench101Cell(OPS, 4, 6, proj, label="cell")

    ss = search_space(Net())
    assert list(ss) == ["cell/num_nodes"] + [f"cell/op{i}" for i in range(1, 6)] + [
        f"cell/input{i}" for i in range(1, 7)
    ]
    assert ss["cell/num_nodes"].values == [2, 3, 4, 5, 6, 7]
    assert ss["cell/input3"].grid()[:3] == [[], [0], [1]]  # any subset of the earlier vertices


def test_pruning_and_the_channel_rule():
    # vertex 2 has no input: pruned; vertex 1 reaches the output.
    assert prune([[], [0], [], [1, 2]]) == [0, 1, 3]
    # vertex 3 is fed but feeds nothing: pruned.
    assert prune([[], [0], [1], [1], [2]]) == [0, 1, 2, 4]
    # Two vertices feed an output of 5 channels: 3 + 2 (the remainder goes to the first).
    assert vertex_channels(16, 5, [[], [0], [0], [1, 2]]) == [16, 3, 2, 5]
    # A vertex that feeds only another interior vertex takes that vertex's width.
    assert vertex_channels(8, 6, [[], [0], [1], [0], [2, 3]]) == [8, 3, 3, 3, 6]


def test_parameter_count_by_hand():
    # in 4 -> v1 (conv1x1, 6 ch) -> out, plus input -> out through a projection.
    cell = build({"c/num_nodes": 3, "c/op1": "conv1x1", "c/input1": [0], "c/input2": [0, 1]})
    # projection to v1: 4*6+6; conv1x1 on v1: 6*6+6; projection to the output: 4*6+6
    assert sum(p.numel() for p in cell.parameters()) == 30 + 42 + 30
    x = torch.randn(2, 4, 3, 3)
    expected = cell.ops[0](cell.projections[0](x)) + cell.out_projection(x)
    assert torch.allclose(cell(x), expected)


def test_constraints_are_refused_when_rebuilt():
    with pytest.raises(ConstraintViolation, match="not reachable"):
        build({"c/num_nodes": 3, "c/op1": "relu", "c/input1": [], "c/input2": [1]})
    full = {
        "c/num_nodes": 4,
        "c/op1": "relu",
        "c/op2": "relu",
        "c/input1": [0],
        "c/input2": [0, 1],
        "c/input3": [0, 1, 2],
    }
    with pytest.raises(ConstraintViolation, match="6 edges, more than max_num_edges=5"):
        build(full, max_num_edges=5)


def test_sampled_archs_rebuild_run_and_script():
    class Net(ModelSpace):
        def __init__(self):
            super().__init__()
            self.cell = NasBench101Cell(OPS, 4, 8, proj, max_num_nodes=5, label="cell")

        def forward(self, x):
            return self.cell(x)

    space = Net()
    assert space(torch.randn(1, 4, 3, 3)).shape == (1, 8, 3, 3)  # the search form runs
    ss = search_space(space)
    built = 0
    for seed in range(12):
        try:
            model = space.freeze(ss.sample(random.Random(seed)))
        except ConstraintViolation:
            continue
        x = torch.randn(1, 4, 3, 3)
        assert model(x).shape == (1, 8, 3, 3)
        assert torch.allclose(torch.jit.script(model.cell)(x), model(x))
        built += 1
    assert built >= 3
