"""Cell: a DARTS-style cell, a small DAG whose edges (inputs and operations) are choices.

Nodes are numbered after the predecessors: with ``num_predecessors=2`` the inputs are nodes 0
and 1 and the chosen nodes are 2, 3, ... Node ``i`` sums ``num_ops_per_node`` operations, each
applied to one earlier node. Labels follow NNI: ``<cell>/op_<i>_<k>`` (the operation) and
``<cell>/input_<i>_<k>`` (which earlier node feeds it, a one-element list such as ``[0]``).
"""

from __future__ import annotations

import copy
import inspect
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch
import torch.nn as nn

from .choice import Categorical
from .context import current_arch, resolve
from .input_choice import ChosenInputs, InputChoice
from .labels import ResolvedLabel, make_label
from .layer_choice import LayerChoice

OpFactory = Callable[[int, int, "int | None"], nn.Module]
MERGE_OPS = ("all", "loose_end")


def _as_factory(name: Any, candidate: nn.Module | Callable[..., nn.Module]) -> OpFactory:
    if isinstance(candidate, nn.Module):
        return _CopyOf(candidate)
    if not callable(candidate):
        raise TypeError(
            f"Cell op candidate {name!r} must be a module or a callable, got {type(candidate).__name__}"
        )
    n_params = len(inspect.signature(candidate).parameters)
    if n_params != 3:
        raise TypeError(
            f"Cell op candidate {name!r} must take (node_index, op_index, input_index), "
            f"but it takes {n_params} argument(s)"
        )
    return candidate


# NNI's label format for a cell's edges, written once (the hub's genotype conversion parses it).
CELL_LABEL_PATTERN = re.compile(r"^(?P<cell>.+)/(?P<kind>op|input)_(?P<node>\d+)_(?P<k>\d+)$")


def cell_op_label(cell: str, node: int, k: int) -> str:
    """The label of the operation of the ``k``-th edge into ``node`` of cell ``cell``.

    >>> cell_op_label('normal', 2, 0), cell_input_label('normal', 2, 0)
    ('normal/op_2_0', 'normal/input_2_0')
    >>> CELL_LABEL_PATTERN.match('reduce/input_3_1').group('cell', 'kind', 'node', 'k')
    ('reduce', 'input', '3', '1')
    """
    return f"{cell}/op_{node}_{k}"


def cell_input_label(cell: str, node: int, k: int) -> str:
    """The label of the input choice of the ``k``-th edge into ``node`` of cell ``cell``."""
    return f"{cell}/input_{node}_{k}"


class _CopyOf:
    """Factory that deep-copies a template module (picklable, unlike a lambda)."""

    def __init__(self, template: nn.Module):
        self.template = template

    def __call__(self, node_index: int, op_index: int, input_index: int | None) -> nn.Module:
        return copy.deepcopy(self.template)


class _KeepThisCell(nn.Module):
    """Default postprocessor: the cell's output is the merged node outputs."""

    def forward(self, this_cell: torch.Tensor, inputs: list[torch.Tensor]) -> torch.Tensor:
        return this_cell


class _ListIdentity(nn.Module):
    """Default preprocessor: the inputs as they are."""

    def forward(self, inputs: list[torch.Tensor]) -> list[torch.Tensor]:
        return list(inputs)


def _as_input_list(
    x0: torch.Tensor | list[torch.Tensor],
    x1: torch.Tensor | None,
    x2: torch.Tensor | None,
    x3: torch.Tensor | None,
) -> list[torch.Tensor]:
    """The cell's inputs as one list, from ``cell([a, b])`` or ``cell(a, b)`` (TorchScript-able)."""
    if isinstance(x0, torch.Tensor):
        inputs = [x0]
        for x in (x1, x2, x3):
            if x is not None:
                inputs.append(x)
        return inputs
    if x1 is not None or x2 is not None or x3 is not None:
        raise ValueError("give a Cell its inputs as separate tensors or as one list, not both")
    return list(x0)


class Cell(nn.Module):
    """A DARTS-style cell whose node inputs and operations are chosen.

    Args:
        op_candidates: the operations, as a list (values are indices) or dict (values are keys) of
            modules (deep-copied for each edge) or factories
            ``f(node_index, op_index, input_index) -> nn.Module``; ``input_index`` is the chosen
            input node, or None in the search form (it lets a reduction cell give stride 2 only to
            edges that start at a cell input).
        num_nodes: number of chosen nodes.
        num_ops_per_node: operations (each with its own input) summed into a node.
        num_predecessors: number of cell inputs.
        merge_op: ``'all'`` concatenates every chosen node's output; ``'loose_end'`` only those
            that no other node uses.
        preprocessor: module mapping the list of inputs to a list of as many tensors.
        postprocessor: module called as ``postprocessor(merged, inputs)``; its result is returned.
        concat_dim: dimension of the concatenation.
        label: the cell's label, prefix of its choices' labels (the scope's next number when omitted, as in NNI).

    The cell is the same class in the search form and in a fixed model: under
    :func:`~nasx.space.model_context` its LayerChoices and InputChoices come out fixed.

    Example:
        >>> import torch, torch.nn as nn
        >>> from nasx.space import Cell, model_context, search_space
        >>> ops = {'conv': lambda node, op, inp: nn.Conv2d(4, 4, 3, padding=1),
        ...        'skip': lambda node, op, inp: nn.Identity()}
        >>> cell = Cell(ops, num_nodes=2, num_predecessors=2, label='normal')
        >>> sorted(search_space(cell))
        ['normal/input_2_0', 'normal/input_3_0', 'normal/op_2_0', 'normal/op_3_0']
        >>> cell(torch.randn(1, 4, 8, 8), torch.randn(1, 4, 8, 8)).shape
        torch.Size([1, 8, 8, 8])
    """

    def __init__(
        self,
        op_candidates: Sequence[nn.Module | Callable[..., nn.Module]]
        | Mapping[str, nn.Module | Callable[..., nn.Module]],
        num_nodes: int,
        num_ops_per_node: int = 1,
        num_predecessors: int = 1,
        merge_op: str = "all",
        preprocessor: nn.Module | None = None,
        postprocessor: nn.Module | None = None,
        concat_dim: int = 1,
        *,
        label: str | None = None,
    ):
        super().__init__()
        if merge_op not in MERGE_OPS:
            raise ValueError(f"Cell merge_op must be one of {MERGE_OPS}, got {merge_op!r}")
        for name, value in (
            ("num_nodes", num_nodes),
            ("num_ops_per_node", num_ops_per_node),
            ("num_predecessors", num_predecessors),
        ):
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"Cell {name} must be a positive int, got {value!r}")
        if isinstance(op_candidates, Mapping):
            items = list(op_candidates.items())
        else:
            items = list(enumerate(op_candidates))  # type: ignore[arg-type]  # int keys: indices
        if not items:
            raise ValueError("Cell needs at least one op candidate")
        self.op_factories: dict[Any, OpFactory] = {k: _as_factory(k, c) for k, c in items}
        self._keyed = isinstance(op_candidates, Mapping)
        self.label = make_label(label, "cell")
        self.num_nodes = num_nodes
        self.num_ops_per_node = num_ops_per_node
        self.num_predecessors = num_predecessors
        self.merge_op = merge_op
        self.concat_dim = concat_dim
        self.preprocessor = preprocessor if preprocessor is not None else _ListIdentity()
        self.postprocessor = postprocessor if postprocessor is not None else _KeepThisCell()

        # ops[n][k] / inputs[n][k]: the k-th operation of chosen node n (node index n + num_predecessors).
        self.ops = nn.ModuleList()
        self.inputs = nn.ModuleList()
        for node in range(num_predecessors, num_predecessors + num_nodes):
            node_ops, node_inputs = nn.ModuleList(), nn.ModuleList()
            for k in range(num_ops_per_node):
                pick = InputChoice(
                    node, 1, label=ResolvedLabel(cell_input_label(self.label, node, k))
                )
                input_index = pick.chosen[0] if isinstance(pick, ChosenInputs) else None
                node_inputs.append(pick)
                node_ops.append(self._edge_op(node, k, input_index))
            self.ops.append(node_ops)
            self.inputs.append(node_inputs)
        self.output_node_indices = self._output_nodes()

    def _edge_op(self, node: int, op_index: int, input_index: int | None) -> nn.Module:
        """The operation of edge (node, op_index): a LayerChoice, or only the chosen op when fixed."""
        label = ResolvedLabel(cell_op_label(self.label, node, op_index))
        if current_arch() is not None:
            # Build just the chosen candidate: a DARTS network has ~280 edges x 7 ops otherwise.
            chosen = resolve(Categorical(list(self.op_factories), label=label, _kind="layerchoice"))
            return self.op_factories[chosen](node, op_index, input_index)
        built = {k: f(node, op_index, input_index) for k, f in self.op_factories.items()}
        return LayerChoice(built if self._keyed else list(built.values()), label=label)

    def edge_inputs(self) -> list[list[list[int]]]:
        """``[node][k] -> chosen input nodes`` (the default ones in the search form)."""
        return [
            [
                pick.chosen if isinstance(pick, ChosenInputs) else pick.choice.default
                for pick in node_inputs  # type: ignore[attr-defined]  # a ModuleList
            ]
            for node_inputs in self.inputs
        ]

    def _output_nodes(self) -> list[int]:
        """Chosen nodes (0-based, among the cell's own nodes) whose outputs are concatenated."""
        if self.merge_op == "all":
            return list(range(self.num_nodes))
        used = {i for node in self.edge_inputs() for edge in node for i in edge}
        return [n for n in range(self.num_nodes) if n + self.num_predecessors not in used]

    # Explicit inputs rather than ``*inputs``, and no return annotation: TorchScript compiles
    # neither varargs nor `Any`, and infers the return type from this instance's postprocessor
    # (a tensor by default, a list such as ``[prev, this]`` in the hub's cells). Five or more
    # inputs are passed as one list.
    def forward(  # type: ignore[no-untyped-def]
        self,
        x0: torch.Tensor | list[torch.Tensor],
        x1: torch.Tensor | None = None,
        x2: torch.Tensor | None = None,
        x3: torch.Tensor | None = None,
    ):
        """Run the cell on its inputs: ``cell(x0, x1, ...)`` or ``cell([x0, x1, ...])``."""
        inputs = _as_input_list(x0, x1, x2, x3)
        if len(inputs) != self.num_predecessors:
            raise ValueError(
                f"Cell '{self.label}' expects {self.num_predecessors} inputs, got {len(inputs)}"
            )
        states: list[torch.Tensor] = self.preprocessor(inputs)
        for node_ops, node_inputs in zip(self.ops, self.inputs):
            # a node sums its edges, each an op applied to its chosen input (node_ops and
            # node_inputs are ModuleLists, typed as plain Modules: the ignore below; its code must
            # end the line, or TorchScript reads it as a signature)
            node: torch.Tensor | None = None
            for op, pick in zip(node_ops, node_inputs):  # type: ignore[call-overload]
                edge = op(pick(states))
                node = edge if node is None else node + edge
            assert node is not None  # num_ops_per_node >= 1 (checked in __init__)
            states.append(node)
        merged = torch.cat(
            [states[self.num_predecessors + n] for n in self.output_node_indices], self.concat_dim
        )
        return self.postprocessor(merged, inputs)

    def extra_repr(self) -> str:
        return f"label={self.label!r}, num_nodes={self.num_nodes}, merge_op={self.merge_op!r}"
