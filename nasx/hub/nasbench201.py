"""The NAS-Bench-201 space (Dong & Yang, ICLR 2020) and converters to/from the benchmark's strings.

The network is a 3x3 stem, three stacks of ``N`` identical cells separated by residual stride-2
blocks, then BN-ReLU, global pooling and a linear layer. A cell is a 4-node DAG where every edge
``j -> i`` (``j < i``) carries one of five operations; the six edges are labelled
``cell/<j>_<i>`` (NNI 3.0's labels) with NNI's operation names. The benchmark writes the same
arch as ``|nor_conv_3x3~0|+|nor_conv_3x3~0|avg_pool_3x3~1|+|skip_connect~0|...|`` (node groups
1, 2, 3; ``op~j`` is the edge from node ``j``).

    >>> arch = nb201_string_to_arch('|nor_conv_3x3~0|+|none~0|skip_connect~1|+|avg_pool_3x3~0|nor_conv_1x1~1|none~2|')
    >>> arch['cell/0_1'], arch['cell/1_3']
    ('conv_3x3', 'conv_1x1')
    >>> arch_to_nb201_string(arch)
    '|nor_conv_3x3~0|+|none~0|skip_connect~1|+|avg_pool_3x3~0|nor_conv_1x1~1|none~2|'
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

import torch
import torch.nn as nn

from ..space import LayerChoice, ModelSpace, label_scope
from ..space.labels import current_path
from .ops import FactorizedReduce, ReLUConvBN, Zero

NUM_NODES = 4
EDGES = [
    (j, i) for i in range(1, NUM_NODES) for j in range(i)
]  # (0,1), (0,2), (1,2), (0,3), (1,3), (2,3)
OPERATIONS = ["none", "skip_connect", "conv_1x1", "conv_3x3", "avg_pool_3x3"]
"""NNI's operation names, in NNI's order (the arch's values)."""
BENCHMARK_NAMES = {
    "none": "none",
    "skip_connect": "skip_connect",
    "conv_1x1": "nor_conv_1x1",
    "conv_3x3": "nor_conv_3x3",
    "avg_pool_3x3": "avg_pool_3x3",
}
"""arch value -> operation name in the benchmark's strings."""
_FROM_BENCHMARK = {v: k for k, v in BENCHMARK_NAMES.items()}
_GROUP = re.compile(r"^([a-z_0-9]+)~(\d+)$")


def edge_label(j: int, i: int, cell_label: str = "cell") -> str:
    """The label of edge ``j -> i``: ``'cell/<j>_<i>'``."""
    return f"{cell_label}/{j}_{i}"


PRIMITIVES = OPERATIONS
"""NNI's name for :data:`OPERATIONS` (``nni.nas.hub.pytorch.nasbench201.PRIMITIVES``)."""


class ZeroOut(nn.Module):
    """The ``none`` operation from ``c_in`` to ``c_out`` channels: zeros of the output's shape
    (``[N, c_in, H, W] -> [N, c_out, ceil(H/stride), ceil(W/stride)]``)."""

    def __init__(self, c_out: int, stride: int = 1):
        super().__init__()
        self.c_out, self.stride = c_out, stride

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        strided = x[:, :1, :: self.stride, :: self.stride]
        return strided.new_zeros((x.shape[0], self.c_out, *strided.shape[2:]))


class Pooling(nn.Module):
    """NAS-Bench-201's pooling edge: a 1x1 ReLU-conv-BN when the channels change, then a 3x3
    average (``count_include_pad=False``) or max pooling of ``stride``."""

    def __init__(self, c_in: int, c_out: int, stride: int, mode: str):
        super().__init__()
        if mode not in ("avg", "max"):
            raise ValueError(f"Pooling mode must be 'avg' or 'max', got {mode!r}")
        self.preprocess = None if c_in == c_out else ReLUConvBN(c_in, c_out, 1, 1, 0)
        self.op: nn.Module = (
            nn.AvgPool2d(3, stride=stride, padding=1, count_include_pad=False)
            if mode == "avg"
            else nn.MaxPool2d(3, stride=stride, padding=1)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.preprocess is not None:
            x = self.preprocess(x)
        out: torch.Tensor = self.op(x)
        return out


def _skip(c_in: int, c_out: int, stride: int) -> nn.Module:
    if stride == 1 and c_in == c_out:
        return nn.Identity()
    if stride != 2:
        raise ValueError(
            f"skip_connect from {c_in} to {c_out} channels needs stride 2 (a factorized "
            f"reduction), got stride {stride}"
        )
    return FactorizedReduce(c_in, c_out)


OPS_WITH_STRIDE: dict[str, Callable[[int, int, int], nn.Module]] = {
    "none": lambda c_in, c_out, stride: ZeroOut(c_out, stride),
    "avg_pool_3x3": lambda c_in, c_out, stride: Pooling(c_in, c_out, stride, "avg"),
    "max_pool_3x3": lambda c_in, c_out, stride: Pooling(c_in, c_out, stride, "max"),
    "conv_3x3": lambda c_in, c_out, stride: ReLUConvBN(c_in, c_out, 3, stride, 1),
    "conv_1x1": lambda c_in, c_out, stride: ReLUConvBN(c_in, c_out, 1, stride, 0),
    "skip_connect": _skip,
}
"""NNI's table of NAS-Bench-201 operations (``nni.nas.hub.pytorch.nasbench201.OPS_WITH_STRIDE``):
``OPS_WITH_STRIDE[name](c_in, c_out, stride) -> module``, ``[N, c_in, H, W] -> [N, c_out,
H/stride, W/stride]``; with ``stride=1`` and ``c_in == c_out`` each computes what the
:class:`NasBench201` space's operation of that name computes (``max_pool_3x3`` is NNI's extra).
It fits :class:`~nasx.hub.modules.NasBench201Cell`'s
``op_candidates`` as NNI's examples use it:

    >>> from nasx.hub.modules import NasBench201Cell as Cell
    >>> ops = {name: (lambda make: lambda c_in, c_out: make(c_in, c_out, 1))(make)
    ...        for name, make in OPS_WITH_STRIDE.items()}
    >>> Cell(ops, 4, 8, label='cell')(torch.randn(2, 4, 8, 8)).shape
    torch.Size([2, 8, 8, 8])
    >>> OPS_WITH_STRIDE['skip_connect'](4, 8, 2)(torch.randn(2, 4, 8, 8)).shape
    torch.Size([2, 8, 4, 4])
"""


def _make_op(name: str, channels: int) -> nn.Module:
    if name == "none":
        return Zero(1)
    if name == "skip_connect":
        return nn.Identity()
    if name == "conv_1x1":
        return ReLUConvBN(channels, channels, 1, 1, 0)
    if name == "conv_3x3":
        return ReLUConvBN(channels, channels, 3, 1, 1)
    return nn.AvgPool2d(3, stride=1, padding=1, count_include_pad=False)


class NasBench201Cell(nn.Module):
    """The searched cell: node ``i`` is the sum over ``j < i`` of ``op_{j,i}(node j)``.

    ``[N, C, H, W] -> [N, C, H, W]``. Its six LayerChoices are labelled ``<label>/<j>_<i>``;
    ``cell.label`` is the scope's full name, as NNI's.

    Example:
        >>> import torch
        >>> cell = NasBench201Cell(4)
        >>> cell(torch.randn(1, 4, 8, 8)).shape, cell.label
        (torch.Size([1, 4, 8, 8]), 'cell')
    """

    def __init__(self, channels: int, label: str = "cell"):
        super().__init__()
        # edges[i - 1][j]: the op on edge j -> i
        self.edges = nn.ModuleList()
        with label_scope(label):
            self.label = "/".join(current_path())
            for i in range(1, NUM_NODES):
                self.edges.append(
                    nn.ModuleList(
                        LayerChoice(
                            {op: _make_op(op, channels) for op in OPERATIONS}, label=f"{j}_{i}"
                        )
                        for j in range(i)
                    )
                )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        nodes = [x]
        for node_edges in self.edges:
            # a loop rather than sum(generator): TorchScript compiles neither generators nor sum
            node = torch.zeros_like(x)
            for j, op in enumerate(node_edges):  # type: ignore
                node = node + op(nodes[j])
            nodes.append(node)
        return nodes[-1]


class ResidualReduction(nn.Module):
    """NAS-Bench-201's stride-2 ResNet basic block between stacks: ``[N, C, H, W] -> [N, C', H/2, W/2]``.

    Example:
        >>> ResidualReduction(4, 8)(torch.randn(1, 4, 8, 8)).shape
        torch.Size([1, 8, 4, 4])
    """

    def __init__(self, c_in: int, c_out: int):
        super().__init__()
        self.conv_a = ReLUConvBN(c_in, c_out, 3, 2, 1)
        self.conv_b = ReLUConvBN(c_out, c_out, 3, 1, 1)
        self.downsample = nn.Sequential(
            nn.AvgPool2d(2, stride=2), nn.Conv2d(c_in, c_out, 1, bias=False)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.downsample(x) + self.conv_b(self.conv_a(x))


class NasBench201(ModelSpace):
    """The NAS-Bench-201 space: 15,625 archs (5 operations on 6 edges), one cell shared everywhere.

    Args:
        stem_out_channels: channels of the first stack (16 in the benchmark); doubled per stack.
        num_modules_per_stack: cells per stack (5 in the benchmark).
        num_labels: number of classes (10 for CIFAR-10, 100 for CIFAR-100, 120 for ImageNet16-120).

    Example:
        >>> import torch
        >>> from nasx.space import search_space
        >>> space = NasBench201(stem_out_channels=4, num_modules_per_stack=1)
        >>> search_space(space).size
        15625
        >>> model = space.freeze(nb201_string_to_arch(
        ...     '|nor_conv_3x3~0|+|nor_conv_3x3~0|nor_conv_3x3~1|+|skip_connect~0|nor_conv_3x3~1|nor_conv_1x1~2|'))
        >>> model(torch.randn(2, 3, 32, 32)).shape
        torch.Size([2, 10])
    """

    def __init__(
        self, stem_out_channels: int = 16, num_modules_per_stack: int = 5, num_labels: int = 10
    ):
        super().__init__()
        c, n = stem_out_channels, num_modules_per_stack
        self.stem = nn.Sequential(nn.Conv2d(3, c, 3, padding=1, bias=False), nn.BatchNorm2d(c))
        layers: list[nn.Module] = []
        for stack in range(3):
            width = c * 2**stack
            if stack > 0:
                layers.append(ResidualReduction(width // 2, width))
            layers += [NasBench201Cell(width) for _ in range(n)]
        self.cells = nn.Sequential(*layers)
        c_last = c * 4
        self.lastact = nn.Sequential(nn.BatchNorm2d(c_last), nn.ReLU(inplace=True))
        self.global_pooling = nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Linear(c_last, num_labels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.lastact(self.cells(self.stem(x)))  # [N, 4C, H/4, W/4]
        return self.classifier(self.global_pooling(x).flatten(1))


def nb201_string_to_arch(arch_str: str, cell_label: str = "cell") -> dict[str, Any]:
    """Parse a benchmark string ``|op~0|+|op~0|op~1|+|op~0|op~1|op~2|`` into an arch dict.

    Raises ValueError naming the part that does not fit the 3-node, 6-edge format.
    """
    groups = arch_str.split("+")
    if len(groups) != NUM_NODES - 1:
        raise ValueError(
            f"a NAS-Bench-201 string has {NUM_NODES - 1} '+'-separated node groups, got {arch_str!r}"
        )
    arch: dict[str, Any] = {}
    for i, group in enumerate(groups, start=1):
        if not (group.startswith("|") and group.endswith("|")):
            raise ValueError(f"node group {group!r} of {arch_str!r} must start and end with '|'")
        items = group[1:-1].split("|")
        if len(items) != i:
            raise ValueError(f"node {i} must have {i} edge(s), got {group!r} in {arch_str!r}")
        for j, item in enumerate(items):
            m = _GROUP.match(item)
            if not m or int(m.group(2)) != j or m.group(1) not in _FROM_BENCHMARK:
                raise ValueError(
                    f"edge {item!r} of node {i} in {arch_str!r} must be '<op>~{j}' with op in {sorted(_FROM_BENCHMARK)}"
                )
            arch[edge_label(j, i, cell_label)] = _FROM_BENCHMARK[m.group(1)]
    return arch


def arch_to_nb201_string(arch: Mapping[str, Any], cell_label: str = "cell") -> str:
    """The benchmark string of an arch (inverse of :func:`nb201_string_to_arch`)."""
    groups = []
    for i in range(1, NUM_NODES):
        items = []
        for j in range(i):
            label = edge_label(j, i, cell_label)
            if label not in arch:
                raise ValueError(f"arch has no value for {label!r}; labels given: {sorted(arch)}")
            op = arch[label]
            if op not in BENCHMARK_NAMES:
                raise ValueError(
                    f"invalid value {op!r} for label {label!r}: allowed one of {OPERATIONS}"
                )
            items.append(f"{BENCHMARK_NAMES[op]}~{j}")
        groups.append("|" + "|".join(items) + "|")
    return "+".join(groups)
