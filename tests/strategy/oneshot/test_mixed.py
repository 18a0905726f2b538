"""Mixed modules: one-hot architecture weights reproduce the chosen candidate exactly."""

import torch
import torch.nn as nn

from nasx.space import InputChoice, LayerChoice, ModelSpace, Repeat, model_context
from nasx.strategy.oneshot import Supernet, inherit_weights


class Net(ModelSpace):
    def __init__(self):
        super().__init__()
        self.op = LayerChoice(
            {
                "a": nn.Linear(4, 4),
                "b": nn.Sequential(nn.Linear(4, 4), nn.Tanh()),
                "none": nn.Identity(),
            },
            label="op",
        )
        self.pick = InputChoice(3, 2, reduction="sum", label="pick")
        self.deep = Repeat(
            lambda i: nn.Sequential(nn.Linear(4, 4), nn.ReLU()), (1, 3), label="depth"
        )

    def forward(self, x):
        h = self.op(x)
        return self.deep(self.pick([x, h, 2 * h]))


def one_hot_fn(arch, supernet):
    """Mixture weights that put all mass on ``arch``'s choices ([n] one-hot, or 1/k on k inputs)."""

    def fn(key, alpha):
        m = next(m for _, m in supernet.mixed_modules() if m.label == key)
        w = torch.zeros_like(alpha)
        if key == "pick":
            w[arch[key]] = 1.0 / len(arch[key])  # MixedInput scales 'sum' by n_chosen
        elif key == "depth":
            w[m.depths.index(arch[key])] = 1.0
        else:
            w[m.values.index(arch[key])] = 1.0
        return w

    return fn


def test_one_hot_mixture_equals_fixed_model():
    torch.manual_seed(0)
    supernet = Supernet(Net())
    x = torch.randn(5, 4)
    for arch in [
        {"op": "a", "pick": [0, 1], "depth": 1},
        {"op": "b", "pick": [1, 2], "depth": 3},
        {"op": "a", "pick": [0, 2], "depth": 2},
    ]:
        supernet.use_mixture(one_hot_fn(arch, supernet))
        with model_context(arch):
            fixed = Net()
        inherit_weights(supernet, fixed, arch)
        torch.testing.assert_close(supernet(x), fixed(x))


def test_none_candidate_is_skipped_in_mixture():
    supernet = Supernet(Net())
    calls = []
    supernet.model.op.candidate("none").register_forward_hook(lambda *a: calls.append(1))
    supernet(torch.randn(2, 4))
    assert calls == []


def test_mixture_is_softmax_weighted_sum():
    torch.manual_seed(0)
    supernet = Supernet(Net())
    with torch.no_grad():
        supernet.alpha("op").copy_(torch.tensor([0.5, -1.0, 2.0]))
    supernet.use_mixture()
    x = torch.randn(3, 4)
    w = torch.tensor([0.5, -1.0, 2.0]).softmax(0)
    op = supernet.model.op
    expected = w[0] * op.candidate("a")(x) + w[1] * op.candidate("b")(x)  # 'none' contributes 0
    supernet.state.weights = {k: supernet.weight_fn(k, a) for k, a in supernet.alphas().items()}
    torch.testing.assert_close(op(x), expected)


def test_checkpointed_mixture_has_same_values_and_gradients():
    torch.manual_seed(0)
    supernet = Supernet(Net())
    x = torch.randn(3, 4)
    grads = []
    for flag in (False, True):
        supernet.zero_grad()
        supernet.state.checkpoint = flag
        out = supernet(x)
        out.square().sum().backward()
        grads.append(
            (
                out.detach(),
                supernet.alpha("op").grad.clone(),
                supernet.model.op.candidate("a").weight.grad.clone(),
            )
        )
    for a, b in zip(*grads, strict=False):
        torch.testing.assert_close(a, b)
