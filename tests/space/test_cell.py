import pytest
import torch
import torch.nn as nn

from nasx.space import Cell, ChosenInputs, LayerChoice, model_context, search_space


class Scale(nn.Module):
    def __init__(self, factor: float):
        super().__init__()
        self.factor = factor

    def forward(self, x):
        return x * self.factor


OPS = {"double": Scale(2.0), "neg": Scale(-1.0), "skip": Scale(1.0)}


def _inputs():
    return torch.full((1, 1, 2, 2), 1.0), torch.full((1, 1, 2, 2), 3.0)


def test_labels_follow_nni_scheme():
    cell = Cell(OPS, num_nodes=2, num_ops_per_node=2, num_predecessors=2, label="normal")
    space = search_space(cell)
    assert sorted(space) == sorted(
        f"normal/{kind}_{node}_{k}" for kind in ("op", "input") for node in (2, 3) for k in (0, 1)
    )
    assert space["normal/op_2_0"].values == ["double", "neg", "skip"]
    assert space["normal/input_3_1"].grid() == [[0], [1], [2]]


def test_fixed_cell_wiring_matches_hand_computation():
    arch = {"c/op_2_0": "double", "c/input_2_0": [1], "c/op_3_0": "neg", "c/input_3_0": 2}
    with model_context(arch):
        cell = Cell(OPS, num_nodes=2, num_predecessors=2, label="c")
        loose = Cell(OPS, num_nodes=2, num_predecessors=2, merge_op="loose_end", label="c")
    x0, x1 = _inputs()
    s2 = 2 * x1
    s3 = -s2
    assert torch.equal(cell(x0, x1), torch.cat([s2, s3], 1))
    assert torch.equal(cell([x0, x1]), torch.cat([s2, s3], 1))
    assert loose.output_node_indices == [1]
    assert torch.equal(loose(x0, x1), s3)
    assert not any(isinstance(m, (LayerChoice,)) for m in cell.modules())
    assert all(isinstance(m, ChosenInputs) for row in cell.inputs for m in row)
    assert search_space(cell) == {}


def test_ops_per_node_are_summed():
    arch = {"c/op_1_0": "double", "c/input_1_0": [0], "c/op_1_1": "neg", "c/input_1_1": [0]}
    with model_context(arch):
        cell = Cell(OPS, num_nodes=1, num_ops_per_node=2, num_predecessors=1, label="c")
    x = torch.randn(1, 1, 2, 2)
    assert torch.allclose(cell(x), 2 * x - x)


def test_factories_receive_node_op_and_chosen_input():
    calls = []

    def factory(node, op_index, input_index):
        calls.append((node, op_index, input_index))
        return nn.Identity()

    Cell([factory], num_nodes=2, num_predecessors=2, label="s")
    assert calls == [(2, 0, None), (3, 0, None)]
    calls.clear()
    with model_context({"s/op_2_0": 0, "s/input_2_0": [1], "s/op_3_0": 0, "s/input_3_0": [2]}):
        Cell([factory], num_nodes=2, num_predecessors=2, label="s")
    assert calls == [(2, 0, 1), (3, 0, 2)]


def test_pre_and_postprocessors():
    class Pre(nn.Module):
        def forward(self, inputs):
            return [x + 1 for x in inputs]

    class Post(nn.Module):
        def forward(self, this_cell, inputs):
            return inputs[-1], this_cell

    arch = {"c/op_1_0": "skip", "c/input_1_0": [0]}
    with model_context(arch):
        cell = Cell(OPS, num_nodes=1, label="c", preprocessor=Pre(), postprocessor=Post())
    x = torch.zeros(1, 1, 2, 2)
    prev, out = cell(x)
    assert prev is x and torch.equal(out, x + 1)


def test_search_form_forward_uses_default_arch():
    cell = Cell(OPS, num_nodes=2, num_predecessors=2, label="c")
    x0, x1 = _inputs()
    # default: every op 'double', every input [0]
    assert torch.equal(cell(x0, x1), torch.cat([2 * x0, 2 * x0], 1))


def test_bad_cell_arguments():
    with pytest.raises(ValueError, match="merge_op"):
        Cell(OPS, 2, merge_op="sum")
    with pytest.raises(ValueError, match="num_nodes must be a positive int"):
        Cell(OPS, 0)
    with pytest.raises(TypeError, match=r"take \(node_index, op_index, input_index\)"):
        Cell([lambda x: nn.Identity()], 1)
    cell = Cell(OPS, 1, num_predecessors=2, label="c")
    with pytest.raises(ValueError, match="expects 2 inputs, got 1"):
        cell(torch.zeros(1))


def test_fixed_cell_builds_only_the_chosen_ops():
    built = []

    def make(name):
        def factory(node, op, inp):
            built.append(name)
            return nn.Identity()

        return factory

    ops = {"a": make("a"), "b": make("b"), "c": make("c")}
    with model_context({"c/op_1_0": "b", "c/input_1_0": [0]}):
        Cell(ops, num_nodes=1, label="c")
    assert built == ["b"]
