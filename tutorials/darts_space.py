"""A small DARTS-like model space (2 cell inputs, sep_conv/max_pool/skip/none edges) for the
one-shot tutorial, tests and benchmark.

It stands in for the hub's DARTS space until ``nasx.hub.DARTS`` lands: code that uses it takes
``DartsLikeSpace(width=..., num_cells=..., num_nodes=...)`` and swapping in the hub space is a
one-line change. Labels follow NNI's DARTS space: ``normal/op_2_0``, ``reduce/input_3_1`` ...

    >>> import torch
    >>> from nasx.space import search_space
    >>> space = DartsLikeSpace(width=4, num_cells=3, num_nodes=2)
    >>> sorted(search_space(space))[:2]
    ['normal/input_2_0', 'normal/input_2_1']
"""

from __future__ import annotations

import torch
import torch.nn as nn

from nasx.space import Cell, ModelSpace

OP_NAMES = ("sep_conv_3x3", "max_pool_3x3", "skip_connect", "none")


class SepConv(nn.Sequential):
    """DARTS's separable conv: (ReLU, depthwise kxk, pointwise 1x1, BN) twice, stride on the first."""

    def __init__(self, c: int, stride: int, k: int = 3):
        layers = []
        for s in (stride, 1):
            layers += [
                nn.ReLU(),
                nn.Conv2d(c, c, k, s, k // 2, groups=c, bias=False),
                nn.Conv2d(c, c, 1, bias=False),
                nn.BatchNorm2d(c, affine=False),
            ]
        super().__init__(*layers)


class FactorizedReduce(nn.Module):
    """Halve H and W with two offset stride-2 1x1 convs concatenated: [B, c_in, H, W] -> [B, c_out, H/2, W/2]."""

    def __init__(self, c_in: int, c_out: int):
        super().__init__()
        self.relu = nn.ReLU()
        self.conv1 = nn.Conv2d(c_in, c_out // 2, 1, 2, bias=False)
        self.conv2 = nn.Conv2d(c_in, c_out - c_out // 2, 1, 2, bias=False)
        self.bn = nn.BatchNorm2d(c_out, affine=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.relu(x)
        return self.bn(torch.cat([self.conv1(x), self.conv2(x[:, :, 1:, 1:])], 1))


class Zero(nn.Module):
    """The 'none' op: zeros of the output shape."""

    def __init__(self, stride: int):
        super().__init__()
        self.stride = stride

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x[:, :, :: self.stride, :: self.stride].mul(0.0)


def make_op(
    name: str, c: int, node: int, op_index: int, input_index: int | None, reduction: bool
) -> nn.Module:
    """One edge op; in a reduction cell, edges from the two cell inputs (0, 1) have stride 2."""
    stride = 2 if reduction and input_index is not None and input_index < 2 else 1
    if name == "sep_conv_3x3":
        return SepConv(c, stride)
    if name == "max_pool_3x3":
        return nn.MaxPool2d(3, stride, 1)
    if name == "skip_connect":
        return nn.Identity() if stride == 1 else FactorizedReduce(c, c)
    if name == "none":
        return Zero(stride)
    raise ValueError(f"unknown op {name!r}; known: {OP_NAMES}")


class OpFactory:
    """Picklable ``f(node, op_index, input_index) -> module`` for one op name of one cell."""

    def __init__(self, name: str, c: int, reduction: bool):
        self.name, self.c, self.reduction = name, c, reduction

    def __call__(self, node: int, op_index: int, input_index: int | None) -> nn.Module:
        return make_op(self.name, self.c, node, op_index, input_index, self.reduction)

    def partial(self, k: int) -> OpFactory:
        """The same op on ``1/k`` of the channels (PC-DARTS's partial-channel supernet edges)."""
        if self.c % k:
            raise ValueError(f"{self.c} channels cannot be split in {k} parts")
        return OpFactory(self.name, self.c // k, self.reduction)


class Preprocess(nn.Module):
    """Bring both cell inputs to [B, c, H, W]: FactorizedReduce s0 after a reduction, else ReLU-1x1-BN."""

    def __init__(self, c_pp: int, c_p: int, c: int, prev_reduction: bool):
        super().__init__()
        self.pre0 = FactorizedReduce(c_pp, c) if prev_reduction else _relu_conv_bn(c_pp, c)
        self.pre1 = _relu_conv_bn(c_p, c)

    def forward(self, inputs: list[torch.Tensor]) -> list[torch.Tensor]:
        return [self.pre0(inputs[0]), self.pre1(inputs[1])]


class KeepPrevious(nn.Module):
    """Postprocessor: return (s1, this cell) so the next cell gets its two inputs."""

    def forward(
        self, this_cell: torch.Tensor, inputs: list[torch.Tensor]
    ) -> tuple[torch.Tensor, torch.Tensor]:
        return inputs[-1], this_cell


def _relu_conv_bn(c_in: int, c_out: int) -> nn.Sequential:
    return nn.Sequential(
        nn.ReLU(), nn.Conv2d(c_in, c_out, 1, bias=False), nn.BatchNorm2d(c_out, affine=False)
    )


class DartsLikeSpace(ModelSpace):
    """DARTS's cell search space at small scale: stem, ``num_cells`` cells (reductions at 1/3 and
    2/3 of the depth, doubling the width), global pooling, linear classifier.

    Args:
        width: channels of the first cells' nodes.
        num_cells: number of cells.
        num_nodes: chosen nodes per cell (DARTS: 4), each summing 2 ops.
        num_classes, in_channels: data shape.
        op_names: edge operations (a subset of ``OP_NAMES``).
    """

    def __init__(
        self,
        width: int = 8,
        num_cells: int = 3,
        num_nodes: int = 2,
        num_classes: int = 10,
        in_channels: int = 3,
        op_names: tuple[str, ...] = OP_NAMES,
    ):
        super().__init__()
        c_stem = 3 * width
        self.stem = nn.Sequential(
            nn.Conv2d(in_channels, c_stem, 3, padding=1, bias=False), nn.BatchNorm2d(c_stem)
        )
        c_pp, c_p, c = c_stem, c_stem, width
        self.cells = nn.ModuleList()
        prev_reduction = False
        for i in range(num_cells):
            reduction = i in (num_cells // 3, 2 * num_cells // 3) and i > 0
            c = c * 2 if reduction else c
            ops = {name: OpFactory(name, c, reduction) for name in op_names}
            self.cells.append(
                Cell(
                    ops,
                    num_nodes=num_nodes,
                    num_ops_per_node=2,
                    num_predecessors=2,
                    preprocessor=Preprocess(c_pp, c_p, c, prev_reduction),
                    postprocessor=KeepPrevious(),
                    label="reduce" if reduction else "normal",
                )
            )
            c_pp, c_p, prev_reduction = c_p, num_nodes * c, reduction
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Linear(c_p, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        s0 = s1 = self.stem(x)  # [B, 3*width, H, W]
        for cell in self.cells:
            s0, s1 = cell(s0, s1)
        return self.classifier(self.pool(s1).flatten(1))  # [B, num_classes]


if __name__ == "__main__":  # run as a script: it only defines the space (import it to use it)
    import argparse

    argparse.ArgumentParser(
        description="A small DARTS-like model space (2 cell inputs, sep_conv/max_pool/skip/none\n"
        "edges) with NNI's labels, for the DARTS tutorial, the tests and the benchmark. Running\n"
        "it defines the space and does nothing else: import DartsLikeSpace from it (with\n"
        "tutorials/ on sys.path). It reads no data and no environment variables.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        allow_abbrev=False,
    ).parse_known_args()  # known only: a notebook kernel passes arguments of its own
