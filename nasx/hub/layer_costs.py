"""Parameters and MACs of the layers the mobile hub spaces are made of, from formulas.

Shared by the ``analytic_cost`` methods of :class:`~nasx.hub.mnasnet.MnasNet`,
:class:`~nasx.hub.proxylessnas.ProxylessNAS` and :class:`~nasx.hub.mobilenetv3.MobileNetV3Space`,
which price an arch without building its model. MACs count what :func:`nasx.profiler.count_macs`
counts: convolutions and linear layers (no biases, norms, activations, pooling or gates). Each
function returns ``(params, MACs)``; a convolution's takes its output size.

    >>> conv(3, 32, 3, 112, 112)                # stem: 3*32*9 weights, 32*112*112 outputs * 27
    (864, 10838016)
    >>> # expansion 16*48 + 2*48, 48*64*16; depthwise 48*9 + 2*48, 48*16*9; projection 48*24 + 2*24, 24*16*48
    >>> inverted_residual(16, 48, 24, 3, 2, 8, 8, expand=True, squeeze=0)
    (2592, 74496, 4, 4)
"""

from __future__ import annotations

import functools

Cost = tuple[int, int]
"""``(params, MACs)``."""


def input_size(input_shape: tuple[int, ...], space: str) -> tuple[int, int]:
    """``(H, W)`` of a ``(3, H, W)`` input shape; an error names ``space`` and the shape otherwise.

    >>> input_size((3, 33, 50), "MnasNet")
    (33, 50)
    """
    if len(input_shape) != 3 or input_shape[0] != 3:
        raise ValueError(f"{space} takes (3, H, W) inputs, got {tuple(input_shape)}")
    return int(input_shape[1]), int(input_shape[2])


def conv_out(size: int, kernel: int, stride: int) -> int:
    """Output size of a same-padded (``kernel // 2``) convolution.

    >>> conv_out(33, 3, 2), conv_out(50, 5, 2), conv_out(7, 3, 1)
    (17, 25, 7)
    """
    return (size + 2 * (kernel // 2) - kernel) // stride + 1


def conv(
    c_in: int, c_out: int, kernel: int, h_out: int, w_out: int, groups: int = 1, bias: bool = False
) -> Cost:
    """A ``kernel x kernel`` convolution with ``h_out x w_out`` outputs.

    >>> conv(8, 8, 5, 4, 4, groups=8)        # depthwise: 8*25 weights, 8*16 outputs * 25
    (200, 3200)
    """
    per_output = c_in // groups * kernel * kernel
    return c_out * per_output + (c_out if bias else 0), c_out * h_out * w_out * per_output


def conv_bn(c_in: int, c_out: int, kernel: int, h_out: int, w_out: int, groups: int = 1) -> Cost:
    """A convolution without bias and its BatchNorm (weight and bias: ``2 * c_out``).

    >>> conv_bn(16, 24, 1, 4, 4)
    (432, 6144)
    """
    params, macs = conv(c_in, c_out, kernel, h_out, w_out, groups)
    return params + batch_norm(c_out), macs


def batch_norm(channels: int) -> int:
    """Parameters of an affine BatchNorm (running statistics are buffers, not counted).

    >>> batch_norm(32)
    64
    """
    return 2 * channels


def linear(c_in: int, c_out: int) -> Cost:
    """A linear layer with bias (a 1x1 convolution with bias on a pooled vector is the same).

    >>> linear(1280, 1000)
    (1281000, 1280000)
    """
    return c_in * c_out + c_out, c_in * c_out


def squeeze_excite(channels: int, squeeze: int) -> Cost:
    """An SE gate: two biased 1x1 convolutions ``channels -> squeeze -> channels`` on the pooled
    ``[channels, 1, 1]`` vector (the pooling, ReLU and sigmoid or hard-sigmoid cost no MACs).

    >>> squeeze_excite(72, 24)
    (3552, 3456)
    """
    p1, m1 = linear(channels, squeeze)
    p2, m2 = linear(squeeze, channels)
    return p1 + p2, m1 + m2


@functools.lru_cache(maxsize=65536)
def inverted_residual(
    c_in: int,
    mid: int,
    c_out: int,
    kernel: int,
    stride: int,
    h: int,
    w: int,
    expand: bool,
    squeeze: int,
) -> tuple[int, int, int, int]:
    """``(params, MACs, H', W')`` of an inverted residual on an ``h x w`` input: a 1x1 expansion to
    ``mid`` channels with BN (when ``expand``), a ``kernel`` depthwise conv with BN, an SE gate
    squeezing to ``squeeze`` channels (none when 0), a 1x1 projection with BN. The residual and
    the activations cost nothing. Cached by its arguments.

    >>> inverted_residual(16, 16, 16, 3, 1, 8, 8, expand=False, squeeze=8)   # no expansion, SE
    (744, 25856, 8, 8)
    """
    ho, wo = conv_out(h, kernel, stride), conv_out(w, kernel, stride)
    params = macs = 0
    if expand:
        params, macs = conv_bn(c_in, mid, 1, h, w)
    parts = [conv_bn(mid, mid, kernel, ho, wo, groups=mid), conv_bn(mid, c_out, 1, ho, wo)]
    if squeeze:
        parts.append(squeeze_excite(mid, squeeze))
    for p, m in parts:
        params, macs = params + p, macs + m
    return params, macs, ho, wo
