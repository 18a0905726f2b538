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


# Every unary function against torch's own (the reference the split into families must keep).
REFERENCE = {
    "identity": lambda x: x,
    "neg": torch.neg,
    "abs": torch.abs,
    "square": torch.square,
    "cube": lambda x: x**3,
    "sqrt": torch.sqrt,
    "mul_beta": lambda x: x,
    "add_beta": lambda x: x + 1,
    "log_abs": lambda x: torch.log(torch.abs(x) + 1e-7),
    "exp": torch.exp,
    "sin": torch.sin,
    "cos": torch.cos,
    "sinh": torch.sinh,
    "cosh": torch.cosh,
    "tanh": torch.tanh,
    "atan": torch.atan,
    "max0": torch.relu,
    "min0": lambda x: -torch.relu(-x),
    "sigmoid": torch.sigmoid,
    "softplus": torch.nn.functional.softplus,
    "exp_neg_square": lambda x: torch.exp(-(x**2)),
    "erf": torch.erf,
}


@pytest.mark.parametrize("kind", UNARY_OPS)
def test_every_unary_function_eager_and_scripted(kind):
    expected = REFERENCE[kind](X)
    got, scripted = Unary(kind)(X), torch.jit.script(Unary(kind))(X)
    assert torch.allclose(got, expected, equal_nan=True)
    assert torch.allclose(scripted, expected, equal_nan=True)


def test_the_reference_names_every_unary_function():
    assert sorted(REFERENCE) == sorted(UNARY_OPS)
