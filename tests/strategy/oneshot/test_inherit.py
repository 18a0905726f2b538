"""Weight inheritance: supernet keys map to the fixed model's keys; values are copied."""

import pytest
import torch
import torch.nn as nn

from nasx.space import Cell, ModelSpace, model_context
from nasx.strategy.oneshot import Supernet, fixed_state_keys, inherit_weights

from .toys import DartsLikeSpace


def arch_of(space_kwargs, seed=0):
    from nasx.space import search_space

    return search_space(DartsLikeSpace(**space_kwargs)).sample(seed=seed)


def test_cell_keys_map_edge_ops_to_node_ops():
    kw = dict(width=4, num_cells=3, num_nodes=2)
    supernet = Supernet(DartsLikeSpace(**kw))
    arch = arch_of(kw)
    arch.update({"normal/op_2_0": "sep_conv_3x3", "normal/input_2_0": [1]})
    mapping = fixed_state_keys(supernet, arch)
    assert mapping["cells.0.ops.0.0.1.weight"] == "cells.0.edges.2_1.sep_conv_3x3.1.weight"
    assert mapping["stem.0.weight"] == "stem.0.weight"
    assert mapping["cells.0.preprocessor.pre1.1.weight"] == "cells.0.preprocessor.pre1.1.weight"


def test_the_same_op_from_the_same_input_twice_fills_both_fixed_ops():
    # Both ops of node 2 are sep_conv_3x3 of input 1: one supernet edge, two fixed modules.
    kw = dict(width=4, num_cells=3, num_nodes=2)
    supernet = Supernet(DartsLikeSpace(**kw))
    arch = arch_of(kw)
    for k in (0, 1):
        arch.update({f"normal/op_2_{k}": "sep_conv_3x3", f"normal/input_2_{k}": [1]})
    fixed = inherit_weights(supernet, _freeze(kw, arch), arch)
    edge = supernet.model.state_dict()["cells.0.edges.2_1.sep_conv_3x3.1.weight"]
    for k in (0, 1):
        assert torch.equal(fixed.state_dict()[f"cells.0.ops.0.{k}.1.weight"], edge)


def _freeze(kw, arch):
    with model_context(arch):
        return DartsLikeSpace(**kw)


def test_inherited_model_has_the_supernet_tensors_and_all_keys():
    kw = dict(width=4, num_cells=3, num_nodes=2)
    supernet = Supernet(DartsLikeSpace(**kw))
    arch = arch_of(kw, seed=3)
    with model_context(arch):
        fixed = DartsLikeSpace(**kw)
    inherit_weights(supernet, fixed, arch)
    src = supernet.model.state_dict()
    dst = fixed.state_dict()
    mapping = fixed_state_keys(supernet, arch)
    assert set(mapping) == set(dst)  # every fixed key is filled
    for d, s in mapping.items():
        assert torch.equal(src[s], dst[d])


def test_mismatched_model_is_refused():
    kw = dict(width=4, num_cells=3, num_nodes=2)
    supernet = Supernet(DartsLikeSpace(**kw))
    with model_context(arch_of(kw, seed=1)):
        other = DartsLikeSpace(width=8, num_cells=3, num_nodes=2)
    with pytest.raises(ValueError, match=r"shape mismatch\(es\), e.g. stem.0.weight"):
        inherit_weights(supernet, other, arch_of(kw, seed=1))


class _LooseEndNet(ModelSpace):
    """A loose-end cell read by a linear layer, without ``cell_readers()`` to say so."""

    def __init__(self):
        super().__init__()
        ops = {"id": lambda node, op, inp: nn.Identity()}
        self.cell = Cell(ops, num_nodes=2, num_predecessors=1, merge_op="loose_end", label="c")
        self.head = nn.Linear(2 * len(self.cell.output_node_indices), 3)

    def forward(self, x):
        return self.head(self.cell(x))


def test_a_loose_end_space_without_cell_readers_is_refused_saying_why():
    supernet = Supernet(_LooseEndNet(), mode="path", alphas=False)
    arch = {"c/op_1_0": "id", "c/input_1_0": [0], "c/op_2_0": "id", "c/input_2_0": [1]}
    with model_context(arch):
        fixed = _LooseEndNet()
    with pytest.raises(ValueError, match=r"loose-end nodes.*cell_readers\(\).*space.freeze"):
        inherit_weights(supernet, fixed, arch)
