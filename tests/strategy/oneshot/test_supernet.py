"""Supernet: parameter split, label sharing, unsupported choices, path mode == fixed model, export."""

import pytest
import torch
import torch.nn as nn

from nasx.space import LayerChoice, ModelSpace, choice, search_space
from nasx.strategy.oneshot import Supernet, subnet

from .toys import DartsLikeSpace


class Shared(ModelSpace):
    def __init__(self):
        super().__init__()
        self.a = LayerChoice([nn.Linear(2, 2), nn.Identity()], label="act")
        self.b = LayerChoice([nn.Linear(2, 2), nn.Identity()], label="act")

    def forward(self, x):
        return self.b(self.a(x))


def test_arch_and_model_parameters_are_split_by_name():
    supernet = Supernet(DartsLikeSpace(width=4, num_cells=3))
    names = [n for n, _ in supernet.named_parameters()]
    arch = [n for n in names if n.startswith("arch_params.")]
    assert len(arch) == len(supernet.arch_parameters()) == 10  # 5 edges x (normal, reduce)
    assert {id(p) for p in supernet.model_parameters()}.isdisjoint(
        id(p) for p in supernet.arch_parameters()
    )
    assert all(n.startswith("model.") for n in names if n not in arch)


def test_shared_label_has_one_alpha_and_one_decision():
    supernet = Supernet(Shared())
    assert list(supernet.alphas()) == ["act"]
    supernet.use_arch({"act": 1})
    assert torch.equal(supernet(torch.ones(1, 2)), torch.ones(1, 2))


def test_value_choice_is_refused_with_its_label():
    class Width(ModelSpace):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(2, choice("width", [4, 8]))

    with pytest.raises(NotImplementedError, match="width"):
        Supernet(Width())


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_path_mode_matches_fixed_model_with_inherited_weights(seed):
    torch.manual_seed(seed)
    space = DartsLikeSpace(width=4, num_cells=3)
    supernet = Supernet(space).eval()
    arch = search_space(space).sample(seed=seed)
    supernet.use_arch(arch)
    fixed = subnet(supernet, arch).eval()
    x = torch.randn(2, 3, 16, 16)
    torch.testing.assert_close(supernet(x), fixed(x))
    assert type(fixed) is DartsLikeSpace and search_space(fixed) == {}


def test_one_hot_edges_reproduce_the_fixed_cell():
    """Mixture mode: chosen edges one-hot on their op, other edges one-hot on 'none'."""
    torch.manual_seed(0)
    space = DartsLikeSpace(width=4, num_cells=3)
    supernet = Supernet(space).eval()
    arch = supernet.export()  # DARTS export: two distinct inputs per node
    values = ["sep_conv_3x3", "max_pool_3x3", "skip_connect", "none"]

    def weights(key, alpha):
        cell, edge = key.split("/")
        _, i, j = edge.split("_")
        w = torch.zeros(4)
        for k in range(2):
            if arch[f"{cell}/input_{i}_{k}"] == [int(j)]:
                w[values.index(arch[f"{cell}/op_{i}_{k}"])] = 1.0
                break
        else:
            w[3] = 1.0
        return w

    supernet.use_mixture(weights)
    fixed = subnet(supernet, arch).eval()
    x = torch.randn(2, 3, 16, 16)
    torch.testing.assert_close(supernet(x), fixed(x))


def test_cell_export_keeps_top_edges_by_strongest_non_none_op():
    supernet = Supernet(DartsLikeSpace(width=4, num_cells=3, num_nodes=2))
    # ops: sep_conv, max_pool, skip, none
    logits = {
        "normal/edge_2_0": [
            0.0,
            2.0,
            0.0,
            9.0,
        ],  # 'none' dominates but is ignored; max_pool strongest
        "normal/edge_2_1": [3.0, 0.0, 0.0, 0.0],  # sep_conv, strongest edge of node 2
        "normal/edge_3_0": [0.0, 0.0, 0.0, 0.0],  # weakest of node 3
        "normal/edge_3_1": [0.0, 0.0, 1.0, 0.0],
        "normal/edge_3_2": [0.0, 5.0, 0.0, 0.0],
    }
    with torch.no_grad():
        for key, v in logits.items():
            supernet.alpha(key).copy_(torch.tensor(v))
    arch = supernet.export()
    assert (arch["normal/op_2_0"], arch["normal/input_2_0"]) == ("sep_conv_3x3", [1])
    assert (arch["normal/op_2_1"], arch["normal/input_2_1"]) == ("max_pool_3x3", [0])
    assert (arch["normal/op_3_0"], arch["normal/input_3_0"]) == ("max_pool_3x3", [2])
    assert (arch["normal/op_3_1"], arch["normal/input_3_1"]) == ("skip_connect", [1])
    probs = supernet.export_probs()
    expected = torch.tensor([3.0, 0.0, 0.0, 0.0]).softmax(0)
    assert probs["normal/op_2_0"]["sep_conv_3x3"] == pytest.approx(float(expected[0]))
    assert sum(probs["normal/input_3_0"].values()) == pytest.approx(1.0)


def test_export_of_layer_and_input_choices():
    supernet = Supernet(Shared())
    with torch.no_grad():
        supernet.alpha("act").copy_(torch.tensor([0.0, 1.0]))
    assert supernet.export() == {"act": 1}
    p = supernet.export_probs()["act"]
    assert p[1] == pytest.approx(float(torch.tensor([0.0, 1.0]).softmax(0)[1]))


def test_path_mode_alphas_cover_every_label_over_its_grid():
    space = DartsLikeSpace(width=4, num_cells=3)
    supernet = Supernet(space, mode="path")
    ss = search_space(space)
    assert {k: a.numel() for k, a in supernet.alphas().items()} == {
        k: len(c) for k, c in ss.items()
    }
    ss.validate(supernet.export())
