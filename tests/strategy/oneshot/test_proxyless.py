"""Proxyless: binary-gate gradients equal the mixture gradient at the sampled one-hot gate; the
two-path update (Cai et al. 2019, Sec. 3.2.1) against its formula, worked by hand."""

from types import SimpleNamespace

import pytest
import torch
import torch.nn as nn

from nasx.space import LayerChoice, ModelSpace
from nasx.strategy import Proxyless
from nasx.strategy.oneshot import Supernet
from nasx.strategy.oneshot.sampling import step_generator

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


@pytest.mark.parametrize("arch_paths", ["two", "all"])
def test_selects_the_right_candidate(arch_paths):
    torch.manual_seed(0)
    s = Proxyless(arc_learning_rate=3e-2, arch_paths=arch_paths)
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


# -- the two-path architecture update (the paper's Sec. 3.2.1) ----------------------------------


class TwoChoices(ModelSpace):
    """Two LayerChoices of four linear candidates each: [B, 4] -> [B, 3]."""

    def __init__(self):
        super().__init__()
        self.first = LayerChoice([nn.Linear(4, 4) for _ in range(4)], label="first")
        self.second = LayerChoice([nn.Linear(4, 3) for _ in range(4)], label="second")

    def forward(self, x):
        return self.second(torch.tanh(self.first(x)))


class OneChoice(ModelSpace):
    def __init__(self):
        super().__init__()
        self.op = LayerChoice([nn.Linear(4, 3) for _ in range(4)], label="op")

    def forward(self, x):
        return self.op(x)


def arch_step(strategy, supernet, x, step=0):
    """One ``Proxyless.arch_step`` on ``supernet`` with loss ``sum(out^2)`` on ``x``."""
    module = SimpleNamespace(
        supernet=supernet,
        step_index=step,
        loss=lambda batch: supernet(batch).square().sum(),
        run_backward=lambda loss, inputs: torch.autograd.backward(loss, inputs=inputs),
    )
    strategy.supernet = supernet
    opt = strategy.configure_arch_optimizer(module)
    strategy.arch_step(module, None, x, opt)


def one_choice(alpha=(0.4, -0.3, 0.1, 0.8)):
    torch.manual_seed(0)
    supernet = Supernet(OneChoice(), mode="path")
    with torch.no_grad():
        supernet.alpha("op").copy_(torch.tensor(alpha))
    return supernet, torch.randn(5, 4)


def binary_grads(supernet, x, chosen):
    """``g_k = <dL/d out, out_k>`` by hand: ``dL/d out = 2 out_chosen`` for ``L = sum(out^2)``."""
    op = supernet.model.op
    with torch.no_grad():
        outs = [op.candidate(v)(x) for v in op.values]
    return torch.stack([(2 * outs[chosen] * o).sum() for o in outs])


def test_two_path_gradient_matches_the_papers_formula():
    supernet, x = one_choice()
    s = Proxyless(arc_learning_rate=0.1)
    alpha0 = supernet.alpha("op").detach().clone()
    _, _, pairs = s._sample_two(supernet, step_generator(s.seed, 0, 1))  # what arch_step draws
    (c, o) = pairs["op"]
    arch_step(s, supernet, x)
    grad = supernet.alpha("op").grad

    # dL/dalpha_i = sum_j g_j p_j (delta_ij - p_i) over the pair, p = softmax(alpha_c, alpha_o)
    g = binary_grads(supernet, x, c)
    p = alpha0[[c, o]].softmax(-1)
    ref = {
        i: sum(g[j] * p[b] * (float(a == b) - p[a]) for b, j in enumerate((c, o)))
        for a, i in enumerate((c, o))
    }
    torch.testing.assert_close(grad[c], ref[c])
    torch.testing.assert_close(grad[o], ref[o])
    others = [k for k in range(4) if k not in (c, o)]
    assert grad[others].abs().sum() == 0


@pytest.mark.parametrize("weight_decay", [0.0, 0.5])
def test_two_path_update_keeps_unsampled_alphas_and_probabilities(weight_decay):
    supernet, x = one_choice()
    s = Proxyless(arc_learning_rate=0.3, arc_weight_decay=weight_decay)
    alpha0 = supernet.alpha("op").detach().clone()
    _, _, pairs = s._sample_two(supernet, step_generator(s.seed, 0, 1))
    arch_step(s, supernet, x)
    alpha1 = supernet.alpha("op").detach()
    pair = list(pairs["op"])
    others = [k for k in range(4) if k not in pair]
    assert torch.equal(alpha1[others], alpha0[others])  # not touched (even by weight decay)
    assert not torch.equal(alpha1[pair], alpha0[pair])  # the pair learned
    p0, p1 = alpha0.softmax(-1), alpha1.softmax(-1)
    torch.testing.assert_close(p1[others], p0[others], rtol=0, atol=1e-7)
    torch.testing.assert_close(p1[pair].sum(), p0[pair].sum(), rtol=0, atol=1e-7)


def test_all_paths_mode_gives_the_full_softmax_gradient():
    supernet, x = one_choice()
    s = Proxyless(arc_learning_rate=0.1, arch_paths="all")
    p = supernet.alpha("op").detach().softmax(-1)
    arch_step(s, supernet, x)
    chosen = supernet.model.op.values.index(supernet.state.arch["op"])
    g = binary_grads(supernet, x, chosen)
    jac = torch.diag(p) - torch.outer(p, p)
    torch.testing.assert_close(supernet.alpha("op").grad, jac @ g)


@pytest.mark.parametrize(("mode", "per_choice"), [("two", 2), ("all", 1 + 4)])
def test_arch_step_runs_two_candidate_forwards_per_choice(mode, per_choice):
    # the cost claim: 'two' runs the chosen candidate and recomputes one other, per choice
    torch.manual_seed(0)
    supernet = Supernet(TwoChoices(), mode="path")
    calls = []
    for choice in (supernet.model.first, supernet.model.second):
        for v in choice.values:
            choice.candidate(v).register_forward_hook(lambda *_: calls.append(1))
    for step in range(3):
        calls.clear()
        arch_step(Proxyless(arch_paths=mode), supernet, torch.randn(5, 4), step=step)
        assert len(calls) == 2 * per_choice


def test_two_path_update_on_inputs_depths_and_value_choices():
    from .test_mixed_value import ValueChoiceConvNet

    for space, x in ((Net(), torch.randn(4, 4)), (ValueChoiceConvNet(), torch.randn(2, 1, 8, 8))):
        torch.manual_seed(0)
        supernet = Supernet(space, mode="path")
        s = Proxyless(arc_learning_rate=0.3)
        before = {k: a.detach().clone() for k, a in supernet.alphas().items()}
        _, _, pairs = s._sample_two(supernet, step_generator(s.seed, 0, 1))
        arch_step(s, supernet, x)
        for label, a in supernet.alphas().items():
            if label not in pairs:  # one value: nothing to learn
                assert torch.equal(a.detach(), before[label]), label
                continue
            others = [k for k in range(a.numel()) if k not in pairs[label]]
            assert torch.equal(a.detach()[others], before[label][others]), label
            assert a.grad is not None and a.grad[others].abs().sum() == 0, label


def test_arch_paths_is_checked():
    with pytest.raises(ValueError, match="arch_paths='some'.*'two'.*'all'"):
        Proxyless(arch_paths="some")
