"""NasBench101Cell: the cell of NAS-Bench-101 (Ying et al., 2019), NNI's ``NasBench101Cell``.

A cell is a DAG of at most ``max_num_nodes`` vertices, the input (0) and the output (last)
included, with at most ``max_num_edges`` edges. Its decisions, under the cell's label scope, are
NNI's: ``num_nodes`` (2 .. max_num_nodes, a prior favouring more vertices), ``op<i>`` (the
operation of interior vertex ``i``) and ``input<i>`` (the set of earlier vertices feeding vertex
``i``; the output vertex is ``num_nodes - 1``). Labels of vertices beyond ``num_nodes`` are
listed but unused by the rebuilt cell.

The rebuilt cell follows the paper: vertices not on an input-to-output path are pruned; interior
vertices feeding the output split its channels (concatenated), others take the widest of their
successors; the input reaches a vertex through ``projection(in_features, channels)`` and the
output through a projection added to the concatenation. An arch that leaves the output
unreachable, or uses more than ``max_num_edges`` edges, raises
:class:`~nasx.space.ConstraintViolation` when the cell is rebuilt (a failed trial; filter such
archs earlier with an experiment ``Filter`` when many are expected).

    >>> import torch, torch.nn as nn
    >>> from nasx.space import model_context
    >>> ops = {'conv1x1': lambda c: nn.Conv2d(c, c, 1), 'relu': lambda c: nn.ReLU()}
    >>> proj = lambda i, o: nn.Conv2d(i, o, 1)
    >>> arch = {'c/num_nodes': 4, 'c/op1': 'conv1x1', 'c/op2': 'relu',
    ...         'c/input1': [0], 'c/input2': [0], 'c/input3': [1, 2]}
    >>> with model_context(arch, strict=False):
    ...     cell = NasBench101Cell(ops, 16, 32, proj, max_num_nodes=4, label='c')
    >>> cell.channels, cell(torch.randn(1, 16, 4, 4)).shape
    ([16, 16, 16, 32], torch.Size([1, 32, 4, 4]))
"""

# No ``from __future__ import annotations``: TorchScript reads the class-body annotations of
# NasBench101CellFixed as real types.
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch
import torch.nn as nn

from .base import MutableModule
from .choice import Categorical, CategoricalMultiple, Choice
from .context import resolve
from .errors import ConstraintViolation
from .labels import current_path, label_scope

OpFactory = Callable[[int], nn.Module]
Projection = Callable[[int, int], nn.Module]


def _ops_dict(op_candidates: Sequence[OpFactory] | Mapping[str, OpFactory]) -> dict[str, OpFactory]:
    if isinstance(op_candidates, Mapping):
        ops = dict(op_candidates)
    else:
        ops = {str(i): op for i, op in enumerate(op_candidates)}
    if not ops:
        raise ValueError("NasBench101Cell needs at least one operation candidate")
    bad = [k for k, op in ops.items() if not callable(op)]
    if bad:
        raise TypeError(
            f"NasBench101Cell op candidates must be callables num_features -> module; {bad!r} are not"
        )
    return ops


def _decisions(
    ops: Mapping[str, OpFactory], max_num_nodes: int
) -> tuple[Categorical, list[Categorical], list[CategoricalMultiple]]:
    """``num_nodes``, ``op<i>`` and ``input<i>`` choices, labelled in the current scope."""
    prior = [2.0**i for i in range(2, max_num_nodes + 1)]
    # default 2 (NNI's: the first value): the default arch, input -> output, is a valid cell
    num_nodes = Categorical(
        list(range(2, max_num_nodes + 1)),
        label="num_nodes",
        weights=[p / sum(prior) for p in prior],
    )
    op_choices = [Categorical(list(ops), label=f"op{i}") for i in range(1, max_num_nodes - 1)]
    inputs = [
        CategoricalMultiple(range(i), n_chosen=None, label=f"input{i}")
        for i in range(1, max_num_nodes)
    ]
    return num_nodes, op_choices, inputs


def _check(max_num_nodes: int, max_num_edges: int) -> None:
    if not isinstance(max_num_nodes, int) or max_num_nodes < 2:
        raise ValueError(
            f"NasBench101Cell max_num_nodes must be an int >= 2, got {max_num_nodes!r}"
        )
    if not isinstance(max_num_edges, int) or max_num_edges < 1:
        raise ValueError(
            f"NasBench101Cell max_num_edges must be an int >= 1, got {max_num_edges!r}"
        )


def prune(inputs: list[list[int]]) -> list[int]:
    """The vertices on some input-to-output path, in order (``inputs[v]``: sources of vertex v).

    >>> prune([[], [0], [], [1, 2]])  # vertex 2 has no input: pruned
    [0, 1, 3]
    """
    n = len(inputs)
    from_input = {0}
    for v in range(1, n):
        if any(s in from_input for s in inputs[v]):
            from_input.add(v)
    to_output = {n - 1}
    for v in range(n - 1, -1, -1):
        if v in to_output:
            to_output.update(inputs[v])
    return [v for v in range(n) if v in from_input and v in to_output]


def vertex_channels(in_features: int, out_features: int, inputs: list[list[int]]) -> list[int]:
    """Channels of every vertex of a pruned cell, by NAS-Bench-101's rule.

    Interior vertices feeding the output share its channels (the first ones get the remainder);
    any other interior vertex takes the widest of the vertices it feeds.

    >>> vertex_channels(16, 5, [[], [0], [0], [1, 2]])
    [16, 3, 2, 5]
    >>> vertex_channels(8, 8, [[], [0], [1], [2]])
    [8, 8, 8, 8]
    """
    n = len(inputs)
    channels = [0] * n
    channels[0], channels[-1] = in_features, out_features
    feeds_out = [v for v in inputs[-1] if v != 0]
    if n == 2 or not feeds_out:
        return channels
    share, extra = divmod(out_features, len(feeds_out))
    for k, v in enumerate(sorted(feeds_out)):
        channels[v] = share + (1 if k < extra else 0)
    for v in range(n - 2, 0, -1):
        if v not in feeds_out:
            channels[v] = max(channels[d] for d in range(v + 1, n - 1) if v in inputs[d])
    return channels


class NasBench101CellFixed(nn.Module):
    """The rebuilt cell: plain modules and lists of ints (it scripts with TorchScript)."""

    # Declared in the class body, not in __init__: TorchScript reads attribute types here (an
    # empty list would otherwise be typed List[Tensor]).
    channels: list[int]
    sources: list[list[int]]
    from_input: list[bool]
    out_sources: list[int]
    out_from_input: bool

    def __init__(
        self,
        ops: list[OpFactory],
        inputs: list[list[int]],
        in_features: int,
        out_features: int,
        projection: Projection,
    ):
        super().__init__()
        keep = prune(inputs)
        if len(keep) < 2 or keep[0] != 0 or keep[-1] != len(inputs) - 1:
            raise ConstraintViolation(
                f"NasBench101Cell: the output is not reachable from the input (inputs {inputs!r})"
            )
        index = {v: i for i, v in enumerate(keep)}
        pruned = [[index[s] for s in inputs[v] if s in index] for v in keep]
        self.channels = vertex_channels(in_features, out_features, pruned)
        interior = range(1, len(keep) - 1)
        # Vertex t's sources other than the input, and whether the input feeds it.
        self.sources = [[s for s in pruned[t] if s != 0] for t in interior]
        self.from_input = [0 in pruned[t] for t in interior]
        self.out_sources = [s for s in pruned[-1] if s != 0]
        self.out_from_input = 0 in pruned[-1]
        self.ops = nn.ModuleList(ops[keep[t] - 1](self.channels[t]) for t in interior)
        self.projections = nn.ModuleList(
            projection(in_features, self.channels[t]) if self.from_input[t - 1] else nn.Identity()
            for t in interior
        )
        self.out_projection = (
            projection(in_features, out_features) if self.out_from_input else nn.Identity()
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        tensors = [x]
        for t, (op, proj) in enumerate(zip(self.ops, self.projections)):
            width = self.channels[t + 1]
            added = [tensors[s][:, :width] for s in self.sources[t]]  # truncate wider vertices
            if self.from_input[t]:
                added.append(proj(x))
            tensors.append(op(torch.stack(added).sum(0)))
        if not self.out_sources:  # the input feeds the output directly, alone
            out: torch.Tensor = self.out_projection(x)
            return out
        out = torch.cat([tensors[s] for s in self.out_sources], 1)
        if self.out_from_input:
            out = out + self.out_projection(x)
        return out


class NasBench101Cell(MutableModule):
    """A NAS-Bench-101 cell whose graph and operations are searched (see the module docstring).

    Args:
        op_candidates: callables ``num_features -> module`` (a list: values ``'0'``, ``'1'``, ...;
            a dict: its keys).
        in_features, out_features: channels of the cell's input and output.
        projection: ``(in_features, out_features) -> module``, applied to the input wherever it
            feeds a vertex (a 1x1 conv-BN-ReLU in the paper).
        max_num_nodes: at most this many vertices, input and output included (7 in the paper).
        max_num_edges: at most this many edges (9 in the paper).
        label: the scope of the cell's labels (None: the enclosing scope's next number);
            ``.label`` is the scope's full name, as NNI's.

    The search form's ``forward`` runs the default arch (every vertex, each fed by all earlier
    ones: rebuild a sampled arch to train it). Its choices are plain data for any strategy.
    """

    def __init__(
        self,
        op_candidates: Sequence[OpFactory] | Mapping[str, OpFactory],
        in_features: int,
        out_features: int,
        projection: Projection,
        max_num_nodes: int = 7,
        max_num_edges: int = 9,
        label: str | None = None,
    ):
        super().__init__()
        _check(max_num_nodes, max_num_edges)
        ops = _ops_dict(op_candidates)
        with label_scope(label) if label is not None else label_scope():
            self.label = "/".join(current_path())
            self.num_nodes, self.op_choices, self.input_choices = _decisions(ops, max_num_nodes)
        self.max_num_edges = max_num_edges
        # The default arch rebuilt, so the search form runs (edges beyond the limit allowed here).
        self.default_cell = NasBench101CellFixed(
            [ops[c.default] for c in self.op_choices],
            [[], *[list(c.default) for c in self.input_choices]],
            in_features,
            out_features,
            projection,
        )

    @classmethod
    def create_fixed_module(
        cls,
        op_candidates: Sequence[OpFactory] | Mapping[str, OpFactory],
        in_features: int,
        out_features: int,
        projection: Projection,
        max_num_nodes: int = 7,
        max_num_edges: int = 9,
        label: str | None = None,
    ) -> NasBench101CellFixed:
        _check(max_num_nodes, max_num_edges)
        ops = _ops_dict(op_candidates)
        with label_scope(label) if label is not None else label_scope():
            num_nodes_choice, op_choices, input_choices = _decisions(ops, max_num_nodes)
            n = resolve(num_nodes_choice)
            chosen_ops = [ops[resolve(c)] for c in op_choices[: n - 2]]
            inputs = [[], *[list(resolve(c)) for c in input_choices[: n - 1]]]
        edges = sum(len(i) for i in inputs)
        if edges > max_num_edges:
            raise ConstraintViolation(
                f"NasBench101Cell {num_nodes_choice.label.rsplit('/', 1)[0]!r}: the arch has {edges} "
                f"edges, more than max_num_edges={max_num_edges}"
            )
        return NasBench101CellFixed(chosen_ops, inputs, in_features, out_features, projection)

    def choices(self) -> list[Choice]:
        return [self.num_nodes, *self.op_choices, *self.input_choices]

    def forward(self, x: torch.Tensor) -> Any:
        return self.default_cell(x)
