"""Proxyless: binary-gate gradients equal the mixture gradient at the sampled one-hot gate."""

import pytest
import torch

from nasx.strategy import Proxyless
from nasx.strategy.oneshot import Supernet

from .test_mixed import Net
from .toys import TOY_RIGHT, ToySpace, toy_evaluator


def test_gate_gradient_matches_one_hot_mixture_reference():
    torch.manual_seed(0)
    supernet = Supernet(Net(), mode="path")
    arch = {"op": "b", "pick": [0, 1], "depth": 2}
    alpha = supernet.alpha("op")
    with torch.no_grad():
        alpha.copy_(torch.tensor([0.3, -0.2, 0.1]))
    x = torch.randn(4, 4)
    probs = {"op": alpha.softmax(-1)}
    supernet.use_arch(arch, gates=probs)
    supernet(x).square().sum().backward()
    got = alpha.grad.clone()

    # Reference: out = sum_k g_k o_k with g one-hot at 'b'; dL/dalpha = J_softmax^T dL/dg.
    op = supernet.model.op
    g = torch.tensor([0.0, 1.0, 0.0], requires_grad=True)
    supernet.use_arch(arch)
    outs = [op.candidate(v)(x) for v in op.values]
    rest = lambda h: supernet.model.deep(supernet.model.pick([x, h, 2 * h]))  # noqa: E731
    rest(sum(gk * o for gk, o in zip(g, outs, strict=False))).square().sum().backward()
    p = probs["op"].detach()
    jac = torch.diag(p) - torch.outer(p, p)
    torch.testing.assert_close(got, jac @ g.grad)


def test_selects_the_right_candidate():
    torch.manual_seed(0)
    s = Proxyless(arc_learning_rate=3e-2)
    s.run(ToySpace(), toy_evaluator(epochs=3))
    assert s.export_top_models()[0] == TOY_RIGHT


def test_cost_penalty_steers_away_from_expensive_candidate():
    torch.manual_seed(0)
    s = Proxyless(
        arc_learning_rate=5e-2,
        cost={"op": {"linear": 10.0, "noise": 0.0, "zero": 0.0}},
        penalty_weight=1.0,
    )
    s.run(ToySpace(), toy_evaluator(epochs=2))
    assert s.export_top_models()[0]["op"] != "linear"
    assert s.penalty(
        {"op": torch.tensor([0.0, 0.0, 1.0]), "pick": torch.tensor([0.5, 0.5])}
    ) == pytest.approx(10.0)
