"""Learning curves of a multi-fidelity search (issue 31, item 7): the trials a scheduler pruned
are greyed, the paused ones drawn apart, and neither is among the coloured best, in nasx.plot and
in the dashboard's chart (the curves of every trial, or the summary of a large experiment)."""

from pathlib import Path

import matplotlib
from matplotlib.colors import to_hex

matplotlib.use("Agg")

from nasx.dashboard import render  # noqa: E402
from nasx.experiment.storage.readonly import ExperimentRecord  # noqa: E402
from nasx.plot.charts import STOPPED_STYLES, plot_learning_curves  # noqa: E402
from nasx.trial import Trial  # noqa: E402


def _trials():
    # a scheduler's search: 0 and 1 complete at budget 3, 2 and 3 pruned, 4 and 5 paused; the
    # pruned trial 2 and the paused trial 4 stopped with the largest metrics of all
    rows = [
        (0, "succeeded", [0.3, 0.5, 0.7]),
        (1, "succeeded", [0.2, 0.4, 0.6]),
        (2, "pruned", [0.9, 0.95]),
        (3, "pruned", [0.1]),
        (4, "paused", [0.99]),
        (5, "paused", [0.15]),
    ]
    return [
        Trial(i, {"i": i}, status, metric=c[-1], intermediates=c, budget=len(c))
        for i, status, c in rows
    ]


def _labels(ax):
    return [t.get_text() for t in ax.get_legend().get_texts()]


def test_pruned_are_greyed_paused_dashed_and_neither_is_among_the_best():
    ax = plot_learning_curves(_trials(), top_k=3).axes[0]
    assert _labels(ax) == ["#0", "#1", "pruned (2)", "paused (2)"]  # top 3 has only 2 complete
    assert ax.get_title() == "learning curves (6 trials, 2 pruned, 2 paused)"
    pruned_color, _, _ = STOPPED_STYLES["pruned"]
    paused_color, _, _ = STOPPED_STYLES["paused"]
    styles = {(to_hex(line.get_color()), line.get_linestyle()) for line in ax.lines}
    assert (pruned_color, "-") in styles and (paused_color, "--") in styles
    stopped = [line for line in ax.lines if to_hex(line.get_color()) == pruned_color]
    assert sorted(list(line.get_ydata()) for line in stopped) == [[0.1], [0.9, 0.95]]
    # a mark where each stopped: pruned trials at (2, 0.95) and (1, 0.1)
    pruned_marks = next(c for c in ax.collections if c.get_label() == "pruned (2)")
    assert sorted(map(tuple, pruned_marks.get_offsets().tolist())) == [(1, 0.1), (2, 0.95)]
    paused_marks = next(c for c in ax.collections if c.get_label() == "paused (2)")
    assert len(paused_marks.get_facecolors()) == 0  # open circles: paused, not pruned


def test_a_search_without_a_scheduler_draws_as_before():
    trials = [t for t in _trials() if t.status == "succeeded"]
    ax = plot_learning_curves(trials, top_k=1).axes[0]
    assert _labels(ax) == ["#0"] and ax.get_title() == "learning curves (2 trials)"
    assert not ax.collections


def test_the_dashboards_chart_and_its_summary_show_them_too():
    exp = ExperimentRecord(Path("."), "multi-trial", {"direction": "maximize"}, _trials())
    ax = render._figure(exp, "curves", {}).axes[0]  # a small experiment: every curve
    assert _labels(ax) == ["#0", "#1", "pruned (2)", "paused (2)"]
    ax = render._curves_summary(exp, top_k=3).axes[0]  # a large one's summary
    best = [t for t in _labels(ax) if t.startswith("#")]
    assert best == ["#0", "#1"] and "pruned (2)" in _labels(ax) and "paused (2)" in _labels(ax)
    assert ax.get_title() == "learning curves (6 trials, 2 pruned, 2 paused)"
    fig = render._figure(exp, "trial_curve", {"trial": "2"})
    assert fig.axes[0].get_title() == "trial 2: intermediate metrics (pruned at budget 2)"
