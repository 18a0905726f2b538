"""MixedCell: a Cell as a DARTS supernet cell, where node i has an edge from every earlier node.

Edge ``(i, j)`` holds one module per op value, built with ``cell.op_factories[value](i, 0, j)``
(so a reduction cell can give stride 2 to edges leaving a cell input), under child names
``edges.<i>_<j>.<value>``. In mixture mode every edge runs its ops weighted by the alpha
``'<cell>/edge_<i>_<j>'``; in path mode node i sums the ops that the arch's ``<cell>/op_<i>_<k>``
and ``<cell>/input_<i>_<k>`` pick. Export keeps, per node, the ``num_ops_per_node`` incoming edges
whose strongest non-'none' op weighs most, as DARTS does.

With ``partial_channels=K`` (PC-DARTS, Xu et al. ICLR 2020) each edge's ops see only the first
C/K channels (built by ``factory.partial(K)``, a method op factories may offer) and the others
bypass the edge, followed by a channel shuffle: less memory and compute per search step. Such a
supernet searches only; the exported arch is rebuilt and trained from scratch.
"""

from __future__ import annotations

from typing import Any, cast

import torch
import torch.nn as nn
import torch.nn.functional as F

from nasx.space.cell import Cell

from .batched_edges import batched_mixture
from .mixed import NONE_OPS, thunk, weighted_sum
from .state import ArchState, gated


def channel_shuffle(x: torch.Tensor, groups: int) -> torch.Tensor:
    """Interleave ``groups`` channel groups: [B, C, H, W] -> [B, C, H, W] (ShuffleNet, PC-DARTS)."""
    b, c, h, w = x.shape
    return x.view(b, groups, c // groups, h, w).transpose(1, 2).reshape(b, c, h, w)


def _partial_factory(label: str, value: Any, factory: Any, k: int) -> Any:
    if not hasattr(factory, "partial"):
        raise TypeError(
            f"partial_channels={k} needs op factories that can build ops on 1/{k} of the channels: "
            f"cell {label!r} op {value!r} is {type(factory).__name__} without a .partial(k) method "
            "(see tutorials/darts_space.py's OpFactory)"
        )
    return factory.partial(k)


class MixedCell(nn.Module):
    """Replaces a :class:`~nasx.space.Cell` inside a supernet: a DARTS cell, where node ``i``
    has an edge from every earlier node and each edge one module per op value.

    In mixture mode every edge runs its ops weighted by the alpha ``'<cell>/edge_<i>_<j>'``; in
    path mode each node sums the ops the arch picks. Export keeps, per node, the
    ``num_ops_per_node`` incoming edges whose strongest non-``'none'`` op weighs most, as DARTS
    does. With ``partial_channels=K`` (PC-DARTS) each edge's ops see only the first ``C/K``
    channels and the others bypass the edge.
    """

    _state: ArchState  # the supernet's shared forward-time state (a plain object)

    def __init__(
        self,
        cell: Cell,
        state: ArchState,
        none_ops: tuple[str, ...] = NONE_OPS,
        partial_channels: int = 1,
    ):
        super().__init__()
        self.label = cell.label
        self.num_nodes, self.num_ops_per_node = cell.num_nodes, cell.num_ops_per_node
        self.num_predecessors, self.merge_op, self.concat_dim = (
            cell.num_predecessors,
            cell.merge_op,
            cell.concat_dim,
        )
        self.values = list(cell.op_factories)
        self.preprocessor = cell.preprocessor
        self.postprocessor = cell.postprocessor
        self.partial_channels = partial_channels
        factories = cell.op_factories
        if partial_channels > 1:
            factories = {
                v: _partial_factory(cell.label, v, f, partial_channels)
                for v, f in factories.items()
            }
        self.edges = nn.ModuleDict()
        for i in self.node_indices:
            for j in range(i):
                self.edges[f"{i}_{j}"] = nn.ModuleDict(
                    {str(v): f(i, 0, j) for v, f in factories.items()}
                )
        self.__dict__["_state"] = state
        self._skip = [isinstance(v, str) and v in none_ops for v in self.values]
        # Mixture mode runs the edges leaving the same states as one wide op per candidate
        # (batched_edges.py): the same function in fewer, larger kernels. False: edge by edge.
        self.batch_edges = True
        self.batch_plans: list[Any] | None = None  # batched_edges' plan, made at the first forward

    @property
    def node_indices(self) -> range:
        return range(self.num_predecessors, self.num_predecessors + self.num_nodes)

    def edge_key(self, i: int, j: int) -> str:
        return f"{self.label}/edge_{i}_{j}"

    def alpha_keys(self) -> list[tuple[str, int]]:
        """``[(alpha key, number of ops)]`` of mixture mode, one per edge."""
        return [
            (self.edge_key(i, j), len(self.values)) for i in self.node_indices for j in range(i)
        ]

    def op(self, i: int, j: int, value: Any) -> nn.Module:
        # each edge is a ModuleDict of its ops (ModuleDict's indexing is typed as plain Module)
        return cast(nn.ModuleDict, self.edges[f"{i}_{j}"])[str(value)]

    def forward(self, *inputs: torch.Tensor | list[torch.Tensor]) -> Any:
        if len(inputs) == 1 and isinstance(inputs[0], (list, tuple)):
            inputs = tuple(inputs[0])
        if len(inputs) != self.num_predecessors:
            raise ValueError(
                f"Cell {self.label!r} expects {self.num_predecessors} inputs, got {len(inputs)}"
            )
        st: ArchState = self._state
        states = self.preprocessor(list(inputs))  # each [B, C, H, W]
        if (
            self.batch_edges
            and not st.path_mode
            and self.partial_channels == 1
            and not st.checkpoint
        ):
            states = batched_mixture(self, states, st)  # same values, fewer and larger kernels
            outputs = self._output_nodes(st)
            merged = torch.cat(
                [states[self.num_predecessors + n] for n in outputs], self.concat_dim
            )
            return self.postprocessor(merged, list(inputs))
        for i in self.node_indices:
            states.append(
                self._path_node(i, states, st) if st.path_mode else self._mixed_node(i, states, st)
            )
        outputs = self._output_nodes(st)
        merged = torch.cat([states[self.num_predecessors + n] for n in outputs], self.concat_dim)
        return self.postprocessor(merged, list(inputs))

    def _mixed_node(self, i: int, states: list[torch.Tensor], st: ArchState) -> torch.Tensor:
        node: torch.Tensor | None = None
        for j in range(i):
            x = states[j]  # [B, C, H, W]
            if self.partial_channels > 1:  # PC-DARTS: ops see C/K channels, the rest bypass
                x, bypass = (
                    x[:, : x.shape[1] // self.partial_channels],
                    x[:, x.shape[1] // self.partial_channels :],
                )
            run = [
                (k, thunk(self.op(i, j, v), x))
                for k, v in enumerate(self.values)
                if not self._skip[k]
            ]
            edge = weighted_sum(st.weight(self.edge_key(i, j)), run, st)
            if self.partial_channels > 1:
                if edge.shape[-1] != bypass.shape[-1]:  # a stride-2 edge: pool the bypass too
                    bypass = F.max_pool2d(bypass, 2, 2, ceil_mode=True)
                edge = channel_shuffle(torch.cat([edge, bypass], 1), self.partial_channels)
            node = edge if node is None else node + edge
        if node is None:
            raise ValueError(f"cell {self.label!r}: node {i} has no incoming edge")
        return node

    def _path_node(self, i: int, states: list[torch.Tensor], st: ArchState) -> torch.Tensor:
        if self.partial_channels > 1:
            raise RuntimeError(
                f"cell {self.label!r} has partial-channel edges (a DARTS search option): it runs as a "
                "mixture only; rebuild the exported arch with model_context to run one path"
            )
        node: torch.Tensor | None = None
        for k in range(self.num_ops_per_node):
            op_label, in_label = f"{self.label}/op_{i}_{k}", f"{self.label}/input_{i}_{k}"
            value, (j,) = st.value(op_label), st.value(in_label)
            out = self.op(i, j, value)(states[j])

            # Proxyless gates: other ops on the same input, the same op on other inputs.
            # (j and value bound as defaults: the gate calls them later, in backward.)
            def other_op(n: int, j: int = j) -> torch.Tensor:
                alternative: torch.Tensor = self.op(i, j, self.values[n])(states[j])
                return alternative

            def other_input(n: int, v: Any = value) -> torch.Tensor:
                alternative: torch.Tensor = self.op(i, n, v)(states[n])
                return alternative

            out = gated(out, st, op_label, other_op)
            out = gated(out, st, in_label, other_input)
            node = out if node is None else node + out
        if node is None:
            raise ValueError(f"cell {self.label!r}: node {i} has no incoming edge")
        return node

    def _output_nodes(self, st: ArchState) -> list[int]:
        # Every node, in every mode: with NNI's 'loose_end' merge the fixed model concatenates
        # only the nodes no other node reads, but a supernet path doing so would change the
        # width the next cell's fixed-size preprocessor receives (and fail). The supernet keeps
        # one width; subnet() gives the layers after the cell the channel blocks of the arch's
        # loose-end nodes (inherit.py, where the space names those layers: NDS.cell_readers).
        return list(range(self.num_nodes))

    def _edge_strength(self, probs: torch.Tensor) -> tuple[float, int]:
        """(weight, index) of the strongest non-'none' op of one edge."""
        masked = probs.clone()
        masked[[k for k, s in enumerate(self._skip) if s]] = -1.0
        k = int(masked.argmax())
        return float(masked[k]), k

    def export(self, probs: dict[str, torch.Tensor]) -> dict[str, Any]:
        arch = {}
        for i in self.node_indices:
            ranked = sorted(
                ((*self._edge_strength(probs[self.edge_key(i, j)]), j) for j in range(i)),
                reverse=True,
            )
            for k in range(self.num_ops_per_node):
                _, op_index, j = ranked[k % len(ranked)]
                arch[f"{self.label}/op_{i}_{k}"] = self.values[op_index]
                arch[f"{self.label}/input_{i}_{k}"] = [j]
        return arch

    def export_probs(self, probs: dict[str, torch.Tensor]) -> dict[str, dict[Any, float]]:
        """Per label: ``op_i_k`` the op weights of the k-th kept edge; ``input_i_k`` the edges'
        strengths (strongest non-'none' op weight), normalised over the node's inputs."""
        out: dict[str, dict[Any, float]] = {}
        for i in self.node_indices:
            strength = {j: self._edge_strength(probs[self.edge_key(i, j)])[0] for j in range(i)}
            ranked = sorted(strength, key=lambda j: -strength[j])
            total = sum(strength.values()) or 1.0
            for k in range(self.num_ops_per_node):
                j = ranked[k % len(ranked)]
                out[f"{self.label}/op_{i}_{k}"] = {
                    v: float(p)
                    for v, p in zip(self.values, probs[self.edge_key(i, j)], strict=False)
                }
                out[f"{self.label}/input_{i}_{k}"] = {n: s / total for n, s in strength.items()}
        return out

    def extra_repr(self) -> str:
        return f"label={self.label!r}, num_nodes={self.num_nodes}, ops={self.values!r}"
