"""AutoActivation: search an activation function (Ramachandran et al., "Searching for
Activation Functions", 2017), NNI's ``AutoActivation``.

A core unit combines two unary functions of the input with a binary function:
``out = binary_i(out, unary_{i+1}(x))``, starting from ``out = unary_0(x)``. Every unary and
binary function is a :class:`~nasx.space.LayerChoice` (values are indices into
:data:`UNARY_OPS` / :data:`BINARY_OPS`, NNI's order), labelled ``<label>/unary_<i>`` and
``<label>/binary_<i>``. Swish is ``unary_0 = identity``, ``unary_1 = sigmoid``,
``binary_0 = mul``:

    >>> import torch
    >>> from nasx.space import model_context
    >>> swish = {'act/unary_0': UNARY_OPS.index('identity'), 'act/unary_1': UNARY_OPS.index('sigmoid'),
    ...          'act/binary_0': BINARY_OPS.index('mul')}
    >>> with model_context(swish):
    ...     f = AutoActivation(label='act')
    >>> x = torch.linspace(-2, 2, 5)
    >>> torch.allclose(f(x), x * torch.sigmoid(x))
    True
"""

from __future__ import annotations

import torch
import torch.nn as nn

from .labels import current_path, label_scope
from .layer_choice import LayerChoice

UNARY_OPS = [
    "identity", "neg", "abs", "square", "cube", "sqrt", "mul_beta", "add_beta", "log_abs", "exp",
    "sin", "cos", "sinh", "cosh", "tanh", "atan", "max0", "min0", "sigmoid", "softplus",
    "exp_neg_square", "erf",
]  # fmt: skip
BINARY_OPS = [
    "add", "mul", "sub", "div", "max", "min", "sigmoid_mul", "exp_neg_beta_square",
    "exp_neg_beta_abs", "beta_mix",
]  # fmt: skip


class Unary(nn.Module):
    """One unary function of :data:`UNARY_OPS` (``mul_beta`` and ``add_beta`` learn ``beta``)."""

    def __init__(self, kind: str):
        super().__init__()
        if kind not in UNARY_OPS:
            raise ValueError(f"unknown unary function {kind!r}; allowed: {UNARY_OPS}")
        self.kind = kind
        self.beta = nn.Parameter(torch.tensor(1.0)) if kind in ("mul_beta", "add_beta") else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        beta = self.beta
        if beta is not None:  # mul_beta or add_beta
            return x * beta if self.kind == "mul_beta" else x + beta
        return _unary(self.kind, x)

    def extra_repr(self) -> str:
        return repr(self.kind)


# The functions without a parameter, by family; free functions so that TorchScript compiles
# them with the module that calls them.
def _unary(kind: str, x: torch.Tensor) -> torch.Tensor:
    if kind in ["sin", "cos", "sinh", "cosh", "tanh", "atan"]:
        return _trigonometric(kind, x)
    if kind in ["max0", "min0", "sigmoid", "softplus", "exp_neg_square", "erf"]:
        return _squashing(kind, x)
    return _algebraic(kind, x)


def _algebraic(kind: str, x: torch.Tensor) -> torch.Tensor:
    if kind == "neg":
        return -x
    if kind == "abs":
        return torch.abs(x)
    if kind == "square":
        return torch.square(x)
    if kind == "cube":
        return torch.pow(x, 3)
    if kind == "sqrt":
        return torch.sqrt(x)
    if kind == "log_abs":
        return torch.log(torch.abs(x) + 1e-7)
    if kind == "exp":
        return torch.exp(x)
    return x  # identity


def _trigonometric(kind: str, x: torch.Tensor) -> torch.Tensor:
    if kind == "sin":
        return torch.sin(x)
    if kind == "cos":
        return torch.cos(x)
    if kind == "sinh":
        return torch.sinh(x)
    if kind == "cosh":
        return torch.cosh(x)
    if kind == "tanh":
        return torch.tanh(x)
    return torch.atan(x)


def _squashing(kind: str, x: torch.Tensor) -> torch.Tensor:
    if kind == "max0":
        return torch.clamp(x, min=0.0)
    if kind == "min0":
        return torch.clamp(x, max=0.0)
    if kind == "sigmoid":
        return torch.sigmoid(x)
    if kind == "softplus":
        return torch.log(1 + torch.exp(x))
    if kind == "exp_neg_square":
        return torch.exp(-torch.square(x))
    return torch.erf(x)


class Binary(nn.Module):
    """One binary function of :data:`BINARY_OPS`, of ``(a, b)``; some learn ``beta``."""

    def __init__(self, kind: str):
        super().__init__()
        if kind not in BINARY_OPS:
            raise ValueError(f"unknown binary function {kind!r}; allowed: {BINARY_OPS}")
        self.kind = kind
        learns = kind in ("exp_neg_beta_square", "exp_neg_beta_abs", "beta_mix")
        self.beta = nn.Parameter(torch.tensor(1.0)) if learns else None

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        k, beta = self.kind, self.beta
        if beta is not None:
            if k == "exp_neg_beta_square":
                return torch.exp(-beta * torch.square(a - b))
            if k == "exp_neg_beta_abs":
                return torch.exp(-beta * torch.abs(a - b))
            return beta * a + (1 - beta) * b  # beta_mix
        if k == "mul":
            return a * b
        if k == "sub":
            return a - b
        if k == "div":
            return a / (b + 1e-7)
        if k == "max":
            return torch.maximum(a, b)
        if k == "min":
            return torch.minimum(a, b)
        if k == "sigmoid_mul":
            return torch.sigmoid(a) * b
        return a + b  # add

    def extra_repr(self) -> str:
        return repr(self.kind)


class AutoActivation(nn.Module):
    """A searched activation of ``unit_num`` core units (see the module docstring).

    Args:
        unit_num: the number of core units (each adds one unary and one binary choice).
        label: the scope of its labels (``None``: the enclosing scope's next number, as NNI's
            auto labels); ``.label`` is the scope's full name, as NNI's.

    Example:
        >>> from nasx.space import search_space
        >>> {label: len(c) for label, c in search_space(AutoActivation(label='act')).items()}
        {'act/unary_0': 22, 'act/unary_1': 22, 'act/binary_0': 10}
        >>> AutoActivation(label='act').label
        'act'
    """

    def __init__(self, unit_num: int = 1, label: str | None = None):
        super().__init__()
        if not isinstance(unit_num, int) or unit_num < 1:
            raise ValueError(f"AutoActivation unit_num must be an int >= 1, got {unit_num!r}")
        with label_scope(label) if label is not None else label_scope():
            self.label = "/".join(current_path())
            self.first_unary = LayerChoice([Unary(k) for k in UNARY_OPS], label="unary_0")
            self.unaries = nn.ModuleList(
                LayerChoice([Unary(k) for k in UNARY_OPS], label=f"unary_{i + 1}")
                for i in range(unit_num)
            )
            self.binaries = nn.ModuleList(
                LayerChoice([Binary(k) for k in BINARY_OPS], label=f"binary_{i}")
                for i in range(unit_num)
            )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = self.first_unary(x)
        for unary, binary in zip(self.unaries, self.binaries):
            out = binary(out, unary(x))
        return out
