"""Pictures of a search: cells of an arch, and charts of an experiment's trials.

Names load lazily, so ``import nasx.plot`` does not import matplotlib or graphviz.

    >>> from nasx.plot import plot_cell, plot_double_cells
    >>> plot_cell.__module__
    'nasx.plot.cells'
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from nasx._lazy import lazy_attributes

_LAZY_NAMES = {
    "plot_cell": "nasx.plot.cells",
    "plot_double_cells": "nasx.plot.cells",
    "dot_available": "nasx.plot.cells",
    "cell_graph": "nasx.plot.graph",
    "cell_names": "nasx.plot.graph",
    "CellGraph": "nasx.plot.graph",
    "plot_metric_history": "nasx.plot.charts",
    "plot_pareto": "nasx.plot.charts",
    "plot_learning_curves": "nasx.plot.charts",
    "plot_arch_weights": "nasx.plot.charts",
    "arch_weight_history": "nasx.plot.charts",
    "pareto_front": "nasx.plot.charts",
    "running_best": "nasx.plot.charts",
    "show": "nasx.plot.display",
    "in_notebook": "nasx.plot.display",
}

__all__ = list(_LAZY_NAMES)

# What type checkers and IDEs see: the names of _LAZY_NAMES, imported eagerly
# by them only (tests/test_typing.py checks that the lists agree).
if TYPE_CHECKING:
    from nasx.plot.cells import dot_available as dot_available
    from nasx.plot.cells import plot_cell as plot_cell
    from nasx.plot.cells import plot_double_cells as plot_double_cells
    from nasx.plot.charts import arch_weight_history as arch_weight_history
    from nasx.plot.charts import pareto_front as pareto_front
    from nasx.plot.charts import plot_arch_weights as plot_arch_weights
    from nasx.plot.charts import plot_learning_curves as plot_learning_curves
    from nasx.plot.charts import plot_metric_history as plot_metric_history
    from nasx.plot.charts import plot_pareto as plot_pareto
    from nasx.plot.charts import running_best as running_best
    from nasx.plot.display import in_notebook as in_notebook
    from nasx.plot.display import show as show
    from nasx.plot.graph import CellGraph as CellGraph
    from nasx.plot.graph import cell_graph as cell_graph
    from nasx.plot.graph import cell_names as cell_names

__getattr__, __dir__ = lazy_attributes(__name__, _LAZY_NAMES, globals())
