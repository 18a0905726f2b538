"""Charts for the dashboard as SVG bytes (matplotlib's Agg-free SVG backend, one lock: pyplot is
not thread-safe). Each chart is the figure of :mod:`nasx.plot` that ``nasx plot`` writes, up to
:data:`AGGREGATE_ABOVE` trials (2,000; 300 for learning curves); above that, metric by trial,
the Pareto chart and the learning curves draw summaries (:mod:`nasx.dashboard.aggregate`:
quantile bands, density, the exact best and front), so that a chart of 20,000 trials is drawn
in a fraction of a second and weighs tens of kilobytes, not megabytes.

    >>> from pathlib import Path
    >>> from nasx.experiment.storage.readonly import ExperimentRecord
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
from nasx.experiment.storage.readonly import ExperimentRecord
from nasx.trial import PAUSED, PRUNED

CHART_PARAMS = ("metric", "x", "y", "trial", "cell")
# Above this many trials a chart draws summaries rather than one mark per trial: a scatter
# point costs matplotlib about 60 us to draw, a learning curve about 1 ms.
AGGREGATE_ABOVE = {"history": 2000, "pareto": 2000, "curves": 300}
_FIXED_LAYOUT = "nasx-fixed-layout"  # the label of a figure whose margins are set already
_BINS = 200  # bins of trials in the metric-by-trial chart: about one per 2-3 pixels
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


def check(exp: ExperimentRecord, name: str, params: dict[str, str]) -> None:
    """Raise what :func:`chart` would for an unknown chart (KeyError), a malformed trial id
    (ValueError) or an unknown trial (ExperimentReadError), without drawing or waiting for the
    charts being drawn: a bad request is answered at once.

    >>> from pathlib import Path
    >>> check(ExperimentRecord(Path('.'), 'multi-trial'), 'trial_curve', {'trial': 'x'})
    Traceback (most recent call last):
    ...
    ValueError: trial must be a trial id (an integer), got 'x'
    """
    if name not in CHARTS:
        raise KeyError(f"chart {name!r}")
    if name in ("trial_curve", "cells"):
        exp.trial(_int(params.get("trial")))
    if name == "pareto":
        _x_direction(params)


def chart(exp: ExperimentRecord, name: str, params: dict[str, str]) -> bytes:
    """The SVG of chart ``name`` (one of :data:`CHARTS`) for ``exp``; KeyError for unknown names."""
    check(exp, name, params)
    with _lock:
        matplotlib = optional_import("matplotlib", "dashboard", "the dashboard's charts")

        matplotlib.use("Agg", force=False)
        fig = _figure(exp, name, params)
        buf = io.BytesIO()
        # a summary chart has fixed margins: fitting them to the labels draws the figure twice
        tight = fig.get_label() != _FIXED_LAYOUT
        fig.savefig(buf, format="svg", bbox_inches="tight" if tight else None)
    return buf.getvalue()


def _figure(exp: ExperimentRecord, name: str, params: dict[str, str]) -> Any:
    """The matplotlib figure of chart ``name`` (one of :data:`CHARTS`)."""
    large = len(exp.trials) > AGGREGATE_ABOVE.get(name, len(exp.trials))
    return _DRAW[name](exp, params, large)


def _history_figure(exp: ExperimentRecord, params: dict[str, str], large: bool) -> Any:
    from nasx.plot import charts

    metric = params.get("metric", "default")
    if large:
        return _history_summary(exp, metric)
    return charts.plot_metric_history(exp.trials, metric, exp.direction)


def _pareto_figure(exp: ExperimentRecord, params: dict[str, str], large: bool) -> Any:
    from nasx.plot import charts

    x = params.get("x")
    if not x:
        others = [m for m in charts.metric_names(exp.trials) if m != "default"]
        if not others:
            return _message(
                "only one metric: report a dict such as {'default': acc, 'latency': ms}"
            )
        x = others[0]
    y = params.get("y", "default")
    directions = (_x_direction(params) or guess_direction(x), exp.direction)
    if large:
        return _pareto_summary(exp, x, y, directions)
    return charts.plot_pareto(exp.trials, x, y, directions)


#: words of a metric's name (split at ``_`` and ``-``) that make it a cost, lower is better:
#: whole words, and prefixes of longer ones ("params", "flops", "latency_p90")
_COST_WORDS = frozenset(
    "ms us ns s sec time mac macs size mem mb gb kb bytes err mse mae rmse cost".split()
)
_COST_PREFIXES = ("latency", "param", "flop", "energy", "memor", "loss", "error", "duration")


def guess_direction(metric: str) -> str:
    """Which way metric ``metric`` is better when the page does not say (``xdir``): a cost
    (latency, time, params, FLOPs, MACs, size, memory, energy, loss, error) is minimized,
    anything else (accuracy, F1, reward ...) maximized.

    >>> [guess_direction(m) for m in ('latency_ms', 'num_params', 'val_loss', 'macs')]
    ['minimize', 'minimize', 'minimize', 'minimize']
    >>> [guess_direction(m) for m in ('top1', 'macro_f1', 'accuracy', 'default')]
    ['maximize', 'maximize', 'maximize', 'maximize']
    """
    words = metric.lower().replace("-", "_").split("_")
    cost = any(w in _COST_WORDS or w.startswith(_COST_PREFIXES) for w in words)
    return "minimize" if cost else "maximize"


def _x_direction(params: dict[str, str]) -> str | None:
    """The Pareto chart's ``xdir`` (None: not given); ValueError names the allowed values."""
    xdir = params.get("xdir") or None
    if xdir not in (None, "minimize", "maximize"):
        raise ValueError(f"xdir must be 'minimize' or 'maximize', got {xdir!r}")
    return xdir


def _curves_figure(exp: ExperimentRecord, params: dict[str, str], large: bool) -> Any:
    from nasx.plot import charts

    if large:
        return _curves_summary(exp)
    return charts.plot_learning_curves(exp.trials, top_k=10, direction=exp.direction)


def _arch_weights_figure(exp: ExperimentRecord, params: dict[str, str], large: bool) -> Any:
    from nasx.plot import charts

    try:
        return charts.plot_arch_weights(exp.directory, max_labels=8)
    except FileNotFoundError as e:
        return _message(str(e))


def _trial_curve_figure(exp: ExperimentRecord, params: dict[str, str], large: bool) -> Any:
    plt = optional_import("matplotlib.pyplot", "dashboard", "the dashboard's charts")

    trial = exp.trial(_int(params.get("trial")))
    fig, ax = plt.subplots(figsize=(4.5, 2.8))
    plt.close(fig)
    if trial.intermediates:
        ax.plot(range(1, len(trial.intermediates) + 1), trial.intermediates, marker="o")
    stopped = (
        f" ({trial.status} at budget {trial.budget})" if trial.status in (PRUNED, PAUSED) else ""
    )
    ax.set_title(f"trial {trial.id}: intermediate metrics{stopped}")
    ax.set_xlabel("report")
    ax.grid(alpha=0.3)
    return fig


def _cells_figure(exp: ExperimentRecord, params: dict[str, str], large: bool) -> Any:
    from nasx.plot.cells import dot_available, plot_double_cells
    from nasx.plot.graph import cell_names

    trial = exp.trial(_int(params.get("trial")))
    cells = cell_names(trial.arch)
    if not cells:
        return _message("this arch has no cells")
    merge_op = "loose_end" if params.get("cell") == "loose_end" else "all"
    backend = "graphviz" if dot_available() else "matplotlib"  # no warning in a server thread
    return plot_double_cells(trial.arch, cells=cells, merge_op=merge_op, backend=backend)


# One drawing function per chart name: ``(experiment, query parameters, aggregate?) -> figure``.
_DRAW = {
    "history": _history_figure,
    "pareto": _pareto_figure,
    "curves": _curves_figure,
    "arch_weights": _arch_weights_figure,
    "trial_curve": _trial_curve_figure,
    "cells": _cells_figure,
}


def _fill_quantiles(ax: Any, bands: Any, color: str, labels: tuple[str, str], **step: Any) -> None:
    """Two shaded bands of a summary chart: min to max (light) and 10th to 90th percentile."""
    for (low, high), alpha, label in zip(
        ((bands.low, bands.high), (bands.q10, bands.q90)), (0.12, 0.3), labels, strict=True
    ):
        ax.fill_between(
            bands.center, low, high, color=color, alpha=alpha, lw=0, label=label, **step
        )


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


# ----------------------------------------------------------------------------- large experiments
def _history_summary(exp: ExperimentRecord, metric: str) -> Any:
    """Metric by trial as bands over bins of trials, with the exact running best."""
    from nasx.plot.cells import plain
    from nasx.plot.charts import _BEST, _FAIL, _POINT, _axes, metric_value, running_best
    from nasx.trial import FAILED

    from .aggregate import binned_quantiles

    trials = sorted(exp.trials, key=lambda t: t.id)
    done = [(t.id, v) for t in trials if (v := metric_value(t, metric)) is not None]
    fig, ax = _axes(None)
    title = f"{plain(metric)} by trial ({len(done)} of {len(trials)} succeeded)"
    if done:
        ids, values = zip(*done, strict=True)
        bands = binned_quantiles(ids, values, _BINS)
        per_bin = max(1, round(len(trials) / _BINS))
        _fill_quantiles(ax, bands, _POINT, ("min to max", "10th to 90th percentile"), step="mid")
        ax.plot(
            bands.center,
            bands.median,
            color=_POINT,
            lw=1,
            label=f"median (about {per_bin} trials a bin)",
        )
        best = running_best(values, exp.direction)
        # the step line needs only the trials where the best changed (and the last trial)
        keep = [k for k in range(len(best)) if k == 0 or best[k] != best[k - 1]] + [len(best) - 1]
        ax.step(
            [ids[k] for k in keep],
            [best[k] for k in keep],
            where="post",
            color=_BEST,
            lw=2,
            label="best so far",
            zorder=3,
        )
        k = values.index(best[-1])
        title += f"\nbest {best[-1]:.4g} (trial {ids[k]})"
    failed = [t.id for t in trials if t.status == FAILED]
    if failed:
        lo, hi = trials[0].id, trials[-1].id
        width = max(1.0, (hi - lo) / _BINS)
        marked = sorted({lo + (int((i - lo) / width) + 0.5) * width for i in failed})
        ax.scatter(
            marked,
            [0.0] * len(marked),
            marker="|",  # a rug: one tick per bin with failures
            s=30,
            lw=0.8,
            color=_FAIL,
            transform=ax.get_xaxis_transform(),
            clip_on=False,
            label=f"failed ({len(failed)})",
            zorder=2,
        )
    ax.set_xlabel("trial")
    ax.set_ylabel(plain(metric))
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3)
    if done or failed:
        ax.legend(fontsize=7, loc="best")
    return _fixed_margins(fig)


def _pareto_summary(exp: ExperimentRecord, x: str, y: str, directions: tuple[str, str]) -> Any:
    """Two metrics as point density (hexagons), with the exact Pareto front on top."""
    from nasx.plot.cells import plain
    from nasx.plot.charts import (
        _axes,
        _readable_ticks,
        draw_front,
        metric_names,
        metric_value,
        objective_label,
    )

    from .aggregate import pareto_indices

    rows = [
        (t.id, a, b)
        for t in exp.trials
        if (a := metric_value(t, x)) is not None and (b := metric_value(t, y)) is not None
    ]
    if not rows:
        known = metric_names(exp.trials)
        missing = [m for m in (x, y) if m not in known]
        if missing:
            raise ValueError(f"no trial has metric(s) {missing}; the trials have {known}")
    fig, ax = _axes(None)
    if rows:
        xs = [r[1] for r in rows]
        ys = [r[2] for r in rows]
        cells = ax.hexbin(xs, ys, gridsize=(30, 15), cmap="Blues", mincnt=1, bins="log", lw=0.2)
        cells.set_label("trials (darker: more)")
        front = pareto_indices(list(zip(xs, ys, strict=True)), directions)
        draw_front(ax, rows, front, directions, max_labels=12)  # more labels would overlap
        ax.legend(fontsize=8, loc="best")
        _readable_ticks(ax.xaxis, xs)
        _readable_ticks(ax.yaxis, ys)
    ax.set_xlabel(objective_label(x, directions[0]))
    ax.set_ylabel(objective_label(y, directions[1]))
    ax.set_title(f"{plain(y)} vs {plain(x)} ({len(rows)} trials)")
    ax.grid(alpha=0.3)
    return _fixed_margins(fig)


def _curves_summary(exp: ExperimentRecord, top_k: int = 10) -> Any:
    """The best ``top_k`` learning curves, and the spread of all the others as bands per report;
    a scheduler's pruned and paused trials are among the others, with a mark where each stopped
    (:func:`nasx.plot.charts.draw_stopped`), never among the best."""
    from nasx.plot.charts import STOPPED_STYLES, _axes, draw_stopped, legend_best_first

    from .aggregate import step_quantiles

    trials = [t for t in exp.trials if t.intermediates]
    sign = -1 if exp.direction == "maximize" else 1
    ranked = sorted(
        trials,
        key=lambda t: (
            t.status in STOPPED_STYLES,
            t.metric is None,
            sign * (t.metric or 0.0),
            t.id,
        ),
    )
    best = [t for t in ranked[:top_k] if t.status not in STOPPED_STYLES]
    others = step_quantiles([t.intermediates for t in ranked[len(best) :]])
    fig, ax = _axes(None)
    if others.center.size:
        grey = "#999999"
        _fill_quantiles(ax, others, grey, ("others: min to max", "others: 10th-90th pct"))
        ax.plot(others.center, others.median, color=grey, lw=1.2, label="others: median")
    stopped = draw_stopped(ax, trials, curves=False)  # their curves are in the bands
    for t in best:
        steps = range(1, len(t.intermediates) + 1)
        ax.plot(steps, t.intermediates, lw=1.6, marker="o", markersize=3, label=f"#{t.id}")
    ax.set_xlabel("report (epoch)")
    ax.set_ylabel("intermediate metric")
    counts = "".join(f", {n} {status}" for status, n in stopped.items() if n)
    ax.set_title(f"learning curves ({len(trials)} trials{counts})")
    ax.grid(alpha=0.3)
    if trials:
        legend_best_first(ax, f"best {len(best)}")
    return _fixed_margins(fig)


def _fixed_margins(fig: Any) -> Any:
    """Margins that fit the summaries' labels (a two-line title, tick labels of a few digits)."""
    fig.subplots_adjust(left=0.11, right=0.98, bottom=0.12, top=0.87)
    fig.set_label(_FIXED_LAYOUT)
    return fig
