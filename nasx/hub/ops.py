"""Shared operations of the cell-based hub spaces: the ``OPS`` name -> constructor table.

Every entry is ``OPS[name](channels, stride, affine) -> nn.Module`` mapping ``[N, C, H, W]`` to
``[N, C, H/stride, W/stride]``. The names are the ones DARTS, NDS and NNI use, so genotypes and
archs written for those code bases name the same operations here.

    >>> import torch
    >>> op = OPS['sep_conv_3x3'](8, 2, True)
    >>> op(torch.randn(2, 8, 16, 16)).shape
    torch.Size([2, 8, 8, 8])
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn as nn


class ReLUConvBN(nn.Sequential):
    """ReLU -> Conv2d (no bias) -> BatchNorm2d: the pre-activation conv of the DARTS family.

    Example:
        >>> ReLUConvBN(4, 8, 1, 1, 0)(torch.randn(1, 4, 5, 5)).shape
        torch.Size([1, 8, 5, 5])
    """

    def __init__(
        self,
        c_in: int,
        c_out: int,
        kernel_size: int | tuple[int, int],
        stride: int | tuple[int, int],
        padding: int | tuple[int, int],
        affine: bool = True,
    ):
        super().__init__(
            nn.ReLU(inplace=False),
            nn.Conv2d(c_in, c_out, kernel_size, stride=stride, padding=padding, bias=False),
            nn.BatchNorm2d(c_out, affine=affine),
        )


class DilConv(nn.Sequential):
    """ReLU -> depthwise (dilated) conv -> pointwise conv -> BN: DARTS's ``dil_conv_*``.

    Example:
        >>> DilConv(4, 4, 3, 1, 2, 2)(torch.randn(1, 4, 6, 6)).shape
        torch.Size([1, 4, 6, 6])
    """

    def __init__(
        self,
        c_in: int,
        c_out: int,
        kernel_size: int,
        stride: int,
        padding: int,
        dilation: int,
        affine: bool = True,
    ):
        super().__init__(
            nn.ReLU(inplace=False),
            nn.Conv2d(
                c_in,
                c_in,
                kernel_size,
                stride=stride,
                padding=padding,
                dilation=dilation,
                groups=c_in,
                bias=False,
            ),
            nn.Conv2d(c_in, c_out, 1, bias=False),
            nn.BatchNorm2d(c_out, affine=affine),
        )


class SepConv(nn.Sequential):
    """Two stacked :class:`DilConv` layers (dilation ``dilation``), the first carrying the stride.

    With ``dilation=1`` this is DARTS's ``sep_conv_*``; with 2 it is NDS's ``dil_sep_conv_3x3``.

    Example:
        >>> SepConv(4, 4, 5, 2, 2)(torch.randn(1, 4, 8, 8)).shape
        torch.Size([1, 4, 4, 4])
    """

    def __init__(
        self,
        c_in: int,
        c_out: int,
        kernel_size: int,
        stride: int,
        padding: int,
        affine: bool = True,
        dilation: int = 1,
    ):
        # One flat Sequential (not two DilConvs) so state-dict keys match DARTS/NNI checkpoints.
        super().__init__(
            *DilConv(c_in, c_in, kernel_size, stride, padding, dilation, affine),
            *DilConv(c_in, c_out, kernel_size, 1, padding, dilation, affine),
        )


class FactorizedReduce(nn.Module):
    """Halve H and W with two 1x1 stride-2 convs, one shifted by a pixel, concatenated.

    ``[N, c_in, H, W] -> [N, c_out, ceil(H/2), ceil(W/2)]``; ``c_out`` must be even.

    Example:
        >>> FactorizedReduce(4, 8)(torch.randn(1, 4, 7, 7)).shape
        torch.Size([1, 8, 4, 4])
    """

    def __init__(self, c_in: int, c_out: int, affine: bool = True):
        super().__init__()
        if c_out % 2:
            raise ValueError(
                f"FactorizedReduce needs an even number of output channels, got {c_out}"
            )
        self.relu = nn.ReLU(inplace=False)
        self.conv_1 = nn.Conv2d(c_in, c_out // 2, 1, stride=2, bias=False)
        self.conv_2 = nn.Conv2d(c_in, c_out // 2, 1, stride=2, bias=False)
        self.bn = nn.BatchNorm2d(c_out, affine=affine)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.relu(x)
        # The second conv sees the input shifted by one pixel (zero-padded at the far edge) so the
        # two halves sample complementary positions; both give ceil(H/2) x ceil(W/2).
        shifted = nn.functional.pad(x, (0, 1, 0, 1))[:, :, 1:, 1:]
        return self.bn(torch.cat([self.conv_1(x), self.conv_2(shifted)], dim=1))


class Zero(nn.Module):
    """The ``none`` operation: zeros of the output shape (kept for NAS-Bench-201 and one-shot use).

    Example:
        >>> Zero(2)(torch.ones(1, 3, 4, 4)).abs().sum().item(), Zero(2)(torch.ones(1, 3, 4, 4)).shape
        (0.0, torch.Size([1, 3, 2, 2]))
    """

    def __init__(self, stride: int = 1):
        super().__init__()
        self.stride = stride

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x[:, :, :: self.stride, :: self.stride].mul(0.0)


class DropPath(nn.Module):
    """Zero a whole sample's branch with probability ``drop_prob`` in training (FractalNet/DARTS).

    Kept samples are scaled by ``1 / (1 - drop_prob)`` so the expectation is unchanged.

    Example:
        >>> DropPath(0.5).eval()(torch.ones(2, 3)).sum().item()
        6.0
    """

    def __init__(self, drop_prob: float = 0.0):
        super().__init__()
        self.drop_prob = drop_prob

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.training or self.drop_prob <= 0.0:
            return x
        keep = 1.0 - self.drop_prob
        # mask: [N, 1, 1, 1], one draw per sample
        mask = torch.empty(
            (x.shape[0],) + (1,) * (x.dim() - 1), device=x.device, dtype=x.dtype
        ).bernoulli_(keep)
        return x / keep * mask

    def extra_repr(self) -> str:
        return f"drop_prob={self.drop_prob}"


def _pool(kind: str, k: int) -> Callable[[int, int, bool], nn.Module]:
    def make(c: int, stride: int, affine: bool) -> nn.Module:
        if kind == "avg":
            return nn.AvgPool2d(k, stride=stride, padding=k // 2, count_include_pad=False)
        return nn.MaxPool2d(k, stride=stride, padding=k // 2)

    return make


def _conv(k: int) -> Callable[[int, int, bool], nn.Module]:
    return lambda c, stride, affine: ReLUConvBN(c, c, k, stride, k // 2, affine)


def _factorized_conv(k: int) -> Callable[[int, int, bool], nn.Module]:
    """``conv_kx1_1xk``: a 1xk then a kx1 conv (stride split between them), as in NASNet."""

    def make(c: int, stride: int, affine: bool) -> nn.Module:
        return nn.Sequential(
            nn.ReLU(inplace=False),
            nn.Conv2d(c, c, (1, k), stride=(1, stride), padding=(0, k // 2), bias=False),
            nn.Conv2d(c, c, (k, 1), stride=(stride, 1), padding=(k // 2, 0), bias=False),
            nn.BatchNorm2d(c, affine=affine),
        )

    return make


def _skip(c: int, stride: int, affine: bool) -> nn.Module:
    return nn.Identity() if stride == 1 else FactorizedReduce(c, c, affine)


OPS: dict[str, Callable[[int, int, bool], nn.Module]] = {
    "none": lambda c, stride, affine: Zero(stride),
    "skip_connect": _skip,
    "avg_pool_2x2": lambda c, stride, affine: nn.AvgPool2d(
        2, stride=stride, padding=0, count_include_pad=False
    ),
    "avg_pool_3x3": _pool("avg", 3),
    "avg_pool_5x5": _pool("avg", 5),
    "max_pool_2x2": lambda c, stride, affine: nn.MaxPool2d(2, stride=stride, padding=0),
    "max_pool_3x3": _pool("max", 3),
    "max_pool_5x5": _pool("max", 5),
    "max_pool_7x7": _pool("max", 7),
    "conv_1x1": _conv(1),
    "conv_3x3": _conv(3),
    "conv_3x1_1x3": _factorized_conv(3),
    "conv_7x1_1x7": _factorized_conv(7),
    "sep_conv_3x3": lambda c, stride, affine: SepConv(c, c, 3, stride, 1, affine),
    "sep_conv_5x5": lambda c, stride, affine: SepConv(c, c, 5, stride, 2, affine),
    "sep_conv_7x7": lambda c, stride, affine: SepConv(c, c, 7, stride, 3, affine),
    "dil_conv_3x3": lambda c, stride, affine: DilConv(c, c, 3, stride, 2, 2, affine),
    "dil_conv_5x5": lambda c, stride, affine: DilConv(c, c, 5, stride, 4, 2, affine),
    "dil_sep_conv_3x3": lambda c, stride, affine: SepConv(c, c, 3, stride, 2, affine, dilation=2),
}
"""Operation name -> ``f(channels, stride, affine) -> nn.Module``."""


def make_op(name: str, channels: int, stride: int = 1, affine: bool = True) -> nn.Module:
    """Build operation ``name`` from :data:`OPS`, with an error listing the known names.

    Example:
        >>> make_op('skip_connect', 8, 2)(torch.randn(1, 8, 6, 6)).shape
        torch.Size([1, 8, 3, 3])
    """
    if name not in OPS:
        raise KeyError(f"unknown operation {name!r}; known operations: {sorted(OPS)}")
    return OPS[name](channels, stride, affine)
