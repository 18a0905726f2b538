"""DARTS genotypes <-> nasx/NNI arch dicts for the cell-based (NDS) spaces.

A *genotype* is the DARTS code base's way to write a cell pair: for each cell type a flat list of
``(operation, input_node)`` pairs, two per node, plus the nodes concatenated into the output.
An *arch* is the same information under NNI's labels: ``normal/op_2_0`` (operation of the first
edge of node 2) and ``normal/input_2_0`` (its input, a one-element list).

    >>> g = Genotype(normal=[('sep_conv_3x3', 0), ('skip_connect', 1)], normal_concat=[2],
    ...              reduce=[('max_pool_3x3', 0), ('max_pool_3x3', 1)], reduce_concat=[2])
    >>> arch = genotype_to_arch(g)
    >>> arch['normal/op_2_0'], arch['normal/input_2_1']
    ('sep_conv_3x3', [1])
    >>> arch_to_genotype(arch) == g
    True
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from nasx.space.cell import CELL_LABEL_PATTERN, cell_input_label, cell_op_label

CELL_TYPES = ("normal", "reduce")
NUM_PREDECESSORS = 2


class Genotype(NamedTuple):
    """A DARTS genotype: ``[(op, input_node), ...]`` (two per node) and the concatenated nodes."""

    normal: list[tuple[str, int]]
    normal_concat: list[int]
    reduce: list[tuple[str, int]]
    reduce_concat: list[int]


def _loose_ends(edges: Sequence[tuple[str, int]]) -> list[int]:
    num_nodes = len(edges) // 2
    used = {inp for _, inp in edges}
    return [n for n in range(NUM_PREDECESSORS, NUM_PREDECESSORS + num_nodes) if n not in used]


def concat_of(edges: Sequence[tuple[str, int]], merge_op: str) -> list[int]:
    """The output nodes of a cell with these edges under ``merge_op`` (``'all'``/``'loose_end'``).

    Example:
        >>> concat_of([('a', 0), ('b', 1), ('c', 2), ('d', 0)], 'loose_end')
        [3]
    """
    if merge_op == "all":
        return list(range(NUM_PREDECESSORS, NUM_PREDECESSORS + len(edges) // 2))
    if merge_op == "loose_end":
        return _loose_ends(edges)
    raise ValueError(f"merge_op must be 'all' or 'loose_end', got {merge_op!r}")


def merge_op_of(genotype: Genotype) -> str:
    """``'all'`` or ``'loose_end'``: the merge rule that reproduces the genotype's concat lists.

    Raises ValueError when neither does (such a genotype cannot be expressed in an NDS space).

    Example:
        >>> merge_op_of(Genotype([('a', 0), ('b', 1)], [2], [('a', 0), ('b', 1)], [2]))
        'all'
    """
    for merge_op in ("all", "loose_end"):
        if all(
            list(getattr(genotype, f"{t}_concat")) == concat_of(getattr(genotype, t), merge_op)
            for t in CELL_TYPES
        ):
            return merge_op
    raise ValueError(
        f"genotype concatenates {list(genotype.normal_concat)} / {list(genotype.reduce_concat)}, which is "
        "neither every node ('all') nor the unused nodes ('loose_end')"
    )


def genotype_to_arch(genotype: Genotype) -> dict[str, Any]:
    """The NNI-style arch of a genotype (labels ``normal/op_<node>_<k>``, ``normal/input_<node>_<k>``).

    Example:
        >>> from nasx.hub.searched_archs import DARTS_V2
        >>> genotype_to_arch(DARTS_V2)['normal/op_5_1']
        'dil_conv_3x3'
    """
    merge_op_of(genotype)  # refuse concat lists that no NDS space can build
    arch: dict[str, Any] = {}
    for cell in CELL_TYPES:
        edges = getattr(genotype, cell)
        if len(edges) % 2:
            raise ValueError(
                f"genotype {cell} cell has {len(edges)} edges; two per node are needed"
            )
        for i, (op, inp) in enumerate(edges):
            node, k = NUM_PREDECESSORS + i // 2, i % 2
            if not 0 <= inp < node:
                raise ValueError(
                    f"genotype {cell} edge {i} of node {node} reads node {inp}; allowed 0..{node - 1}"
                )
            arch[cell_op_label(cell, node, k)] = op
            arch[cell_input_label(cell, node, k)] = [inp]
    return arch


def arch_to_genotype(arch: Mapping[str, Any], merge_op: str = "all") -> Genotype:
    """The genotype of an NDS arch; labels other than cell edges (``width``, ``depth``) are ignored.

    ``merge_op`` is the space's (``'all'`` for DARTS and PNAS, ``'loose_end'`` for NASNet, ENAS,
    AmoebaNet); it decides the concat lists. Inputs may be ``[j]`` or a bare ``j``.
    """
    parsed: dict[str, dict[tuple[int, int], dict[str, Any]]] = {t: {} for t in CELL_TYPES}
    for label, value in arch.items():
        m = CELL_LABEL_PATTERN.match(label)
        if not m or m.group("cell") not in CELL_TYPES:
            continue
        cell, kind, node, k = (
            m.group("cell"),
            m.group("kind"),
            int(m.group("node")),
            int(m.group("k")),
        )
        if kind == "input":
            value = list(value) if isinstance(value, (list, tuple)) else [value]
            if len(value) != 1:
                raise ValueError(
                    f"arch label {label!r} must choose exactly one input, got {value!r}"
                )
            value = value[0]
        parsed[cell].setdefault((node, k), {})[kind] = value
    cells = {}
    for cell in CELL_TYPES:
        edges_by_key = parsed[cell]
        if not edges_by_key:
            raise ValueError(f"arch has no {cell!r} cell labels (expected '{cell}/op_2_0', ...)")
        num_nodes = max(node for node, _ in edges_by_key) - NUM_PREDECESSORS + 1
        edges = []
        for node in range(NUM_PREDECESSORS, NUM_PREDECESSORS + num_nodes):
            for k in range(2):
                entry = edges_by_key.get((node, k), {})
                if set(entry) != {"op", "input"}:
                    raise ValueError(
                        f"arch lacks '{cell}/op_{node}_{k}' or '{cell}/input_{node}_{k}'"
                    )
                edges.append((entry["op"], int(entry["input"])))
        cells[cell] = edges
    return Genotype(
        cells["normal"],
        concat_of(cells["normal"], merge_op),
        cells["reduce"],
        concat_of(cells["reduce"], merge_op),
    )


# ENAS writes a cell as "x_id x_op y_id y_op" per node; op ids index this list (micro_child.py).
ENAS_OP_IDS = ["sep_conv_3x3", "sep_conv_5x5", "avg_pool_3x3", "max_pool_3x3", "skip_connect"]


def enas_fixed_arc_to_genotype(normal_arc: str, reduce_arc: str) -> Genotype:
    """Translate ENAS's ``--child_fixed_arc`` halves (normal, reduction) into a genotype.

    ENAS concatenates the nodes no other node reads, i.e. ``merge_op='loose_end'``.

    Example:
        >>> g = enas_fixed_arc_to_genotype('0 4 1 0', '1 3 0 2')
        >>> g.normal, g.reduce_concat
        ([('skip_connect', 0), ('sep_conv_3x3', 1)], [2])
    """
    cells = []
    for text in (normal_arc, reduce_arc):
        numbers = [int(t) for t in text.split()]
        if len(numbers) % 4:
            raise ValueError(
                f"an ENAS cell arc has 4 numbers per node, got {len(numbers)}: {text!r}"
            )
        edges = []
        for i in range(0, len(numbers), 4):
            x_id, x_op, y_id, y_op = numbers[i : i + 4]
            edges += [(ENAS_OP_IDS[x_op], x_id), (ENAS_OP_IDS[y_op], y_id)]
        cells.append(edges)
    return Genotype(
        cells[0], concat_of(cells[0], "loose_end"), cells[1], concat_of(cells[1], "loose_end")
    )
