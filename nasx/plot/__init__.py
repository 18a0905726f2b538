"""Pictures of a search: cells of an arch, and charts of an experiment's trials.

Names load lazily, so ``import nasx.plot`` does not import matplotlib or graphviz.

    >>> from nasx.plot import plot_cell, plot_double_cells
    >>> plot_cell.__module__
    'nasx.plot.cells'
"""

from __future__ import annotations

from nasx._lazy import lazy_attributes

_LAZY_NAMES = {
    "plot_cell": "nasx.plot.cells",
    "plot_double_cells": "nasx.plot.cells",
    "dot_available": "nasx.plot.cells",
    "cell_graph": "nasx.plot.cell_graph",
    "cell_names": "nasx.plot.cell_graph",
    "CellGraph": "nasx.plot.cell_graph",
    "plot_metric_history": "nasx.plot.charts",
    "plot_pareto": "nasx.plot.charts",
    "plot_learning_curves": "nasx.plot.charts",
    "plot_arch_weights": "nasx.plot.charts",
    "arch_weight_history": "nasx.plot.charts",
    "pareto_front": "nasx.plot.charts",
    "running_best": "nasx.plot.charts",
}

__all__ = list(_LAZY_NAMES)

__getattr__, __dir__ = lazy_attributes(__name__, _LAZY_NAMES, globals())
