"""Charts for the dashboard as SVG bytes (matplotlib's Agg-free SVG backend, one lock: pyplot is
not thread-safe). Each chart is the figure of :mod:`nasx.plot` that ``nasx plot`` writes.

    >>> from pathlib import Path
    >>> from nasx.experiment.readonly import ExperimentRecord
    >>> from nasx.trial import Trial
    >>> exp = ExperimentRecord(Path('.'), 'multi-trial', {}, [Trial(0, {'k': 1}, 'succeeded', metric=0.5)])
    >>> chart(exp, 'history', {})[:5]
    b'<?xml'
"""

from __future__ import annotations

import io
import threading
from typing import Any

from nasx._optional import optional_import
from nasx.experiment.readonly import ExperimentRecord

CHART_PARAMS = ("metric", "x", "y", "trial", "cell")
CHARTS = ("history", "pareto", "curves", "arch_weights", "trial_curve", "cells")
_lock = threading.Lock()


def warm_up() -> None:
    """Import matplotlib and draw once, so that the first page view is quick."""
    with _lock:
        matplotlib = optional_import("matplotlib", "dashboard", "the dashboard's charts")

        matplotlib.use("Agg", force=False)
        plt = optional_import("matplotlib.pyplot", "dashboard", "the dashboard's charts")

        fig, ax = plt.subplots()
        fig.savefig(io.BytesIO(), format="svg")
        plt.close(fig)


def chart(exp: ExperimentRecord, name: str, params: dict[str, str]) -> bytes:
    """The SVG of chart ``name`` (one of :data:`CHARTS`) for ``exp``; KeyError for unknown names."""
    if name not in CHARTS:
        raise KeyError(f"chart {name!r}")
    with _lock:
        matplotlib = optional_import("matplotlib", "dashboard", "the dashboard's charts")

        matplotlib.use("Agg", force=False)
        fig = _figure(exp, name, params)
        buf = io.BytesIO()
        fig.savefig(buf, format="svg", bbox_inches="tight")
    return buf.getvalue()


def _figure(exp: ExperimentRecord, name: str, params: dict[str, str]) -> Any:
    plt = optional_import("matplotlib.pyplot", "dashboard", "the dashboard's charts")

    from nasx.plot import charts

    if name == "history":
        return charts.plot_metric_history(
            exp.trials, params.get("metric", "default"), exp.direction
        )
    if name == "pareto":
        x = params.get("x")
        if not x:
            others = [m for m in charts.metric_names(exp.trials) if m != "default"]
            if not others:
                return _message(
                    "only one metric: report a dict such as {'default': acc, 'latency': ms}"
                )
            x = others[0]
        return charts.plot_pareto(
            exp.trials, x, params.get("y", "default"), ("minimize", exp.direction)
        )
    if name == "curves":
        return charts.plot_learning_curves(exp.trials, top_k=10, direction=exp.direction)
    if name == "arch_weights":
        try:
            return charts.plot_arch_weights(exp.directory, max_labels=8)
        except FileNotFoundError as e:
            return _message(str(e))
    trial = exp.trial(_int(params.get("trial")))
    if name == "trial_curve":
        fig, ax = plt.subplots(figsize=(4.5, 2.8))
        plt.close(fig)
        if trial.intermediates:
            ax.plot(range(1, len(trial.intermediates) + 1), trial.intermediates, marker="o")
        ax.set_title(f"trial {trial.id}: intermediate metrics")
        ax.set_xlabel("report")
        ax.grid(alpha=0.3)
        return fig
    from nasx.plot.cell_graph import cell_names
    from nasx.plot.cells import dot_available, plot_double_cells

    cells = cell_names(trial.arch)
    if not cells:
        return _message("this arch has no cells")
    merge_op = "loose_end" if params.get("cell") == "loose_end" else "all"
    backend = "graphviz" if dot_available() else "matplotlib"  # no warning in a server thread
    return plot_double_cells(trial.arch, cells=cells, merge_op=merge_op, backend=backend)


def _int(value: str | None) -> int:
    if value is None or not (value.isascii() and value.isdigit()):
        raise ValueError(f"trial must be a trial id (an integer), got {value!r}")
    return int(value)


def _message(text: str):
    plt = optional_import("matplotlib.pyplot", "dashboard", "the dashboard's charts")

    fig, ax = plt.subplots(figsize=(5, 1.2))
    plt.close(fig)
    ax.text(0.5, 0.5, text.replace("$", r"\$"), ha="center", va="center", wrap=True, fontsize=9)
    ax.set_axis_off()
    return fig
