"""The MnasNet space (Tan et al., CVPR 2019): a factorized hierarchical space of seven blocks.

The network is a fixed 3x3 stride-2 stem (32 channels), seven searched blocks with fixed strides
(1, 2, 2, 2, 1, 2, 1), and a fixed head (1x1 conv to 1280, global pooling, linear). Each block ``b``
repeats one layer type, chosen per block (labels ``block<b>/...``):

- ``repeats``: how many layers (MobileNetV2's count, -1 or +1; at least 1);
- ``conv``: ``'mbconv'`` (inverted bottleneck: 1x1 expand, kxk depthwise, 1x1 project; with
  ``expand=1`` it is the depthwise-separable conv) or ``'conv'`` (a regular kxk conv);
- ``expand``: expansion ratio of ``mbconv`` (1, 3 or 6; unused by ``'conv'``);
- ``kernel``: 3 or 5;
- ``se``: squeeze-and-excitation ratio, 0 (none) or 0.25 (of the block's input channels);
- ``skip``: ``'identity'`` (residual when shapes allow: stride 1 and same channels) or ``'none'``;
- ``filters``: output channels, from :data:`FILTER_CHOICES`.

The paper's pooling skip op is not offered. MnasNet-A1 (:data:`MNASNET_A1`) and MobileNetV2
(:data:`MOBILENET_V2`, with ReLU where the original has ReLU6) are archs of this space.

    >>> from nasx.space import search_space
    >>> space = search_space(MnasNet())
    >>> len(space), space['block3/filters'].values
    (49, [24, 32, 40])
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import torch
import torch.nn as nn

from ..space import (
    Categorical,
    ModelSpace,
    MutableBatchNorm2d,
    MutableConv2d,
    Repeat,
    current_arch,
    ensure_frozen,
)
from ..space.derived import derived
from ..space.value_switch import ValueSwitch
from .layer_costs import (
    conv_bn,
    conv_out,
    input_size,
    inverted_residual,
    linear,
    squeeze_excite,
)

STRIDES = (1, 2, 2, 2, 1, 2, 1)
BASE_REPEATS = (1, 2, 3, 4, 3, 3, 1)  # MobileNetV2's layers per block, the centre of each choice
FILTER_CHOICES = (
    (8, 16, 24),
    (16, 24, 32),
    (24, 32, 40),
    (48, 64, 80),
    (72, 96, 112, 120),
    (120, 160, 200),
    (240, 320, 400),
)
"""Output channels per block: MobileNetV2's widths times about 0.75/1/1.25 (multiples of 8), and
MnasNet-A1's 112 for block 5."""
BLOCK_MENU: dict[str, tuple] = {
    "conv": ("mbconv", "conv"),
    "expand": (6, 3, 1),
    "kernel": (3, 5),
    "se": (0.0, 0.25),
    "skip": ("identity", "none"),
}
"""The per-block layer choices (labels ``block<b>/<name>``), in label order; each block also
chooses its ``filters`` (:data:`FILTER_CHOICES`) and ``repeats`` (around :data:`BASE_REPEATS`)."""
STEM_CHANNELS = 32
HEAD_CHANNELS = 1280

# A width or a size: a plain int, or (in the search form) a choice or a value derived from choices,
# which the Mutable layers take as they are and a one-shot supernet slices a shared weight for.
Size = Any


def _bn_act(c: Size, act: bool = True) -> list[nn.Module]:
    bn = MutableBatchNorm2d(c)
    return [bn, nn.ReLU(inplace=True)] if act else [bn]


def _switch(value: Any, make: dict[Any, Callable[[], nn.Module]]) -> nn.Module:
    """The module for ``value``: every candidate in a ValueSwitch in the search form (``value``
    a choice), else only the chosen one is built."""
    if isinstance(value, Categorical) and current_arch() is None:
        return ValueSwitch(value, {v: make[v]() for v in value.values})
    return make[ensure_frozen(value, strict=False)]()


def _half(k: int) -> int:
    return k // 2


def _times(c: int, e: float) -> int:
    return int(c * e)


def _se_width(c: int, ratio: float) -> int:
    # TF MnasNet sizes the SE bottleneck from the block's input channels.
    return max(1, int(c * ratio))


class SqueezeExcite(nn.Module):
    """Channel gate: ``x * sigmoid(W2 relu(W1 avgpool(x)))`` with ``reduced`` hidden channels.

    Example:
        >>> import torch
        >>> SqueezeExcite(8, 2)(torch.randn(1, 8, 4, 4)).shape
        torch.Size([1, 8, 4, 4])
    """

    def __init__(self, channels: Size, reduced: Size):
        super().__init__()
        self.reduce = MutableConv2d(channels, reduced, 1)
        self.expand = MutableConv2d(reduced, channels, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        s = x.mean((2, 3), keepdim=True)  # [N, C, 1, 1]
        return x * torch.sigmoid(self.expand(torch.relu(self.reduce(s))))


class AddInput(nn.Module):
    """The residual connection: ``(x, out) -> x + out``."""

    def forward(self, x: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
        return x + out


class DropInput(nn.Module):
    """No residual connection: ``(x, out) -> out``."""

    def forward(self, x: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
        return out


def _se(channels: Size, c_in: Size, se: Any) -> nn.Module:
    return _switch(
        se,
        {
            0.0: nn.Identity,
            0.25: lambda: SqueezeExcite(channels, derived(_se_width, c_in, 0.25)),
        },
    )


def _mbconv(c_in: Size, c_out: Size, stride: int, expand: Any, kernel: Any, se: Any) -> nn.Module:
    """1x1 expansion (none for ``expand == 1``), kxk depthwise, SE, 1x1 projection."""
    mid = derived(_times, c_in, expand)

    @functools.cache  # expand 6 and 3 share one expansion conv (a slice for 3)
    def expansion() -> nn.Module:
        return nn.Sequential(MutableConv2d(c_in, mid, 1, bias=False), *_bn_act(mid))

    return nn.Sequential(
        _switch(expand, {6: expansion, 3: expansion, 1: nn.Identity}),
        MutableConv2d(mid, mid, kernel, stride, derived(_half, kernel), groups=mid, bias=False),
        *_bn_act(mid),
        _se(mid, c_in, se),
        MutableConv2d(mid, c_out, 1, bias=False),
        *_bn_act(c_out, act=False),
    )


def _regular(c_in: Size, c_out: Size, stride: int, kernel: Any, se: Any) -> nn.Module:
    """A kxk convolution, then SE."""
    return nn.Sequential(
        MutableConv2d(c_in, c_out, kernel, stride, derived(_half, kernel), bias=False),
        *_bn_act(c_out),
        _se(c_out, c_in, se),
    )


class MnasLayer(nn.Module):
    """One layer of a block: ``[N, c_in, H, W] -> [N, c_out, H/stride, W/stride]``.

    Arguments are plain values, or (in the search form) the block's choices: ``layers`` is then
    a ValueSwitch over ``conv``, with switches over ``expand`` and ``se`` inside, and convolutions
    whose widths and kernel are choices, so that a one-shot supernet shares their weights.

    Example:
        >>> import torch
        >>> layer = MnasLayer(16, 16, 1, 'mbconv', 6, 5, 0.25, 'identity')
        >>> layer(torch.randn(1, 16, 8, 8)).shape, layer.residual
        (torch.Size([1, 16, 8, 8]), True)
    """

    def __init__(
        self,
        c_in: Size,
        c_out: Size,
        stride: int,
        conv: Any,
        expand: Any,
        kernel: Any,
        se: Any,
        skip: Any,
    ):
        super().__init__()
        if not isinstance(conv, Categorical) and conv not in ("mbconv", "conv"):
            raise ValueError(f"MnasLayer conv must be 'mbconv' or 'conv', got {conv!r}")
        self.layers = _switch(
            conv,
            {
                "mbconv": lambda: _mbconv(c_in, c_out, stride, expand, kernel, se),
                "conv": lambda: _regular(c_in, c_out, stride, kernel, se),
            },
        )
        # A residual needs stride 1 and the same width in and out: the same choice, or equal ints.
        same = c_in is c_out or (isinstance(c_in, int) and isinstance(c_out, int) and c_in == c_out)
        if stride == 1 and same:
            self.skip = _switch(skip, {"identity": AddInput, "none": DropInput})
        else:
            self.skip = DropInput()

    @property
    def residual(self) -> bool:
        """Whether the (fixed) layer adds its input to its output."""
        return isinstance(self.skip, AddInput)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.skip(x, self.layers(x))


class MnasNet(ModelSpace):
    """The MnasNet factorized hierarchical space (7 blocks x 7 per-block choices).

    Every choice sits in a module (switches, Mutable layers, Repeat), so one-shot strategies
    search the space with weights shared across widths, kernels and expansion ratios.

    Args:
        num_classes: classifier outputs (1000 for ImageNet).
        dropout: dropout before the classifier (0.2 in the paper).

    Example:
        >>> import torch
        >>> from nasx.space import model_context
        >>> with model_context(MNASNET_A1):
        ...     model = MnasNet(num_classes=10)
        >>> model(torch.randn(1, 3, 64, 64)).shape
        torch.Size([1, 10])
    """

    def __init__(self, num_classes: int = 1000, dropout: float = 0.2):
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(3, STEM_CHANNELS, 3, 2, 1, bias=False), *_bn_act(STEM_CHANNELS)
        )
        c_in: Size = STEM_CHANNELS
        blocks = []
        for b, stride in enumerate(STRIDES, start=1):
            conv, expand, kernel, se, skip = (
                Categorical(list(values), label=f"block{b}/{name}")
                for name, values in BLOCK_MENU.items()
            )
            c_out = Categorical(list(FILTER_CHOICES[b - 1]), label=f"block{b}/filters")
            base = BASE_REPEATS[b - 1]
            repeats = Categorical(
                list(range(max(1, base - 1), base + 2)), label=f"block{b}/repeats"
            )

            def make_layer(
                i: int, c_in=c_in, c_out=c_out, stride=stride, args=(conv, expand, kernel, se, skip)
            ):
                # the first layer changes resolution and width; the others keep them
                return MnasLayer(c_in if i == 0 else c_out, c_out, stride if i == 0 else 1, *args)

            blocks.append(Repeat(make_layer, repeats, label=f"block{b}/repeats"))
            c_in = c_out
        self.blocks = nn.Sequential(*blocks)
        self.head = nn.Sequential(
            MutableConv2d(c_in, HEAD_CHANNELS, 1, bias=False), *_bn_act(HEAD_CHANNELS)
        )
        self.dropout = nn.Dropout(dropout)
        self.classifier = nn.Linear(HEAD_CHANNELS, num_classes)

    @classmethod
    def load_searched_model(
        cls, name: str, pretrained: bool = False, download: bool = True, progress: bool = True
    ) -> nn.Module:
        """NNI's spelling of :func:`nasx.hub.load_searched_model`, limited to this space's models."""
        from .pretrained import searched_model_of

        return searched_model_of(cls, name, pretrained, download, progress)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.head(self.blocks(self.stem(x)))  # [N, 1280, H/32, W/32]
        return self.classifier(self.dropout(x.mean((2, 3))))

    def analytic_cost(self, arch: dict[str, Any], input_shape: tuple[int, ...]) -> tuple[int, int]:
        """``(params, MACs)`` of ``arch`` for one ``(3, H, W)`` input, from formulas, no model
        built: what :func:`nasx.hardware.cost.arch_cost` uses for this space (about 100x faster
        than building the model on the meta device; the tests check the two agree on sampled
        archs). MACs count conv and linear layers, as :func:`nasx.profiler.count_macs` does.

        >>> MnasNet().analytic_cost(MNASNET_A1, (3, 224, 224))    # 3.9 M, 312 M in the paper
        (3887038, 311579072)
        """
        h, w = input_size(input_shape, "MnasNet")
        h, w = conv_out(h, 3, 2), conv_out(w, 3, 2)
        params, macs = conv_bn(3, STEM_CHANNELS, 3, h, w)
        c_in = STEM_CHANNELS
        for b, stride in enumerate(STRIDES, start=1):
            c_out = arch[f"block{b}/filters"]
            layer = tuple(arch[f"block{b}/{name}"] for name in BLOCK_MENU)
            for i in range(arch[f"block{b}/repeats"]):
                p, m, h, w = _layer_cost(
                    c_in if i == 0 else c_out, c_out, stride if i == 0 else 1, h, w, *layer
                )
                params, macs = params + p, macs + m
            c_in = c_out
        head = conv_bn(c_in, HEAD_CHANNELS, 1, h, w)
        classifier = linear(HEAD_CHANNELS, self.classifier.out_features)
        return params + head[0] + classifier[0], macs + head[1] + classifier[1]


@functools.lru_cache(maxsize=65536)
def _layer_cost(
    c_in: int,
    c_out: int,
    stride: int,
    h: int,
    w: int,
    conv: str,
    expand: int,
    kernel: int,
    se: float,
    skip: str,
) -> tuple[int, int, int, int]:
    """``(params, MACs, H', W')`` of one :class:`MnasLayer` (cached by its choices and input)."""
    squeeze = _se_width(c_in, se) if se else 0
    if conv == "mbconv":
        mid = _times(c_in, expand)
        return inverted_residual(c_in, mid, c_out, kernel, stride, h, w, expand != 1, squeeze)
    ho, wo = conv_out(h, kernel, stride), conv_out(w, kernel, stride)
    params, macs = conv_bn(c_in, c_out, kernel, ho, wo)
    if squeeze:
        p, m = squeeze_excite(c_out, squeeze)
        params, macs = params + p, macs + m
    return params, macs, ho, wo


def _arch(rows: list[tuple]) -> dict:
    """Arch dict from one ``(repeats, conv, expand, kernel, se, skip, filters)`` row per block."""
    arch = {}
    for b, (repeats, conv, expand, kernel, se, skip, filters) in enumerate(rows, start=1):
        arch.update(
            {
                f"block{b}/conv": conv,
                f"block{b}/expand": expand,
                f"block{b}/kernel": kernel,
                f"block{b}/se": se,
                f"block{b}/skip": skip,
                f"block{b}/filters": filters,
                f"block{b}/repeats": repeats,
            }
        )
    return arch


# MnasNet-A1, Fig. 7 of Tan et al., "MnasNet: Platform-Aware Neural Architecture Search for Mobile",
# CVPR 2019: SepConv(k3)x1 16, MBConv6(k3)x2 24, MBConv3(k5,SE)x3 40, MBConv6(k3)x4 80,
# MBConv6(k3,SE)x2 112, MBConv6(k5,SE)x3 160, MBConv6(k3)x1 320. 3.9M parameters, 312M MACs.
#: MnasNet-A1, the paper's searched model, as an arch of :class:`MnasNet`'s space (3.9M
#: parameters, 312M MACs).
MNASNET_A1 = _arch(
    [
        (1, "mbconv", 1, 3, 0.0, "none", 16),
        (2, "mbconv", 6, 3, 0.0, "identity", 24),
        (3, "mbconv", 3, 5, 0.25, "identity", 40),
        (4, "mbconv", 6, 3, 0.0, "identity", 80),
        (2, "mbconv", 6, 3, 0.25, "identity", 112),
        (3, "mbconv", 6, 5, 0.25, "identity", 160),
        (1, "mbconv", 6, 3, 0.0, "identity", 320),
    ]
)

# MobileNetV2 (1.0), Table 2 of Sandler et al., "MobileNetV2: Inverted Residuals and Linear
# Bottlenecks", CVPR 2018: (t, c, n, s) = (1,16,1,1) (6,24,2,2) (6,32,3,2) (6,64,4,2) (6,96,3,1)
# (6,160,3,2) (6,320,1,1); 3.4M parameters, 300M MACs.
#: MobileNetV2 (1.0) as an arch of :class:`MnasNet`'s space (3.4M parameters, 300M MACs).
MOBILENET_V2 = _arch(
    [
        (1, "mbconv", 1, 3, 0.0, "identity", 16),
        (2, "mbconv", 6, 3, 0.0, "identity", 24),
        (3, "mbconv", 6, 3, 0.0, "identity", 32),
        (4, "mbconv", 6, 3, 0.0, "identity", 64),
        (3, "mbconv", 6, 3, 0.0, "identity", 96),
        (3, "mbconv", 6, 3, 0.0, "identity", 160),
        (1, "mbconv", 6, 3, 0.0, "identity", 320),
    ]
)
