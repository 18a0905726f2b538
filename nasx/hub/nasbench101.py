"""The NAS-Bench-101 space (Ying et al., ICML 2019), NNI's ``nni.nas.hub.pytorch.NasBench101``.

A 3x3 conv-BN-ReLU stem (128 channels), then three stacks of three cells with a 2x2 max-pool
between stacks (doubling the channels), global average pooling and a linear classifier. Every
cell is the same searched :class:`~nasx.space.NasBench101Cell` (one label, ``cell``, as in NNI):
at most 7 vertices and 9 edges, each interior vertex one of ``conv3x3-bn-relu``,
``conv1x1-bn-relu`` or ``maxpool3x3``, the input reaching vertices through a 1x1 conv-BN-ReLU
projection. A benchmark arch, given as the adjacency matrix and operation list of the dataset's
``ModelSpec``, becomes an arch dict with :func:`nb101_spec_to_arch`.

    >>> spec = nb101_spec_to_arch(
    ...     [[0, 1, 1, 1, 0, 1, 0],
    ...      [0, 0, 0, 0, 0, 0, 1],
    ...      [0, 0, 0, 0, 0, 0, 1],
    ...      [0, 0, 0, 0, 1, 0, 0],
    ...      [0, 0, 0, 0, 0, 0, 1],
    ...      [0, 0, 0, 0, 0, 0, 1],
    ...      [0, 0, 0, 0, 0, 0, 0]],
    ...     ['input', 'conv1x1-bn-relu', 'conv3x3-bn-relu', 'conv3x3-bn-relu',
    ...      'conv3x3-bn-relu', 'maxpool3x3', 'output'])
    >>> spec['cell/num_nodes'], spec['cell/op1'], spec['cell/input6']
    (7, 'conv1x1-bn-relu', [1, 2, 4, 5])
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
import torch.nn as nn

from ..space import ModelSpace, NasBench101Cell

OPERATIONS = ["conv3x3-bn-relu", "conv1x1-bn-relu", "maxpool3x3"]
"""The benchmark's operation names (the values of ``cell/op<i>``), in NNI's order."""


class ConvBNReLU(nn.Sequential):
    """Conv (no bias) -> BatchNorm -> ReLU, 'same' padding: NAS-Bench-101's ``conv_bn_relu``.

    Example:
        >>> ConvBNReLU(3, 8, 3)(torch.randn(1, 3, 8, 8)).shape
        torch.Size([1, 8, 8, 8])
    """

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int):
        super().__init__(
            nn.Conv2d(in_channels, out_channels, kernel_size, padding=kernel_size // 2, bias=False),
            nn.BatchNorm2d(out_channels),
            nn.ReLU(inplace=True),
        )


def _op(name: str):
    if name == "conv3x3-bn-relu":
        return lambda c: ConvBNReLU(c, c, 3)
    if name == "conv1x1-bn-relu":
        return lambda c: ConvBNReLU(c, c, 1)
    return lambda c: nn.MaxPool2d(3, stride=1, padding=1)


def _projection(c_in: int, c_out: int) -> nn.Module:
    return ConvBNReLU(c_in, c_out, 1)


class NasBench101(ModelSpace):
    """The NAS-Bench-101 space: 423k unique cells (about 510M labelled graphs), one shared cell.

    Args (NNI's): stem_out_channels (128 in the benchmark), num_stacks (3),
    num_modules_per_stack (3), max_num_vertices (7), max_num_edges (9), num_labels (10),
    bn_eps (1e-5) and bn_momentum (0.003: TensorFlow's 0.997).

    An arch over ``max_num_edges`` or whose output is unreachable raises
    :class:`~nasx.space.ConstraintViolation` when rebuilt (a failed trial).

    Example:
        >>> from nasx.space import search_space
        >>> space = NasBench101(stem_out_channels=8, num_modules_per_stack=1)
        >>> sorted(search_space(space))[:3]
        ['cell/input1', 'cell/input2', 'cell/input3']
        >>> space(torch.randn(2, 3, 32, 32)).shape
        torch.Size([2, 10])
    """

    def __init__(
        self,
        stem_out_channels: int = 128,
        num_stacks: int = 3,
        num_modules_per_stack: int = 3,
        max_num_vertices: int = 7,
        max_num_edges: int = 9,
        num_labels: int = 10,
        bn_eps: float = 1e-5,
        bn_momentum: float = 0.003,
    ):
        super().__init__()
        ops = {name: _op(name) for name in OPERATIONS}
        self.stem_conv = ConvBNReLU(3, stem_out_channels, 3)
        layers: list[nn.Module] = []
        c_in = c_out = stem_out_channels
        for stack in range(num_stacks):
            if stack > 0:
                layers.append(nn.MaxPool2d(2, stride=2))
                c_out *= 2
            for _ in range(num_modules_per_stack):
                layers.append(
                    NasBench101Cell(
                        ops, c_in, c_out, _projection, max_num_vertices, max_num_edges, "cell"
                    )
                )
                c_in = c_out
        self.features = nn.Sequential(*layers)
        self.gap = nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Linear(c_out, num_labels)
        for m in self.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.eps, m.momentum = bn_eps, bn_momentum

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.features(self.stem_conv(x))  # [N, C * 2**(stacks-1), H / 4, W / 4]
        return self.classifier(self.gap(x).flatten(1))


def nb101_spec_to_arch(
    matrix: Sequence[Sequence[int]], ops: Sequence[str], cell_label: str = "cell"
) -> dict[str, Any]:
    """The arch dict of a benchmark cell: its upper-triangular adjacency ``matrix`` (``matrix[i][j]``
    = 1 for an edge i -> j; vertex 0 the input, the last the output) and ``ops`` (one name per
    vertex, ``'input'`` and ``'output'`` at the ends, as in the dataset's ``ModelSpec``).

    Labels of vertices beyond the cell's size get defaults (unused by the rebuilt cell).
    """
    n = len(matrix)
    if len(ops) != n or any(len(row) != n for row in matrix):
        raise ValueError(f"a {n}-vertex cell needs a {n}x{n} matrix and {n} ops, got ops={ops!r}")
    if not 2 <= n <= 7:
        raise ValueError(f"NAS-Bench-101 cells have 2 to 7 vertices, got {n}")
    for i in range(n):
        for j in range(i + 1):
            if matrix[i][j]:
                raise ValueError(f"matrix must be upper-triangular: edge {i} -> {j}")
    bad = [op for op in ops[1:-1] if op not in OPERATIONS]
    if bad:
        raise ValueError(f"unknown operations {bad!r}; NAS-Bench-101 has {OPERATIONS}")
    arch: dict[str, Any] = {f"{cell_label}/num_nodes": n}
    for i in range(1, 6):
        arch[f"{cell_label}/op{i}"] = ops[i] if i < n - 1 else OPERATIONS[0]
    for i in range(1, 7):  # vertices past the cell's end: the search form's default (all inputs)
        arch[f"{cell_label}/input{i}"] = (
            [j for j in range(i) if matrix[j][i]] if i < n else list(range(i))
        )
    return arch
