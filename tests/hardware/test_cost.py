"""arch_cost and candidate_costs: published MnasNet figures and hand-computed tables."""

from __future__ import annotations

import pytest
import torch.nn as nn

from nasx.hardware.cost import ArchCost, arch_cost, candidate_costs, model_cost
from nasx.hub.mnasnet import MNASNET_A1, MOBILENET_V2, MnasNet
from nasx.space import LayerChoice, ModelSpace, choice, search_space


class TwoChoices(ModelSpace):
    def __init__(self):
        super().__init__()
        width = choice("width", [4, 8])
        self.fc1 = nn.Linear(3, width)
        self.act = LayerChoice({"relu": nn.ReLU(), "lin": nn.Linear(width, width)}, label="act")
        self.fc2 = nn.Linear(width, 2)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


def test_mnasnet_a1_and_mobilenet_v2_match_the_papers():
    a1 = arch_cost(MnasNet(), MNASNET_A1, (3, 224, 224))
    assert a1.params == 3_887_038  # paper: 3.9 M
    assert a1.macs == 311_579_072  # paper: 312 M
    assert a1.flops == 2 * a1.macs
    v2 = arch_cost(MnasNet(), MOBILENET_V2, (3, 224, 224))
    assert round(v2.macs / 1e6) == 301  # paper: 300 M (ReLU instead of ReLU6 changes no MAC)
    for arch in (MNASNET_A1, MOBILENET_V2):  # the model built and traced gives the same figures
        built = arch_cost(MnasNet(), arch, (3, 224, 224), analytic=False)
        assert built == arch_cost(MnasNet(), arch, (3, 224, 224))


def test_mnasnet_formulas_equal_the_built_model_on_sampled_archs():
    space = MnasNet(num_classes=7)
    ss = search_space(space)
    for seed in range(12):
        arch = ss.sample(seed=seed)
        for shape in ((3, 224, 224), (3, 33, 50)):  # odd sizes: the convs' rounding
            assert arch_cost(space, arch, shape) == arch_cost(space, arch, shape, analytic=False)
    with pytest.raises(ValueError, match="block1/filters"):
        arch_cost(space, {**MNASNET_A1, "block1/filters": 9}, (3, 32, 32))
    with pytest.raises(ValueError, match=r"MnasNet takes \(3, H, W\) inputs"):
        arch_cost(space, MNASNET_A1, (1, 32, 32))


def test_meta_and_cpu_builds_count_the_same():
    space = MnasNet(num_classes=10)
    meta = arch_cost(space, MNASNET_A1, (3, 32, 32))
    cpu = arch_cost(space, MNASNET_A1, (3, 32, 32), device="cpu")
    assert meta == cpu


def test_hand_computed_cost_and_latency_function():
    cost = arch_cost(TwoChoices(), {"width": 8, "act": "lin"}, (3,), latency=lambda m, s: 1.5)
    # fc1 3*8 + lin 8*8 + fc2 8*2 MACs; params add the biases
    assert cost == ArchCost(
        params=(24 + 8) + (64 + 8) + (16 + 2), macs=24 + 64 + 16, latency_ms=1.5
    )
    assert cost.to_dict() == {"params": 122, "macs": 104, "flops": 208, "latency_ms": 1.5}
    with pytest.raises(TypeError, match="LatencyTable or fn"):
        model_cost(nn.Linear(2, 2), (2,), latency=3)


def test_candidate_costs_are_differences_from_the_default_arch():
    table = candidate_costs(TwoChoices(), (3,))
    # default arch: width 4, relu -> 3*4 + 4*2 = 20 MACs
    assert table == {"width": {4: 0.0, 8: (24 + 16) - 20.0}, "act": {"relu": 0.0, "lin": 16.0}}
    params = candidate_costs(TwoChoices(), (3,), "params", base={"width": 8, "act": "relu"})
    assert params["act"] == {"relu": 0.0, "lin": 72.0}
    with pytest.raises(ValueError, match="unknown cost metric 'energy'"):
        candidate_costs(TwoChoices(), (3,), "energy")
    with pytest.raises(ValueError, match="latency_ms is unknown"):
        candidate_costs(TwoChoices(), (3,), "latency_ms")
