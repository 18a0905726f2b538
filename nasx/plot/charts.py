"""Charts of an experiment: metric by trial with the running best, two metrics with their Pareto
front, learning curves from intermediate metrics, and one-shot architecture weights over training.

Each chart takes trials (a list of :class:`~nasx.trial.Trial`, a ``NasExperiment`` or an
experiment directory) and returns a matplotlib ``Figure`` (``fig.savefig('chart.png')``); pass
``ax=`` to draw into an axes of your own. The numbers behind each chart are plain functions
(:func:`running_best`, :func:`pareto_front`) that the dashboard and tests share.

    >>> from nasx.trial import Trial
    >>> trials = [Trial(i, {'k': i}, 'succeeded', metric=m, metrics={'default': m})
    ...           for i, m in enumerate([0.5, 0.7, 0.6, 0.8])]
    >>> running_best([t.metric for t in trials])
    [0.5, 0.7, 0.7, 0.8]
    >>> fig = plot_metric_history(trials)
    >>> fig.axes[0].get_ylabel()
    'default'
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from nasx._optional import optional_import
from nasx.trial import FAILED, PAUSED, PRUNED, SUCCEEDED, Trial

from .cells import plain

DIRECTIONS = ("maximize", "minimize")
_BEST = "#d62728"
_POINT = "#1f77b4"
_FAIL = "#7f7f7f"


def trials_of(source: Any) -> list[Trial]:
    """Trials from a list of trials, a ``NasExperiment``, or an experiment directory (read-only).

    >>> trials_of([Trial(0, {}, 'waiting')])[0].id
    0
    """
    if isinstance(source, (str, os.PathLike)):
        from nasx.experiment.storage.readonly import read_experiment

        return read_experiment(source).trials
    if hasattr(source, "trials") and callable(source.trials):
        return list(source.trials())
    trials = list(source)
    for t in trials:
        if not isinstance(t, Trial):
            raise TypeError(f"expected nasx.trial.Trial objects, got {type(t).__name__}")
    return trials


def metric_value(trial: Trial, name: str = "default") -> float | None:
    """A finite number for metric ``name`` of a succeeded trial, else None.

    >>> metric_value(Trial(0, {}, 'succeeded', metric=0.9, metrics={'default': 0.9, 'ms': 3}), 'ms')
    3.0
    """
    if trial.status != SUCCEEDED:
        return None
    value = trial.metric if name == "default" and trial.metric is not None else None
    if value is None:
        value = (trial.metrics or {}).get(name)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


def metric_names(trials: Sequence[Trial]) -> list[str]:
    """Every numeric final metric name found in the trials, ``'default'`` first.

    >>> metric_names([Trial(0, {}, 'succeeded', metric=1.0, metrics={'default': 1.0, 'ms': 2})])
    ['default', 'ms']
    """
    names = {"default"} if any(t.metric is not None for t in trials) else set()
    for t in trials:
        names |= {k for k, v in (t.metrics or {}).items() if isinstance(v, (int, float))}
    return sorted(names, key=lambda n: (n != "default", n))


def running_best(values: Sequence[float], direction: str = "maximize") -> list[float]:
    """The best value so far at each position.

    >>> running_best([3, 1, 2], 'minimize')
    [3, 1, 1]
    """
    _check_direction(direction)
    better = max if direction == "maximize" else min
    out: list[float] = []
    for v in values:
        out.append(v if not out else better(out[-1], v))
    return out


def pareto_front(
    points: Sequence[tuple[float, float]], directions=("maximize", "maximize")
) -> list[int]:
    """Indices of the non-dominated points, sorted by the first coordinate.

    A point is dominated when another is at least as good in both coordinates and better in one.

    >>> pareto_front([(1, 1), (2, 3), (3, 2), (2, 2), (0, 4)])
    [4, 1, 2]
    >>> pareto_front([(0.9, 10), (0.8, 5), (0.85, 20)], ('maximize', 'minimize'))
    [1, 0]
    """
    for d in directions:
        _check_direction(d)
    signs = [1 if d == "maximize" else -1 for d in directions]
    scored = [(signs[0] * x, signs[1] * y) for x, y in points]
    front = []
    for i, (a, b) in enumerate(scored):
        dominated = any(
            (c >= a and d >= b) and (c > a or d > b) for j, (c, d) in enumerate(scored) if j != i
        )
        if not dominated:
            front.append(i)
    return sorted(front, key=lambda i: (points[i][0], points[i][1]))


# Unit suffixes of metric names, written out: "latency_ms" is "latency (ms)" on an axis.
_UNITS = {
    "ns": "ns",
    "us": "µs",
    "ms": "ms",
    "s": "s",
    "sec": "s",
    "min": "minutes",
    "kb": "KB",
    "mb": "MB",
    "gb": "GB",
    "pct": "%",
    "percent": "%",
}


def objective_label(name: str, direction: str) -> str:
    """An axis label for metric ``name`` that says its unit and which way is better.

    A unit suffix (``_ms``, ``_s``, ``_mb``, ``_pct`` ...) is written out in parentheses, so that
    ``latency_ms`` never reads as "latency in minutes".

    >>> objective_label('latency_ms', 'minimize')
    'latency (ms), lower is better'
    >>> objective_label('default', 'maximize')
    'default, higher is better'
    """
    _check_direction(direction)
    base, _, suffix = plain(name).rpartition("_")
    text = (
        f"{base} ({_UNITS[suffix.lower()]})" if base and suffix.lower() in _UNITS else plain(name)
    )
    return f"{text}, {'higher' if direction == 'maximize' else 'lower'} is better"


def _check_direction(direction: str) -> None:
    if direction not in DIRECTIONS:
        raise ValueError(f"direction must be one of {DIRECTIONS}, got {direction!r}")


def _axes(ax, figsize=(6.4, 4.0)):
    plt = optional_import("matplotlib.pyplot", "plot", "charts of an experiment")

    if ax is not None:
        return ax.figure, ax
    fig, ax = plt.subplots(figsize=figsize)
    plt.close(fig)  # returned, not shown: the caller saves or displays it
    return fig, ax


def _readable_ticks(axis: Any, values: Sequence[float]) -> None:
    """Engineering ticks (``250k``, ``1.5M``, ``73G``) on an axis of counts such as params,
    MACs or FLOPs, whose plain ticks would read ``220000 230000 ...`` or ``1e7`` offsets."""
    if values and max(abs(v) for v in values) >= 1e4:
        ticker = optional_import("matplotlib.ticker", "plot", "charts of an experiment")
        axis.set_major_formatter(ticker.EngFormatter(sep=""))


def plot_metric_history(
    source: Any, metric: str = "default", direction: str = "maximize", *, ax=None
):
    """Metric of each trial by trial id, the running best as a step line, failures marked.

    The main chart of a search: is it still improving? Failed trials are drawn as grey crosses on
    the lower edge so that a run of failures shows.

    Example:
        >>> trials = [Trial(0, {}, 'succeeded', metric=0.5), Trial(1, {}, 'failed', error='x')]
        >>> plot_metric_history(trials).axes[0].get_title().splitlines()
        ['default by trial (1 of 2 succeeded)', 'best 0.5 (trial 0)']
    """
    _check_direction(direction)
    trials = sorted(trials_of(source), key=lambda t: t.id)
    fig, ax = _axes(ax)
    done = [(t.id, metric_value(t, metric)) for t in trials]
    done = [(i, v) for i, v in done if v is not None]
    if done:
        ids, values = zip(*done, strict=True)
        ax.scatter(ids, values, s=18, color=_POINT, alpha=0.75, label="trial", zorder=2)
        best = running_best(values, direction)
        ax.step(ids, best, where="post", color=_BEST, lw=2, label="best so far", zorder=3)
    failed = [t.id for t in trials if t.status == FAILED]
    if failed:
        ax.scatter(
            failed,
            [0.0] * len(failed),
            marker="x",
            color=_FAIL,
            transform=ax.get_xaxis_transform(),
            clip_on=False,
            label=f"failed ({len(failed)})",
            zorder=2,
        )
    ax.set_xlabel("trial")
    if trials:  # every trial's id on the axis, whole numbers only, also when few succeeded
        ticker = optional_import("matplotlib.ticker", "plot", "charts of an experiment")
        ax.set_xlim(trials[0].id - 0.5, trials[-1].id + 0.5)
        ax.xaxis.set_major_locator(ticker.MaxNLocator(integer=True))
    ax.set_ylabel(plain(metric))
    title = f"{plain(metric)} by trial ({len(done)} of {len(trials)} succeeded"
    stopped = sum(t.status == PRUNED for t in trials)
    title += f"; {stopped} pruned by the scheduler)" if stopped else ")"
    if done:
        k = values.index(best[-1])
        title += f"\nbest {best[-1]:.4g} (trial {ids[k]})"
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3)
    if done or failed:
        ax.legend(fontsize=8, loc="best")
    return fig


def plot_pareto(
    source: Any,
    x: str,
    y: str = "default",
    directions: tuple[str, str] = ("minimize", "maximize"),
    *,
    ax=None,
):
    """Scatter of two final metrics of the succeeded trials with the Pareto front highlighted.

    ``x`` and ``y`` name metrics (``'default'`` is the trial's metric); ``directions`` says which
    way each is better, e.g. latency minimised and accuracy maximised (the default).

    Example:
        >>> trials = [Trial(i, {}, 'succeeded', metric=a, metrics={'default': a, 'ms': ms})
        ...           for i, (a, ms) in enumerate([(0.7, 5), (0.8, 9), (0.75, 4)])]
        >>> front = plot_pareto(trials, 'ms').axes[0].collections[1].get_offsets().tolist()
        >>> front
        [[4.0, 0.75], [9.0, 0.8]]

    Counts such as params or FLOPs get engineering ticks (``250k``, ``1.5M``).
    """
    trials = trials_of(source)
    fig, ax = _axes(ax)
    rows = [
        (t.id, a, b)
        for t in trials
        if (a := metric_value(t, x)) is not None and (b := metric_value(t, y)) is not None
    ]
    if not rows and trials:
        known = metric_names(trials)
        missing = [m for m in (x, y) if m not in known]
        if missing:
            raise ValueError(f"no trial has metric(s) {missing}; the trials have {known}")
    if rows:
        front = pareto_front([(a, b) for _, a, b in rows], directions)
        ax.scatter(
            [r[1] for r in rows], [r[2] for r in rows], s=18, color=_POINT, alpha=0.6, label="trial"
        )
        draw_front(ax, rows, front, directions)
        ax.legend(fontsize=8, loc="best")
        _readable_ticks(ax.xaxis, [r[1] for r in rows])
        _readable_ticks(ax.yaxis, [r[2] for r in rows])
    ax.set_xlabel(objective_label(x, directions[0]))
    ax.set_ylabel(objective_label(y, directions[1]))
    ax.set_title(f"{plain(y)} vs {plain(x)}")
    ax.grid(alpha=0.3)
    return fig


def draw_front(
    ax: Any,
    rows: Sequence[tuple[int, float, float]],
    front: Sequence[int],
    directions: Sequence[str],
    max_labels: int | None = None,
) -> None:
    """Draw the Pareto ``front`` (indices into ``rows`` of ``(trial id, x, y)``) on ``ax``: a
    step line, its points and up to ``max_labels`` trial-id labels (None: all). Shared by
    :func:`plot_pareto` and the dashboard's chart of many trials."""
    fx, fy = [rows[i][1] for i in front], [rows[i][2] for i in front]
    where = "post" if directions[0] != directions[1] else "pre"
    ax.step(fx, fy, where=where, color=_BEST, lw=1.2, alpha=0.7)
    ax.scatter(fx, fy, s=40, color=_BEST, label=f"Pareto front ({len(front)})", zorder=3)
    for i in list(front)[:max_labels]:
        ax.annotate(
            f"#{rows[i][0]}",
            (rows[i][1], rows[i][2]),
            textcoords="offset points",
            xytext=(4, 4),
            fontsize=7,
            color=_BEST,
        )


def plot_learning_curves(
    source: Any, top_k: int | None = 10, direction: str = "maximize", *, ax=None
):
    """Each trial's intermediate metrics (one point per report, e.g. per epoch).

    With ``top_k`` only the curves of the best ``top_k`` finished trials are coloured and labelled;
    the others are drawn thin and grey, so early stopping decisions can be checked by eye. With a
    multi-fidelity scheduler, the trials it **pruned** are greyed (light grey, a cross where they
    stopped) and the **paused** ones (waiting at a rung for a promotion that may come) dashed
    grey-blue with an open circle: neither is ever among the coloured best, whose curves are
    complete.

    Example:
        >>> trials = [Trial(i, {}, 'succeeded', metric=m, intermediates=[m / 2, m])
        ...           for i, m in enumerate([0.5, 0.9, 0.7])]
        >>> [t.get_text() for t in plot_learning_curves(trials, top_k=2).axes[0].get_legend().get_texts()]
        ['#1', '#2']
        >>> trials.append(Trial(3, {}, 'pruned', metric=0.95, intermediates=[0.95]))
        >>> [t.get_text() for t in plot_learning_curves(trials, top_k=2).axes[0].get_legend().get_texts()]
        ['#1', '#2', 'pruned (1)']
    """
    _check_direction(direction)
    trials = [t for t in trials_of(source) if t.intermediates]
    fig, ax = _axes(ax)
    sign = -1 if direction == "maximize" else 1
    complete = [t for t in trials if t.status not in STOPPED_STYLES]
    ranked = sorted(complete, key=lambda t: (t.metric is None, sign * (t.metric or 0.0), t.id))
    best = ranked if top_k is None else ranked[:top_k]
    shown = {t.id for t in best}
    for t in complete:  # the others first, thin and grey, under the coloured ones
        if t.id not in shown:
            ax.plot(range(1, len(t.intermediates) + 1), t.intermediates, lw=0.8, color="#bbbbbb")
    stopped = draw_stopped(ax, trials)
    for t in best:  # the legend lists the best first
        steps = range(1, len(t.intermediates) + 1)
        ax.plot(steps, t.intermediates, lw=1.6, marker="o", markersize=3, label=f"#{t.id}")
    ax.set_xlabel("report (epoch)")
    ax.set_ylabel("intermediate metric")
    counts = "".join(f", {n} {status}" for status, n in stopped.items() if n)
    ax.set_title(f"learning curves ({len(trials)} trials{counts})")
    ax.grid(alpha=0.3)
    if shown or any(stopped.values()):
        legend_best_first(ax, None if top_k is None or not shown else f"best {len(shown)}")
    return fig


def legend_best_first(ax: Any, title: str | None) -> None:
    """The legend of a learning-curve chart: the best trials (``#id``) first, under ``title``,
    then the rest (a scheduler's stopped trials, bands)."""
    handles, labels = ax.get_legend_handles_labels()
    order = sorted(range(len(labels)), key=lambda i: not labels[i].startswith("#"))
    ax.legend(
        [handles[i] for i in order],
        [labels[i] for i in order],
        fontsize=7,
        ncol=2,
        loc="best",
        title=title,
    )


# How a scheduler's stopped trials look: (colour, line style, end marker); the dashboard's too.
STOPPED_STYLES = {PRUNED: ("#aaaaaa", "-", "x"), PAUSED: ("#7f9cbf", "--", "o")}


def draw_stopped(ax: Any, trials: Sequence[Trial], curves: bool = True) -> dict[str, int]:
    """Draw the trials a scheduler pruned or paused (see :func:`plot_learning_curves`): their
    curves (unless ``curves=False``: a summary draws them as bands) and a mark where each one
    stopped, labelled once per status with its count. Returns ``{status: count}``.

    >>> import matplotlib.pyplot as plt
    >>> fig, ax = plt.subplots(); plt.close(fig)
    >>> draw_stopped(ax, [Trial(0, {}, 'paused', intermediates=[0.1]), Trial(1, {}, 'succeeded')])
    {'pruned': 0, 'paused': 1}
    """
    counts = {}
    for status, (color, style, mark) in STOPPED_STYLES.items():
        group = [t for t in trials if t.status == status and t.intermediates]
        counts[status] = len(group)
        if not group:
            continue
        if curves:
            for t in group:
                steps = range(1, len(t.intermediates) + 1)
                ax.plot(steps, t.intermediates, lw=0.8, ls=style, color=color, zorder=1)
        ends = ([len(t.intermediates) for t in group], [t.intermediates[-1] for t in group])
        # an open circle (paused) is drawn by its edge; a cross (pruned) has only a face colour
        colors = {"facecolors": "none", "edgecolors": color} if mark == "o" else {"c": color}
        label = f"{status} ({len(group)})"
        ax.scatter(*ends, s=22, marker=mark, linewidths=1.0, label=label, zorder=2, **colors)
    return counts


# ----------------------------------------------------------------------------- one-shot
def arch_weight_history(
    source: str | os.PathLike | Mapping,
) -> dict[str, dict[str, list[tuple[int, float]]]]:
    """``{label: {value: [(step, probability), ...]}}`` of a one-shot search.

    ``source`` is a one-shot experiment directory (its Lightning logs: ``metrics.csv`` of the CSV
    logger, or TensorBoard event files when the ``tensorboard`` package is installed), or a flat
    mapping ``{step: {'arch/<label>/<value>': p}}`` as the strategy logs it.

    >>> arch_weight_history({0: {'arch/op/conv': 0.5, 'arch/op/pool': 0.5},
    ...                      10: {'arch/op/conv': 0.7, 'arch/op/pool': 0.3}})['op']['conv']
    [(0, 0.5), (10, 0.7)]
    """
    rows = source if isinstance(source, Mapping) else _read_lightning_logs(Path(source))
    history: dict[str, dict[str, list[tuple[int, float]]]] = {}
    for step in sorted(rows):
        for key, p in rows[step].items():
            if not key.startswith("arch/"):
                continue
            label, _, value = key[len("arch/") :].rpartition("/")
            history.setdefault(label, {}).setdefault(value, []).append((int(step), float(p)))
    return history


def has_arch_weights(directory: str | os.PathLike) -> bool:
    """Whether a one-shot search logged architecture weights in ``directory`` (its Lightning logs,
    ``lightning_logs/*/``, with ``arch/<label>/<value>`` columns or TensorBoard event files).
    Cheap: reads one line per log, never walks a multi-trial run's trial folders.

    >>> import tempfile
    >>> has_arch_weights(tempfile.mkdtemp())
    False
    """
    logs = Path(directory) / "lightning_logs"
    if not logs.is_dir():
        return False
    for path in sorted(logs.glob("*/metrics.csv")):
        with open(path, newline="") as f:
            if "arch/" in f.readline():
                return True
    return any(logs.glob("*/events.out.tfevents.*"))


def _read_lightning_logs(directory: Path) -> dict[int, dict[str, float]]:
    import csv

    rows: dict[int, dict[str, float]] = {}
    csvs = sorted(directory.glob("**/metrics.csv"))
    for path in csvs:
        with open(path, newline="") as f:
            for rec in csv.DictReader(f):
                step = rec.get("step")
                for key, value in rec.items():
                    if (
                        key.startswith("arch/")
                        and value not in ("", None)
                        and step not in ("", None)
                    ):
                        rows.setdefault(int(float(step)), {})[key] = float(value)
    events = sorted(directory.glob("**/events.out.tfevents.*"))
    if events and not rows:
        EventAccumulator = optional_import(
            "tensorboard.backend.event_processing.event_accumulator",
            "tensorboard",
            f"reading the TensorBoard logs in {directory}",
        ).EventAccumulator
        for path in events:
            acc = EventAccumulator(str(path), size_guidance={"scalars": 0})
            acc.Reload()
            for tag in acc.Tags().get("scalars", []):
                if tag.startswith("arch/"):
                    for ev in acc.Scalars(tag):
                        rows.setdefault(int(ev.step), {})[tag] = float(ev.value)
    if not rows:
        raise FileNotFoundError(
            f"no architecture weights logged under {directory} (looked for Lightning's metrics.csv "
            "and TensorBoard event files with 'arch/<label>/<value>' scalars; set log_arch_every)"
        )
    return rows


def plot_arch_weights(source: Any, labels: Sequence[str] | None = None, *, max_labels: int = 12):
    """One panel per label: the probability of each candidate value over training steps.

    ``source`` as in :func:`arch_weight_history` (or its result). Shows whether a one-shot search
    has settled (one value near 1) or is still undecided. Without ``labels``, the ``max_labels``
    labels whose weights moved most are shown (ties by name).

    Example:
        >>> fig = plot_arch_weights({0: {'arch/op/conv': 0.5, 'arch/op/pool': 0.5},
        ...                          9: {'arch/op/conv': 0.9, 'arch/op/pool': 0.1}})
        >>> fig.axes[0].get_title()
        'op'
    """
    plt = optional_import("matplotlib.pyplot", "plot", "charts of an experiment")

    history = source if _is_history(source) else arch_weight_history(source)
    if labels is None:
        moved = {
            label: max(_spread(s) for s in values.values()) for label, values in history.items()
        }
        chosen = sorted(history, key=lambda label: (-round(moved[label], 6), label))[:max_labels]
    else:
        chosen = list(labels)
    unknown = [label for label in chosen if label not in history]
    if unknown:
        raise ValueError(
            f"no architecture weights for label(s) {unknown}; logged: {sorted(history)}"
        )
    if not chosen:
        raise ValueError("no labels to plot")
    cols = min(4, len(chosen))
    rows = math.ceil(len(chosen) / cols)
    fig, axes = plt.subplots(
        rows, cols, figsize=(3.4 * cols, 2.5 * rows), squeeze=False, sharex=True
    )
    plt.close(fig)
    for ax, label in zip(axes.flat, chosen, strict=False):
        for value, series in sorted(history[label].items()):
            steps, probs = zip(*series, strict=True)
            ax.plot(steps, probs, lw=1.4, label=plain(value))
        ax.set_title(plain(label), fontsize=9)
        ax.set_ylim(0, 1)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=6, loc="upper left")
    for ax in list(axes.flat)[len(chosen) :]:
        ax.set_axis_off()
    for ax in axes[-1]:
        ax.set_xlabel("step")
    fig.suptitle("architecture weights over training")
    fig.tight_layout()
    return fig


def _spread(series: list[tuple[int, float]]) -> float:
    values = [p for _, p in series]
    return max(values) - min(values)


def _is_history(source: Any) -> bool:
    return (
        isinstance(source, Mapping)
        and all(isinstance(v, Mapping) for v in source.values())
        and not all(isinstance(k, int) for k in source)
    )
