"""The ProxylessNAS space (Cai et al., ICLR 2019): MobileNetV2's skeleton with a searched kernel,
expansion ratio and depth.

A 3x3 stride-2 stem, a fixed 3x3 depthwise-separable layer, six stages of inverted residuals
(stride 2, 2, 2, 1, 2, 1), a 1x1 conv to ``widths[-1]`` channels, pooling and a linear classifier;
ReLU6 everywhere. Choices (labels):

- ``s<i>/depth``: layers of stage ``i`` (1 to 4; the last stage has one layer). ProxylessNAS's
  "zero" op skips a layer; a skipped layer inside a stage computes what the same stage without it
  computes, so a depth is the same decision.
- ``s<i>_<j>/kernel`` (3, 5, 7) and ``s<i>_<j>/expand`` (3, 6) of layer ``j`` of stage ``i``.

Widths are arguments: :data:`MOBILE_WIDTHS` (the mobile and CPU spaces) or :data:`GPU_WIDTHS`.
ProxylessNAS-Mobile and -GPU are archs of this space (:data:`PROXYLESSNAS_MOBILE`,
:data:`PROXYLESSNAS_GPU`).

    >>> from nasx.space import search_space
    >>> space = search_space(ProxylessNAS())
    >>> len(space), space['s1_0/kernel'].values, space['s1/depth'].values
    (47, [3, 5, 7], [1, 2, 3, 4])
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn as nn

from ..space import Categorical, ModelSpace, Repeat
from . import layer_costs as lc
from .mobile_blocks import InvertedResidual, activation, conv_bn

# stem, first layer, the six stages, the last conv
MOBILE_WIDTHS = (32, 16, 32, 40, 80, 96, 192, 320, 1280)
GPU_WIDTHS = (40, 24, 32, 56, 112, 128, 256, 432, 1728)
STRIDES = (2, 2, 2, 1, 2, 1)
MAX_DEPTHS = (4, 4, 4, 4, 4, 1)
KERNELS = (3, 5, 7)
EXPANDS = (3, 6)


class ProxylessNAS(ModelSpace):
    """The ProxylessNAS space (21 searched layers: kernel, expansion, and stage depths).

    Args:
        num_classes: classifier outputs.
        widths: stem, first layer, six stages, last conv (``nasx.hub.proxylessnas.MOBILE_WIDTHS``,
            the default, or ``GPU_WIDTHS``).
        dropout: dropout before the classifier.

    Example:
        >>> import torch
        >>> from nasx.space import model_context
        >>> with model_context(PROXYLESSNAS_MOBILE):
        ...     model = ProxylessNAS(num_classes=10)
        >>> model(torch.randn(2, 3, 32, 32)).shape
        torch.Size([2, 10])
    """

    def __init__(
        self,
        num_classes: int = 1000,
        widths: tuple[int, ...] = MOBILE_WIDTHS,
        dropout: float = 0.0,
    ):
        super().__init__()
        if len(widths) != 9:
            raise ValueError(
                f"ProxylessNAS widths: 9 values (stem, first, 6 stages, last), got {widths}"
            )
        self.widths = tuple(widths)
        stem, first, *stages, last = widths
        self.stem = nn.Sequential(*conv_bn(3, stem, 3, 2), activation("relu6"))
        # MobileNetV2's first layer: depthwise 3x3 then projection, no expansion
        self.first = nn.Sequential(
            *conv_bn(stem, stem, 3, groups=stem), activation("relu6"), *conv_bn(stem, first)
        )
        c_in, blocks = first, []
        for i, (c_out, stride, max_depth) in enumerate(
            zip(stages, STRIDES, MAX_DEPTHS, strict=True), start=1
        ):

            def layer(
                j: int, i: int = i, c_in: int = c_in, c_out: int = c_out, stride: int = stride
            ):
                return InvertedResidual(
                    c_in if j == 0 else c_out,
                    c_out,
                    stride if j == 0 else 1,
                    Categorical(list(EXPANDS), label=f"s{i}_{j}/expand"),
                    Categorical(list(KERNELS), label=f"s{i}_{j}/kernel"),
                )

            depth = (1, max_depth) if max_depth > 1 else 1
            blocks.append(Repeat(layer, depth, label=f"s{i}/depth"))
            c_in = c_out
        self.blocks = nn.Sequential(*blocks)
        self.head = nn.Sequential(*conv_bn(c_in, last), activation("relu6"))
        self.dropout = nn.Dropout(dropout)
        self.classifier = nn.Linear(last, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.head(self.blocks(self.first(self.stem(x))))  # [N, last, H/32, W/32]
        return self.classifier(self.dropout(x.mean((2, 3))))

    def analytic_cost(self, arch: dict[str, Any], input_shape: tuple[int, ...]) -> tuple[int, int]:
        """``(params, MACs)`` of ``arch`` for one ``(3, H, W)`` input, from per-layer formulas
        (:mod:`nasx.hub.layer_costs`, each layer cached by its choices and input size), no model
        built: what :func:`nasx.hardware.cost.arch_cost` uses for this space. MACs count conv and
        linear layers, as :func:`nasx.profiler.count_macs` does.

        >>> ProxylessNAS().analytic_cost(PROXYLESSNAS_MOBILE, (3, 224, 224))  # 4.1M, 320M
        (4080512, 320427584)
        """
        h, w = lc.input_size(input_shape, "ProxylessNAS")
        stem, first, *stages, last = self.widths
        h, w = lc.conv_out(h, 3, 2), lc.conv_out(w, 3, 2)
        params, macs = lc.conv_bn(3, stem, 3, h, w)
        for p, m in (
            lc.conv_bn(stem, stem, 3, h, w, groups=stem),
            lc.conv_bn(stem, first, 1, h, w),
        ):
            params, macs = params + p, macs + m
        c_in = first
        for i, (c_out, stride, max_depth) in enumerate(
            zip(stages, STRIDES, MAX_DEPTHS, strict=True), start=1
        ):
            for j in range(arch[f"s{i}/depth"] if max_depth > 1 else 1):
                expand = arch[f"s{i}_{j}/expand"]
                p, m, h, w = lc.inverted_residual(
                    c_in, round(c_in * expand), c_out, arch[f"s{i}_{j}/kernel"],
                    stride if j == 0 else 1, h, w, expand != 1, 0,
                )  # fmt: skip
                params, macs, c_in = params + p, macs + m, c_out
        for p, m in (
            lc.conv_bn(c_in, last, 1, h, w),
            lc.linear(last, self.classifier.out_features),
        ):
            params, macs = params + p, macs + m
        return params, macs


def _arch(stages: list[list[tuple[int, int]]]) -> dict:
    """Arch dict from one ``[(kernel, expand), ...]`` list of layers per stage."""
    arch: dict = {}
    for i, layers in enumerate(stages, start=1):
        if i < 6:
            arch[f"s{i}/depth"] = len(layers)
        for j in range(MAX_DEPTHS[i - 1]):
            kernel, expand = layers[j] if j < len(layers) else (KERNELS[0], EXPANDS[0])
            arch[f"s{i}_{j}/kernel"], arch[f"s{i}_{j}/expand"] = kernel, expand
    return arch


# ProxylessNAS-Mobile and -GPU, Fig. 4 of Cai et al., "ProxylessNAS: Direct Neural Architecture
# Search on Target Task and Hardware", ICLR 2019 (layers as released in github.com/mit-han-lab/
# proxylessnas, net configs proxyless_mobile / proxyless_gpu): (kernel, expansion) of each layer
# that is not a zero op. Published sizes of the released networks: Mobile 4.1M parameters and
# 320M MACs, GPU 7.1M and 465M (as the ProxylessNAS repository and later papers' tables, e.g.
# once-for-all's, quote them); the layer lists are those of pytorchcv's port of the released
# configs (4,080,512 and 7,119,848 parameters).
#: ProxylessNAS-Mobile, the released model, as an arch of :class:`ProxylessNAS` (4.1M
#: parameters, 320M MACs).
PROXYLESSNAS_MOBILE = _arch(
    [
        [(5, 3), (3, 3)],
        [(7, 3), (3, 3), (5, 3), (5, 3)],
        [(7, 6), (5, 3), (5, 3), (5, 3)],
        [(5, 6), (5, 3), (5, 3), (5, 3)],
        [(7, 6), (7, 6), (7, 3), (7, 3)],
        [(7, 6)],
    ]
)
#: ProxylessNAS-GPU, the released model, as an arch of ``ProxylessNAS(widths=GPU_WIDTHS)``
#: (7.1M parameters, 465M MACs).
PROXYLESSNAS_GPU = _arch(
    [
        [(5, 3)],
        [(7, 3), (3, 3)],
        [(7, 6), (5, 3)],
        [(5, 6), (3, 3), (5, 3)],
        [(7, 6), (7, 6), (7, 6), (5, 6)],
        [(7, 6)],
    ]
)
