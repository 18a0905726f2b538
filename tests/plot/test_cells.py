"""plot_cell / plot_double_cells on every cell space of the hub, with and without graphviz."""

import warnings

import matplotlib
import pytest

matplotlib.use("Agg")

from nasx.hub import DARTS, ENAS, PNAS, AmoebaNet, NasBench201, NASNet  # noqa: E402
from nasx.hub.searched_archs import DARTS_V2  # noqa: E402
from nasx.plot import cells  # noqa: E402
from nasx.plot.cells import dot_available, plot_cell, plot_double_cells  # noqa: E402
from nasx.space import search_space  # noqa: E402

needs_dot = pytest.mark.skipif(
    not dot_available(), reason="graphviz's dot program is not installed"
)

SPACES = {
    "DARTS": (lambda: DARTS(width=4, num_cells=3), "all"),
    "NASNet": (lambda: NASNet(width=4, num_cells=3), "loose_end"),
    "ENAS": (lambda: ENAS(width=4, num_cells=3), "loose_end"),
    "AmoebaNet": (lambda: AmoebaNet(width=4, num_cells=3), "loose_end"),
    "PNAS": (lambda: PNAS(width=4, num_cells=3), "all"),
}


@pytest.mark.parametrize("name", sorted(SPACES))
def test_hub_cell_spaces_plot_with_matplotlib(name, tmp_path):
    make, merge_op = SPACES[name]
    arch = search_space(make()).sample(seed=0)
    fig = plot_double_cells(arch, merge_op=merge_op, backend="matplotlib")
    assert [ax.get_title() for ax in fig.axes] == ["normal", "reduce"]
    # Every edge's operation is written on the picture, one label per edge.
    ops = sorted(v for k, v in arch.items() if k.startswith("normal/op_"))
    nodes = {"c_{k-2}", "c_{k-1}", "c_{k}"} | {str(i) for i in range(len(ops) // 2)}
    assert sorted(t.get_text() for t in fig.axes[0].texts if t.get_text() not in nodes) == ops
    fig.savefig(tmp_path / "cells.png")
    assert (tmp_path / "cells.png").stat().st_size > 1000


def test_nb201_cell_plots_with_matplotlib():
    arch = search_space(NasBench201(stem_out_channels=4, num_modules_per_stack=1)).sample(seed=1)
    fig = plot_cell(arch, backend="matplotlib")
    labels = [t.get_text() for t in fig.axes[0].texts]
    for op in (v for v in arch.values() if v != "none"):
        assert op in labels


@needs_dot
def test_graphviz_digraph_renders_png_svg_pdf(tmp_path):
    g = plot_cell(DARTS_V2, "normal", backend="graphviz")
    assert "sep_conv_3x3" in g.source and g.source.count("->") == 8 + 4  # 8 edges, 4 to the output
    for fmt in ("png", "svg", "pdf"):
        out = g.render(outfile=tmp_path / f"normal.{fmt}", cleanup=True)
        assert (tmp_path / f"normal.{fmt}").stat().st_size > 500, out
    assert "image/svg+xml" in g._repr_mimebundle_(include=["image/svg+xml"])


@needs_dot
def test_double_cells_with_graphviz_shows_two_images():
    fig = plot_double_cells(DARTS_V2, backend="graphviz")
    assert [len(ax.images) for ax in fig.axes] == [1, 1]


def test_missing_dot_falls_back_to_matplotlib_with_one_warning(monkeypatch):
    monkeypatch.setattr(cells.shutil, "which", lambda name: None)
    monkeypatch.setattr(cells, "_warned_no_dot", False)
    with pytest.warns(UserWarning, match="'dot' program is not installed"):
        fig = plot_cell(DARTS_V2, "normal")
    assert fig.axes[0].get_title() == "normal"
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a second drawing stays quiet
        plot_double_cells(DARTS_V2)
    with pytest.raises(RuntimeError, match="install graphviz"):
        plot_cell(DARTS_V2, "normal", backend="graphviz")


def test_backend_checked():
    with pytest.raises(ValueError, match="backend must be one of"):
        plot_cell(DARTS_V2, "normal", backend="svgwrite")
