"""Blocks of the mobile spaces (ProxylessNAS, MobileNetV3): the inverted residual whose widths,
kernel, expansion, SE gate and activation may each be a choice.

Every argument is a plain value or, in a space's search form, a choice (or a value derived from
choices): the layers are Mutable layers and ValueSwitches, so a fixed model is made of plain
torch layers and a one-shot supernet shares one sliced weight across the values.

    >>> import torch
    >>> block = InvertedResidual(16, 16, 1, expand=4, kernel=5, se=True, act='hswish')
    >>> block(torch.randn(1, 16, 8, 8)).shape, block.residual
    (torch.Size([1, 16, 8, 8]), True)
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import torch
import torch.nn as nn

from ..space import Categorical, MutableBatchNorm2d, MutableConv2d, current_arch, ensure_frozen
from ..space.derived import derived
from ..space.value_switch import ValueSwitch

ACTIVATIONS: dict[str, Callable[[], nn.Module]] = {
    "relu": nn.ReLU,
    "relu6": nn.ReLU6,
    "hswish": nn.Hardswish,
}
"""Activation name -> constructor. Not in place: a choice of activation runs several candidates on
one input in a one-shot supernet (a mixture, or Proxyless's alternatives)."""


def make_divisible(v: float, divisor: int = 8) -> int:
    """``v`` rounded to the nearest multiple of ``divisor``, never down by more than 10% (the
    rule of the TF MobileNet code that MobileNetV2/V3 widths follow).

    Example:
        >>> make_divisible(24 * 3.67), make_divisible(72 // 4), make_divisible(10)
        (88, 24, 16)
    """
    new = max(divisor, int(v + divisor / 2) // divisor * divisor)
    return new + divisor if new < 0.9 * v else new


def switch(value: Any, make: dict[Any, Callable[[], nn.Module]]) -> nn.Module:
    """The module for ``value``: a ValueSwitch over every candidate in the search form (``value``
    a choice), else only the chosen candidate is built."""
    if isinstance(value, Categorical) and current_arch() is None:
        return ValueSwitch(value, {v: make[v]() for v in value.values})
    return make[ensure_frozen(value, strict=False)]()


def activation(name: Any) -> nn.Module:
    """An activation by name (a choice of names in the search form)."""
    return switch(name, {n: ACTIVATIONS[n] for n in _values(name)})


def _values(v: Any) -> list[Any]:
    return list(v.values) if isinstance(v, Categorical) else [v]


def conv_bn(c_in: Any, c_out: Any, kernel: Any = 1, stride: int = 1, groups: Any = 1) -> list:
    """``[conv kxk (same padding, no bias), BN]``; arguments may be choices."""
    pad = derived(_half, kernel)
    conv = MutableConv2d(c_in, c_out, kernel, stride, pad, groups=groups, bias=False)
    return [conv, MutableBatchNorm2d(c_out)]


def _half(k: int) -> int:
    return k // 2


class SqueezeExcite(nn.Module):
    """MobileNetV3's SE gate: ``x * hardsigmoid(W2 relu(W1 avgpool(x)))`` (biases on both).

    Example:
        >>> SqueezeExcite(16, 8)(torch.randn(1, 16, 4, 4)).shape
        torch.Size([1, 16, 4, 4])
    """

    def __init__(self, channels: Any, squeeze: Any):
        super().__init__()
        self.fc1 = MutableConv2d(channels, squeeze, 1)
        self.fc2 = MutableConv2d(squeeze, channels, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        s = x.mean((2, 3), keepdim=True)  # [N, C, 1, 1]
        return x * nn.functional.hardsigmoid(self.fc2(torch.relu(self.fc1(s))))


class InvertedResidual(nn.Module):
    """1x1 expansion to ``mid`` channels (none when the ratio is 1), kxk depthwise, optional SE,
    1x1 projection; a residual when ``stride == 1`` and the widths are the same value.

    Args:
        c_in, c_out: widths (ints, or choices; ``c_in is c_out`` for a same-width layer).
        stride: 1 or 2.
        expand: expansion ratio (a number or a choice of numbers).
        kernel: depthwise kernel size (an int or a choice).
        se: SE gate (bool or a choice of bools), squeezing ``mid`` to ``make_divisible(mid // 4)``.
        act: activation name from :data:`ACTIVATIONS` (or a choice of names).
        divisible: round ``c_in * expand`` with :func:`make_divisible` (MobileNetV3) rather than
            to the nearest int (ProxylessNAS).
    """

    def __init__(
        self,
        c_in: Any,
        c_out: Any,
        stride: int,
        expand: Any,
        kernel: Any,
        se: Any = False,
        act: Any = "relu6",
        divisible: bool = False,
    ):
        super().__init__()
        mid = derived(_expanded_divisible if divisible else _expanded, c_in, expand)

        @functools.cache  # every ratio but 1 shares one expansion conv (a slice of it)
        def expansion() -> nn.Module:
            return nn.Sequential(*conv_bn(c_in, mid), activation(act))

        self.expand = switch(
            expand, {e: (nn.Identity if e == 1 else expansion) for e in _values(expand)}
        )
        self.depthwise = nn.Sequential(
            *conv_bn(mid, mid, kernel, stride, groups=mid), activation(act)
        )
        self.se = switch(
            se,
            {
                False: nn.Identity,
                True: lambda: SqueezeExcite(mid, derived(_squeeze, mid)),
            },
        )
        self.project = nn.Sequential(*conv_bn(mid, c_out))
        same = c_in is c_out or (isinstance(c_in, int) and isinstance(c_out, int) and c_in == c_out)
        self.residual = stride == 1 and same

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.project(self.se(self.depthwise(self.expand(x))))
        return x + out if self.residual else out


def _expanded(c: int, e: float) -> int:
    return int(round(c * e))


def _expanded_divisible(c: int, e: float) -> int:
    return make_divisible(c * e)


def _squeeze(mid: int) -> int:
    return make_divisible(mid // 4)
