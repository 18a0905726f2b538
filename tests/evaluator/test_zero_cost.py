"""Zero-cost proxies: hand-computed values on tiny models, and the evaluator on NAS-Bench-201 cells."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn as nn

from nasx.evaluator.zero_cost import ZeroCostEvaluator, grad_norm, naswot, synflow


def test_synflow_of_a_two_layer_linear_net():
    # R = sum |W2| |W1| 1 = (1*1 + 1*2)... with W1 = [[1, -2]], W2 = [[-3]]: R = 3 * (1 + 2) = 9.
    # sum |theta * dR/dtheta| = |W1| * 3 summed (3 + 6) + |W2| * 3 = 9 + 9 = 18.
    net = nn.Sequential(nn.Linear(2, 1, bias=False), nn.Linear(1, 1, bias=False))
    with torch.no_grad():
        net[0].weight.copy_(torch.tensor([[1.0, -2.0]]))
        net[1].weight.copy_(torch.tensor([[-3.0]]))
    assert synflow(net, torch.randn(7, 2)) == 18.0
    assert net[0].weight[0, 1].item() == -2.0  # the model itself is untouched


def test_naswot_counts_relu_agreements():
    # Identity then ReLU on 2 units: codes of the inputs are [1, 0], [0, 1], [1, 1].
    # Agreements: K = [[2, 0, 1], [0, 2, 1], [1, 1, 2]], det = 2*(4-1) - 0 + 1*(0-2) = 4.
    net = nn.Sequential(nn.Identity(), nn.ReLU())
    x = torch.tensor([[1.0, -1.0], [-1.0, 1.0], [1.0, 1.0]])
    assert math.isclose(naswot(net, x), math.log(4.0))
    with pytest.raises(ValueError, match="no"):
        naswot(nn.Linear(2, 2), x)


def test_grad_norm_matches_autograd_by_hand():
    lin = nn.Linear(3, 2)
    x, y = torch.randn(4, 3), torch.tensor([0, 1, 1, 0])
    loss = nn.functional.cross_entropy(lin(x), y)
    gw, gb = torch.autograd.grad(loss, [lin.weight, lin.bias])
    expected = torch.sqrt(gw.pow(2).sum() + gb.pow(2).sum()).item()
    assert math.isclose(grad_norm(lin, x, y), expected, rel_tol=1e-6)
    assert lin.weight.grad is None


def test_evaluator_on_tiny_nas_bench_201_models_is_deterministic():
    from nasx.hub import NasBench201
    from nasx.hub.nasbench201 import nb201_string_to_arch

    space = NasBench201(stem_out_channels=4, num_modules_per_stack=1)
    good = nb201_string_to_arch(
        "|nor_conv_3x3~0|+|nor_conv_3x3~0|nor_conv_3x3~1|+|nor_conv_3x3~0|nor_conv_3x3~1|nor_conv_3x3~2|"
    )
    empty = nb201_string_to_arch("|none~0|+|none~0|none~1|+|none~0|none~1|none~2|")
    x, y = torch.randn(4, 3, 8, 8), torch.tensor([0, 1, 2, 3])
    for proxy in ("synflow", "naswot", "grad_norm"):
        ev = ZeroCostEvaluator(proxy, x, y)
        first = ev.evaluate(space.freeze(good))["default"]
        assert ev.evaluate(space.freeze(good))["default"] == first  # re-initialised under seed
        if proxy == "synflow":  # the empty cell cuts every path through the cells' convs
            assert ev.evaluate(space.freeze(empty))["default"] < first
    with pytest.raises(ValueError, match="proxy must be one of"):
        ZeroCostEvaluator("snip", x)
    with pytest.raises(ValueError, match="needs targets"):
        ZeroCostEvaluator("grad_norm", x)
