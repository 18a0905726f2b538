"""CellGraph: the DAG of one cell read out of an arch dict, ready to draw.

Two label schemes are understood, the ones the hub and :class:`~nasx.space.Cell` write:

- DARTS-style cells (``Cell``, and the hub's DARTS, NASNet, ENAS, AmoebaNet, PNAS spaces):
  ``<cell>/op_<node>_<k>`` names the operation of the k-th edge into ``node`` and
  ``<cell>/input_<node>_<k>`` the node it reads (``[j]`` as NNI writes it, or a bare ``j``).
- NAS-Bench-201 cells: ``<cell>/<j>_<i>`` names the operation on edge ``j -> i``; ``'none'``
  edges carry nothing and are left out.

    >>> arch = {'normal/op_2_0': 'sep_conv_3x3', 'normal/input_2_0': [0],
    ...         'normal/op_2_1': 'skip_connect', 'normal/input_2_1': 1}
    >>> g = cell_graph(arch, 'normal')
    >>> g.inputs, g.nodes, g.outputs
    (['c_{k-2}', 'c_{k-1}'], ['0'], ['0'])
    >>> g.edges
    [('c_{k-2}', '0', 'sep_conv_3x3'), ('c_{k-1}', '0', 'skip_connect')]
    >>> cell_names({'normal/op_2_0': 'a', 'reduce/op_2_0': 'b', 'width': 16})
    ['normal', 'reduce']
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

_DARTS_LABEL = re.compile(r"^(?P<cell>.+)/(?P<kind>op|input)_(?P<node>\d+)_(?P<k>\d+)$")
_NB201_LABEL = re.compile(r"^(?P<cell>.+)/(?P<j>\d+)_(?P<i>\d+)$")
MERGE_OPS = ("all", "loose_end")
OUTPUT = "c_{k}"


@dataclass
class CellGraph:
    """One cell as a graph: input names, node names, ``(src, dst, op)`` edges, output nodes.

    ``outputs`` are the nodes concatenated into ``c_{k}``; ``output_node`` is None when a node
    of the cell is itself the output (NAS-Bench-201).
    """

    name: str
    inputs: list[str]
    nodes: list[str]
    edges: list[tuple[str, str, str]]
    outputs: list[str]
    output_node: str | None = OUTPUT
    kind: str = field(default="darts")


def cell_names(arch: Mapping[str, Any]) -> list[str]:
    """The cells an arch describes (label prefixes with cell edges), in first-seen order."""
    names: list[str] = []
    for label in arch:
        m = _DARTS_LABEL.match(label) or _NB201_LABEL.match(label)
        if m and m.group("cell") not in names:
            names.append(m.group("cell"))
    return names


def cell_graph(
    arch: Mapping[str, Any], cell: str | None = None, merge_op: str = "all"
) -> CellGraph:
    """The graph of ``cell`` (a label prefix such as ``'normal'``) in ``arch``.

    Args:
        arch: an arch dict (other labels such as ``width`` are ignored), or a DARTS ``Genotype``.
        cell: which cell; may be left out when the arch has only one.
        merge_op: ``'all'`` (DARTS, PNAS: every node feeds the output) or ``'loose_end'``
            (NASNet, ENAS, AmoebaNet: only nodes no other node reads).
    """
    arch = _as_arch(arch)
    if merge_op not in MERGE_OPS:
        raise ValueError(f"merge_op must be one of {MERGE_OPS}, got {merge_op!r}")
    names = cell_names(arch)
    if not names:
        raise ValueError(
            "the arch has no cell labels: expected '<cell>/op_<node>_<k>' with '<cell>/input_<node>_<k>' "
            f"(DARTS-style) or '<cell>/<j>_<i>' (NAS-Bench-201); got {sorted(arch)[:6]}"
        )
    if cell is None:
        if len(names) > 1:
            raise ValueError(f"the arch has several cells {names}: say which one to draw")
        cell = names[0]
    if cell not in names:
        raise ValueError(f"the arch has no cell {cell!r}; its cells are {names}")
    prefix = cell + "/"
    own = {k[len(prefix) :]: v for k, v in arch.items() if k.startswith(prefix)}
    if any(re.fullmatch(r"op_\d+_\d+", k) for k in own):
        return _darts_graph(cell, own, merge_op)
    return _nb201_graph(cell, own)


def _as_arch(arch: Any) -> Mapping[str, Any]:
    if hasattr(arch, "_fields") and "normal_concat" in arch._fields:  # a DARTS Genotype
        from nasx.hub.genotypes import genotype_to_arch

        return genotype_to_arch(arch)
    if not isinstance(arch, Mapping):
        raise TypeError(
            f"arch must be a dict of label -> value (or a Genotype), got {type(arch).__name__}"
        )
    return arch


def _darts_graph(cell: str, own: Mapping[str, Any], merge_op: str) -> CellGraph:
    ops: dict[tuple[int, int], Any] = {}
    picks: dict[tuple[int, int], int] = {}
    for key, value in own.items():
        m = re.fullmatch(r"(op|input)_(\d+)_(\d+)", key)
        if not m:
            continue
        where = (int(m.group(2)), int(m.group(3)))
        if m.group(1) == "op":
            ops[where] = value
        else:
            chosen = list(value) if isinstance(value, (list, tuple)) else [value]
            if len(chosen) != 1 or not isinstance(chosen[0], int):
                raise ValueError(
                    f"label '{cell}/{key}' must choose one input node (like [0] or 0), got {value!r}"
                )
            picks[where] = chosen[0]
    # The first chosen node is numbered after the cell inputs (Cell's num_predecessors).
    first = min(node for node, _ in ops)
    last = max(node for node, _ in ops)
    inputs = ["c_{k-2}", "c_{k-1}"] if first == 2 else [f"in_{j}" for j in range(first)]

    def name(j: int) -> str:
        return inputs[j] if j < first else str(j - first)

    edges = []
    used = set()
    for (node, k), op in sorted(ops.items()):
        # A node with one possible input (node 1 of a one-input cell) has no input label.
        src = picks.get((node, k), 0 if node == 1 else None)
        if src is None:
            raise ValueError(
                f"the arch has '{cell}/op_{node}_{k}' but no '{cell}/input_{node}_{k}'"
            )
        if not 0 <= src < node:
            raise ValueError(
                f"label '{cell}/input_{node}_{k}' reads node {src}; allowed 0..{node - 1}"
            )
        used.add(src)
        edges.append((name(src), name(node), str(op)))
    nodes = [name(n) for n in range(first, last + 1)]
    if merge_op == "all":
        outputs = list(nodes)
    else:
        outputs = [name(n) for n in range(first, last + 1) if n not in used]
    return CellGraph(cell, inputs, nodes, edges, outputs)


def _nb201_graph(cell: str, own: Mapping[str, Any]) -> CellGraph:
    edges = []
    top = 0
    for key, op in own.items():
        m = re.fullmatch(r"(\d+)_(\d+)", key)
        if not m:
            continue
        j, i = int(m.group(1)), int(m.group(2))
        top = max(top, i)
        if str(op) != "none":
            edges.append((j, i, str(op)))
    edges.sort(key=lambda e: (e[1], e[0]))
    nodes = [str(n) for n in range(1, top + 1)]
    return CellGraph(
        cell,
        inputs=["0"],
        nodes=nodes,
        edges=[(str(j), str(i), op) for j, i, op in edges],
        outputs=[str(top)],
        output_node=None,
        kind="nb201",
    )
