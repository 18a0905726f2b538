"""Cell pictures: ``plot_cell`` (a graphviz graph) and ``plot_double_cells`` (a matplotlib figure).

Both draw the :class:`~nasx.plot.graph.CellGraph` of an arch: cell inputs in green, chosen
nodes in blue, the concatenated output in yellow, each edge labelled with its operation. When
graphviz's ``dot`` program is missing they draw with matplotlib alone and warn once.

    >>> from nasx.hub.searched_archs import DARTS_V2
    >>> fig = plot_double_cells(DARTS_V2, backend='matplotlib')
    >>> [ax.get_title() for ax in fig.axes]
    ['normal', 'reduce']
"""

from __future__ import annotations

import io
import shutil
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

from nasx._optional import is_installed, optional_import

from .graph import CellGraph, cell_graph

BACKENDS = ("auto", "graphviz", "matplotlib")
_COLORS = {"input": "darkseagreen2", "node": "lightblue", "output": "palegoldenrod"}
_MPL_COLORS = {"input": "#b4eeb4", "node": "#add8e6", "output": "#eee8aa"}
_warned_no_dot = False


def dot_available() -> bool:
    """Whether graphviz's ``dot`` program is on the PATH (the Python package alone cannot render)."""
    return shutil.which("dot") is not None


def _resolve_backend(backend: str) -> str:
    global _warned_no_dot
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    if backend == "graphviz" and not dot_available():
        raise RuntimeError(
            "backend='graphviz' needs graphviz's 'dot' program, which is not on the PATH: "
            "install graphviz (apt-get install graphviz, brew install graphviz) or use backend='matplotlib'"
        )
    if backend != "auto":
        return backend
    dot, package = dot_available(), is_installed("graphviz")  # both are needed
    if dot and package:
        return "graphviz"
    if not _warned_no_dot:
        _warned_no_dot = True
        missing = (
            "graphviz's 'dot' program is not installed"
            if not dot
            else 'graphviz\'s Python package is not installed (pip install "nasx[plot]")'
        )
        warnings.warn(
            f"{missing}: drawing cells with matplotlib instead "
            "(install graphviz for the usual layout)",
            stacklevel=3,
        )
    return "matplotlib"


def plot_cell(
    arch: Mapping[str, Any] | Any,
    cell: str | None = None,
    *,
    merge_op: str = "all",
    backend: str = "auto",
    format: str = "png",  # noqa: A002 - graphviz's own name for it
):
    """Draw one cell of an arch.

    Args:
        arch: an arch dict with cell labels (``normal/op_2_0``, ``normal/input_2_0`` with ``[0]``
            or ``0``; or NAS-Bench-201's ``cell/0_1``), or a DARTS ``Genotype``.
        cell: the cell's label prefix (``'normal'``, ``'reduce'``); optional for a one-cell arch.
        merge_op: ``'all'`` (DARTS, PNAS) or ``'loose_end'`` (NASNet, ENAS, AmoebaNet): which
            nodes feed the output.
        backend: ``'graphviz'``, ``'matplotlib'`` or ``'auto'`` (graphviz when ``dot`` is
            installed, else matplotlib with one warning).
        format: the graphviz output format used by ``render`` and in notebooks.

    Returns:
        A ``graphviz.Digraph`` (shows inline in Jupyter; ``g.render(outfile='cell.png')`` saves
        PNG, SVG or PDF), or with matplotlib a ``matplotlib.figure.Figure``
        (``fig.savefig('cell.png')``).

    Example:
        >>> g = plot_cell({'cell/0_1': 'conv_3x3', 'cell/0_2': 'none', 'cell/1_2': 'skip_connect'},
        ...               backend='matplotlib')
        >>> g.axes[0].get_title()
        'cell'
    """
    graph = cell_graph(arch, cell, merge_op)
    if _resolve_backend(backend) == "graphviz":
        return to_digraph(graph, format=format)
    plt = optional_import("matplotlib.pyplot", "plot", "drawing cells")

    fig, ax = plt.subplots(figsize=_mpl_size(graph))
    draw_cell_mpl(graph, ax)
    fig.tight_layout()
    plt.close(fig)  # returned, not shown: the caller saves or displays it
    return fig


def plot_double_cells(
    arch: Mapping[str, Any] | Any,
    cells: Sequence[str] = ("normal", "reduce"),
    *,
    merge_op: str = "all",
    backend: str = "auto",
    figsize: tuple[float, float] | None = None,
):
    """The normal and reduction cells side by side, as one matplotlib figure.

    With graphviz each cell is laid out by ``dot`` and shown as an image; without it (or with
    ``backend='matplotlib'``) matplotlib draws the graphs itself. Arguments as in
    :func:`plot_cell`; ``cells`` picks other label prefixes.

    Example:
        >>> from nasx.hub.searched_archs import DARTS_V1
        >>> plot_double_cells(DARTS_V1, backend='matplotlib').get_size_inches().tolist()
        [14.0, 4.5]
    """
    plt = optional_import("matplotlib.pyplot", "plot", "drawing cells")

    graphs = [cell_graph(arch, c, merge_op) for c in cells]
    backend = _resolve_backend(backend)
    if backend == "graphviz":
        mpimg = optional_import("matplotlib.image", "plot", "drawing cells")

        images = [
            mpimg.imread(
                io.BytesIO(to_digraph(g, format="png", title=False).pipe(format="png")),
                format="png",
            )
            for g in graphs
        ]
        # One scale for all cells: axes as wide as their image, all as tall as the tallest.
        widths = [img.shape[1] for img in images]
        height = max(img.shape[0] for img in images)
        size = figsize or (min(16.0, sum(widths) / 80), min(6.0, height / 80 + 0.6))
        fig, axes = plt.subplots(1, len(graphs), figsize=size, gridspec_kw={"width_ratios": widths})
        axes = [axes] if len(graphs) == 1 else list(axes)
        for graph, ax, img in zip(graphs, axes, images, strict=True):
            h, w = img.shape[:2]
            ax.imshow(img, extent=(0, w, h, 0))
            ax.set_xlim(0, w)
            ax.set_ylim(height, 0)
            ax.set_axis_off()
            ax.set_title(plain(graph.name))
    else:
        fig, axes = plt.subplots(1, len(graphs), figsize=figsize or (7.0 * len(graphs), 4.5))
        axes = [axes] if len(graphs) == 1 else list(axes)
        for graph, ax in zip(graphs, axes, strict=True):
            draw_cell_mpl(graph, ax)
    fig.tight_layout()
    plt.close(fig)
    return fig


# ----------------------------------------------------------------------------- graphviz
def to_digraph(graph: CellGraph, format: str = "png", title: bool = True):  # noqa: A002
    """The cell as a ``graphviz.Digraph`` (left to right, DARTS's colours; ``title``: the cell's name).

    Example:
        >>> from nasx.plot.graph import cell_graph
        >>> g = to_digraph(cell_graph({'c/op_1_0': 'conv', 'c/op_2_0': 'pool', 'c/input_2_0': [1]}))
        >>> print(g.source.splitlines()[0])
        digraph c {
    """
    graphviz = optional_import("graphviz", "plot", "drawing cells with graphviz")

    g = graphviz.Digraph(
        graph.name,
        format=format,
        graph_attr={"rankdir": "LR", "fontsize": "20", "fontname": "times"},
        node_attr={
            "style": "filled",
            "shape": "rect",
            "align": "center",
            "fontsize": "20",
            "height": "0.5",
            "width": "0.5",
            "penwidth": "2",
            "fontname": "times",
        },
        edge_attr={"fontsize": "16", "fontname": "times"},
    )
    if title:
        g.attr(label=graphviz.escape(graph.name))
    # graphviz.escape: a value such as '<b>' is text, not one of graphviz's HTML-like labels.
    for name in graph.inputs:
        g.node(_gv_id(name), label=graphviz.escape(name), fillcolor=_COLORS["input"])
    for name in graph.nodes:
        is_out = graph.output_node is None and name in graph.outputs
        g.node(
            _gv_id(name),
            label=graphviz.escape(name),
            fillcolor=_COLORS["output" if is_out else "node"],
        )
    for src, dst, op in graph.edges:
        g.edge(_gv_id(src), _gv_id(dst), label=graphviz.escape(op), fillcolor="gray")
    if graph.output_node is not None:
        g.node(_gv_id(graph.output_node), label=graph.output_node, fillcolor=_COLORS["output"])
        for name in graph.outputs:
            g.edge(_gv_id(name), _gv_id(graph.output_node), fillcolor="gray")
    return g


def plain(text: str) -> str:
    """``text`` for matplotlib as it is: a ``$`` would otherwise start a formula."""
    return str(text).replace("$", r"\$")


def _gv_id(name: str) -> str:
    # Node ids with braces must be quoted; graphviz quotes ids itself, the prefix keeps them apart.
    return f"n_{name}"


# ----------------------------------------------------------------------------- matplotlib
# Without graphviz a cell is drawn as an arc diagram: every node on one line (inputs, chosen
# nodes, output), each edge a half-ellipse above the line whose height grows with its length.
# Two labels can only meet if their edges join the same two nodes, so no layout search is needed.
_ARC_HEIGHT = 0.42  # apex height per node spanned


def _mpl_order(graph: CellGraph) -> list[str]:
    order = [*graph.inputs, *graph.nodes]
    return order + ([graph.output_node] if graph.output_node is not None else [])


def _mpl_size(graph: CellGraph) -> tuple[float, float]:
    n = len(_mpl_order(graph))
    return (max(4.0, 1.25 * n), 1.2 + 0.9 * _ARC_HEIGHT * (n - 1))


def draw_cell_mpl(graph: CellGraph, ax) -> None:
    """Draw a cell into a matplotlib ``Axes`` (no graphviz needed) as an arc diagram."""
    Arc = optional_import("matplotlib.patches", "plot", "drawing cells").Arc

    order = _mpl_order(graph)
    x = {name: float(i) for i, name in enumerate(order)}
    outputs = set(graph.outputs) if graph.output_node is None else set()
    seen: dict[tuple[str, str], int] = {}
    top = 0.0
    for src, dst, op in graph.edges:
        repeat = seen.get((src, dst), 0)
        seen[(src, dst)] = repeat + 1
        x0, x1 = x[src], x[dst]
        h = _ARC_HEIGHT * (x1 - x0) + 0.18 * repeat
        top = max(top, h)
        ax.add_patch(
            Arc(((x0 + x1) / 2, 0.0), x1 - x0, 2 * h, theta1=0, theta2=180, color="#555555", lw=1.2)
        )
        ax.plot([x1], [0.2], marker="v", color="#555555", markersize=5, zorder=2)
        ax.text(
            (x0 + x1) / 2,
            h,
            plain(op),
            ha="center",
            va="center",
            fontsize=8,
            zorder=3,
            bbox={"boxstyle": "round,pad=0.15", "fc": "white", "ec": "none"},
        )
    if graph.output_node is not None:  # concatenation edges, below the line and unlabelled
        for name in graph.outputs:
            x0, x1 = x[name], x[graph.output_node]
            h = 0.3 * (x1 - x0) ** 0.5
            ax.add_patch(
                Arc(
                    ((x0 + x1) / 2, 0.0),
                    x1 - x0,
                    2 * h,
                    theta1=180,
                    theta2=360,
                    color="#999999",
                    lw=1,
                )
            )
    for name in order:
        if name in graph.inputs:
            color = _MPL_COLORS["input"]
        elif name == graph.output_node or name in outputs:
            color = _MPL_COLORS["output"]
        else:
            color = _MPL_COLORS["node"]
        ax.text(
            x[name],
            0.0,
            plain(name),
            ha="center",
            va="center",
            fontsize=10,
            family="serif",
            zorder=4,
            bbox={"boxstyle": "square,pad=0.35", "fc": color, "ec": "black", "lw": 1.4},
        )
    ax.set_xlim(-0.6, len(order) - 0.4)
    ax.set_ylim(-0.75, top + 0.35)
    ax.set_title(plain(graph.name))
    ax.set_axis_off()
