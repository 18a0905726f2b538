"""The ShuffleNet space of Single Path One-Shot (Guo et al., ECCV 2020), NNI's ``ShuffleNetSpace``.

A 3x3 stride-2 stem (16 channels), 20 searched blocks in four stages of 4, 4, 8 and 4 blocks
(64, 160, 320 and 640 channels, the first block of each stage with stride 2), a 1x1 conv to 1024,
global pooling, dropout 0.1 and a linear classifier without bias. Block ``layer_<i>`` is one of
four ShuffleNetV2 units: ``k3``, ``k5``, ``k7`` (1x1 conv, kxk depthwise conv, 1x1 conv) or
``xcep`` (three 3x3 depthwise + 1x1 pairs); a stride-1 unit splits its input by a channel shuffle
and works on one half, a stride-2 unit adds a depthwise projection branch. 4^20 archs; with
``channel_search=True`` the middle width of each block (``channel_<i>``) is searched too, from
0.2x to 1.6x of its default in steps of 0.2x. :data:`SPOS` is the paper's block-search result.

    >>> from nasx.space import search_space
    >>> len(search_space(ShuffleNetSpace())), search_space(ShuffleNetSpace())['layer_1'].values
    (20, ['k3', 'k5', 'k7', 'xcep'])
"""

from __future__ import annotations

import torch
import torch.nn as nn

from ..space import Categorical, LayerChoice, ModelSpace, MutableBatchNorm2d, MutableConv2d

STAGE_REPEATS = [4, 4, 8, 4]
STAGE_OUT_CHANNELS = [-1, 16, 64, 160, 320, 640, 1024]  # stem, four stages, last conv

SPOS = {
    f"layer_{i}": op
    for i, op in enumerate(
        ["k7", "k5", "k3", "k5", "k7", "k3", "k7", "k3", "k7", "k3"]
        + ["k7", "xcep", "k3", "k3", "k3", "k3", "xcep", "k7", "xcep", "xcep"],
        start=1,
    )
}
"""The block-search arch of the SPOS paper (its released model; NNI's ``'spos'``)."""


def channel_shuffle(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """ShuffleNetV2's split: the even channels and the odd channels of ``x`` ``[N, C, H, W]``.

    >>> a, b = channel_shuffle(torch.arange(4.).view(1, 4, 1, 1))
    >>> a.flatten().tolist(), b.flatten().tolist()
    ([0.0, 2.0], [1.0, 3.0])
    """
    n, c, h, w = x.shape
    x = x.reshape(n * c // 2, 2, h * w).permute(1, 0, 2).reshape(2, -1, c // 2, h, w)
    return x[0], x[1]


class ShuffleNetBlock(nn.Module):
    """A ShuffleNetV2 unit whose main branch follows ``sequence`` (``p``: 1x1 conv-BN-ReLU,
    ``d``: depthwise kxk conv-BN); ``[N, in, H, W] -> [N, out, H / stride, W / stride]``.

    With stride 1 the input has ``2 * c`` channels: half goes through the main branch, half is
    passed on. With stride 2 all of it feeds both the main and a projection branch.

    Example:
        >>> ShuffleNetBlock(16, 64, 32, kernel_size=3, stride=2)(torch.randn(1, 16, 8, 8)).shape
        torch.Size([1, 64, 4, 4])
    """

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        mid_channels: int | Categorical,
        *,
        kernel_size: int,
        stride: int,
        sequence: str = "pdp",
        affine: bool = True,
    ):
        super().__init__()
        if stride not in (1, 2) or kernel_size not in (3, 5, 7):
            raise ValueError(
                f"stride must be 1 or 2 and kernel_size 3, 5 or 7, got {stride}, {kernel_size}"
            )
        self.stride = stride
        channels = in_channels // 2 if stride == 1 else in_channels
        pad = kernel_size // 2
        layers: list[nn.Module] = []
        prev: int | Categorical = channels
        first_depth = first_point = True
        for i, token in enumerate(sequence):
            if i == len(sequence) - 1:
                width: int | Categorical = out_channels - channels  # the main branch's output
            elif token == "p" and first_point:
                width = mid_channels
            else:
                width = prev
            if token == "d":  # depthwise: keeps the width
                s = stride if first_depth else 1
                layers.append(
                    MutableConv2d(prev, prev, kernel_size, s, pad, groups=prev, bias=False)
                )
                layers.append(MutableBatchNorm2d(prev, affine=affine))
                first_depth, width = False, prev
            else:
                layers.append(MutableConv2d(prev, width, 1, 1, 0, bias=False))
                layers.append(MutableBatchNorm2d(width, affine=affine))
                layers.append(nn.ReLU(inplace=True))
                first_point = False
            prev = width
        self.branch_main = nn.Sequential(*layers)
        self.branch_proj = nn.Sequential()  # empty at stride 1 (kept for TorchScript)
        if stride == 2:
            self.branch_proj = nn.Sequential(
                nn.Conv2d(channels, channels, kernel_size, 2, pad, groups=channels, bias=False),
                nn.BatchNorm2d(channels, affine=affine),
                nn.Conv2d(channels, channels, 1, bias=False),
                nn.BatchNorm2d(channels, affine=affine),
                nn.ReLU(inplace=True),
            )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.stride == 2:
            proj, main = self.branch_proj(x), x
        else:
            proj, main = channel_shuffle(x)
        return torch.cat((proj, self.branch_main(main)), 1)


class ShuffleXceptionBlock(ShuffleNetBlock):
    """SPOS's ``choice_x`` unit: three (3x3 depthwise, 1x1) pairs.

    Example:
        >>> ShuffleXceptionBlock(64, 64, 32, stride=1)(torch.randn(1, 64, 4, 4)).shape
        torch.Size([1, 64, 4, 4])
    """

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        mid_channels: int | Categorical,
        *,
        stride: int,
        affine: bool = True,
    ):
        super().__init__(
            in_channels, out_channels, mid_channels, kernel_size=3, stride=stride,
            sequence="dpdpdp", affine=affine,
        )  # fmt: skip


class ShuffleNetSpace(ModelSpace):
    """NNI's ``ShuffleNetSpace``: 20 choice blocks of 4 ShuffleNetV2 units (see the module doc).

    Args:
        num_labels: classes of the classifier (1000: ImageNet).
        channel_search: also search each block's middle width (labels ``channel_<i>``).
        affine: affine BatchNorm in the blocks and the last conv.

    Example:
        >>> model = ShuffleNetSpace(num_labels=10).freeze(SPOS)
        >>> model(torch.randn(1, 3, 64, 64)).shape
        torch.Size([1, 10])
    """

    def __init__(self, num_labels: int = 1000, channel_search: bool = False, affine: bool = True):
        super().__init__()
        out = STAGE_OUT_CHANNELS[1]
        self.first_conv = nn.Sequential(
            nn.Conv2d(3, out, 3, 2, 1, bias=False), nn.BatchNorm2d(out), nn.ReLU(inplace=True)
        )
        blocks: list[nn.Module] = []
        index = 0
        for stage, repeats in enumerate(STAGE_REPEATS):
            for b in range(repeats):
                index += 1
                c_in, out = out, STAGE_OUT_CHANNELS[stage + 2]
                stride = 2 if b == 0 else 1
                base = out // 2
                mid: int | Categorical = base
                if channel_search:
                    widths = [int(base * (0.2 * k)) for k in range(1, 9)]
                    mid = Categorical(widths, label=f"channel_{index}", default=base)
                units = {
                    f"k{k}": ShuffleNetBlock(
                        c_in, out, mid, kernel_size=k, stride=stride, affine=affine
                    )
                    for k in (3, 5, 7)
                }
                units["xcep"] = ShuffleXceptionBlock(c_in, out, mid, stride=stride, affine=affine)
                blocks.append(LayerChoice(units, label=f"layer_{index}"))
        self.features = nn.Sequential(*blocks)
        last = STAGE_OUT_CHANNELS[-1]
        self.conv_last = nn.Sequential(
            nn.Conv2d(out, last, 1, bias=False),
            nn.BatchNorm2d(last, affine=affine),
            nn.ReLU(inplace=True),
        )
        self.globalpool = nn.AdaptiveAvgPool2d(1)
        self.dropout = nn.Dropout(0.1)
        self.classifier = nn.Linear(last, num_labels, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.conv_last(self.features(self.first_conv(x)))  # [N, 1024, H / 32, W / 32]
        return self.classifier(self.dropout(self.globalpool(x).flatten(1)))
