"""AutoActivation: labels, sizes, hand-computed functions, TorchScript of the rebuilt model."""

import pytest
import torch

from nasx.space import ModelSpace, model_context, search_space
from nasx.space.auto_activation import BINARY_OPS, UNARY_OPS, AutoActivation, Binary, Unary

X = torch.tensor([-1.5, -0.2, 0.3, 2.0])


@pytest.mark.parametrize(
    "kind, expected",
    [
        ("identity", X),
        ("neg", -X),
        ("square", X**2),
        ("cube", X**3),
        ("max0", torch.relu(X)),
        ("min0", -torch.relu(-X)),
        ("softplus", torch.nn.functional.softplus(X)),
        ("mul_beta", X),  # beta starts at 1
        ("add_beta", X + 1),
    ],
)
def test_unary_functions(kind, expected):
    assert torch.allclose(Unary(kind)(X), expected)


@pytest.mark.parametrize(
    "kind, expected",
    [
        ("add", X + 2),
        ("sub", X - 2),
        ("max", torch.clamp(X, min=2)),
        ("sigmoid_mul", torch.sigmoid(X) * 2),
        ("beta_mix", X),  # beta * a + (1 - beta) * b with beta = 1
    ],
)
def test_binary_functions(kind, expected):
    assert torch.allclose(Binary(kind)(X, torch.full_like(X, 2.0)), expected)


def test_labels_sizes_and_unknown_functions():
    class Net(ModelSpace):
        def __init__(self):
            super().__init__()
            self.act = AutoActivation(unit_num=2, label="act")

    ss = search_space(Net())
    assert list(ss) == [
        "act/unary_0",
        "act/unary_1",
        "act/unary_2",
        "act/binary_0",
        "act/binary_1",
    ]
    assert [len(c) for c in ss.values()] == [22, 22, 22, 10, 10]
    with pytest.raises(ValueError, match="unknown unary"):
        Unary("swish")
    with pytest.raises(ValueError, match="unit_num"):
        AutoActivation(unit_num=0)


def test_rebuilt_activation_computes_and_scripts():
    arch = {
        "a/unary_0": UNARY_OPS.index("square"),
        "a/unary_1": UNARY_OPS.index("tanh"),
        "a/binary_0": BINARY_OPS.index("add"),
    }
    with model_context(arch):
        f = AutoActivation(label="a")
    assert torch.allclose(f(X), X**2 + torch.tanh(X))
    scripted = torch.jit.script(f)
    assert torch.allclose(scripted(X), X**2 + torch.tanh(X))
