"""Experiment charts: the numbers behind them (running best, Pareto front) against hand-computed
values, and what each figure draws."""

import math

import matplotlib
import pytest

matplotlib.use("Agg")

from nasx.experiment.storage.store import TrialStore  # noqa: E402
from nasx.plot.charts import (  # noqa: E402
    arch_weight_history,
    metric_names,
    objective_label,
    pareto_front,
    plot_arch_weights,
    plot_learning_curves,
    plot_metric_history,
    plot_pareto,
    running_best,
    trials_of,
)
from nasx.trial import Trial  # noqa: E402


def _trials():
    # id: accuracy, latency; trial 3 failed, trial 5 was rejected by a filter.
    rows = {0: (0.70, 5.0), 1: (0.80, 9.0), 2: (0.75, 4.0), 4: (0.85, 20.0), 6: (0.78, 9.5)}
    out = []
    for i in range(7):
        if i in rows:
            acc, ms = rows[i]
            curve = [acc * (1 - math.exp(-e)) for e in range(1, 4)]
            out.append(
                Trial(
                    i,
                    {"k": i},
                    "succeeded",
                    metric=acc,
                    metrics={"default": acc, "ms": ms},
                    intermediates=curve,
                )
            )
        elif i == 3:
            out.append(Trial(i, {"k": i}, "failed", error="RuntimeError: boom"))
        else:
            out.append(Trial(i, {"k": i}, "rejected", error="too big"))
    return out


def test_running_best_and_pareto_front_by_hand():
    assert running_best([0.7, 0.8, 0.75, 0.85, 0.78]) == [0.7, 0.8, 0.8, 0.85, 0.85]
    assert running_best([5, 9, 4, 20], "minimize") == [5, 5, 4, 4]
    pts = [(5.0, 0.70), (9.0, 0.80), (4.0, 0.75), (20.0, 0.85), (9.5, 0.78)]
    # Lower latency and higher accuracy win: (4, .75) beats (5, .70); (9.5, .78) loses to (9, .80).
    assert pareto_front(pts, ("minimize", "maximize")) == [2, 1, 3]
    assert pareto_front([(1, 1), (1, 1)]) == [0, 1]  # equal points do not dominate each other
    with pytest.raises(ValueError, match="direction must be one of"):
        running_best([1], "up")


def test_metric_history_draws_points_best_line_and_failures():
    fig = plot_metric_history(_trials())
    ax = fig.axes[0]
    points, failed = ax.collections
    assert points.get_offsets()[:, 0].tolist() == [0, 1, 2, 4, 6]
    assert failed.get_offsets()[:, 0].tolist() == [3]
    (best_line,) = ax.lines
    assert best_line.get_ydata().tolist() == [0.70, 0.80, 0.80, 0.85, 0.85]
    assert "best 0.85 (trial 4)" in ax.get_title() and "5 of 7 succeeded" in ax.get_title()


def test_metric_history_of_a_scheduled_run_spans_every_trial_and_counts_the_pruned():
    # one trial reached the full budget; the scheduler stopped the others early
    trials = [Trial(0, {"k": 0}, "succeeded", metric=0.5)]
    trials += [Trial(i, {"k": i}, "pruned", metric=0.1, budget=1) for i in range(1, 9)]
    ax = plot_metric_history(trials).axes[0]
    assert ax.get_xlim() == (-0.5, 8.5)  # not a range around the one point drawn
    assert all(float(t).is_integer() for t in ax.get_xticks())
    assert "(1 of 9 succeeded; 8 pruned by the scheduler)" in ax.get_title()


def test_metric_history_minimize_and_other_metric():
    ax = plot_metric_history(_trials(), metric="ms", direction="minimize").axes[0]
    assert ax.lines[0].get_ydata().tolist() == [5.0, 5.0, 4.0, 4.0, 4.0]
    assert ax.get_ylabel() == "ms"


def test_pareto_highlights_the_front_and_names_missing_metrics():
    ax = plot_pareto(_trials(), "ms", "default").axes[0]
    front = ax.collections[1].get_offsets().tolist()
    assert front == [[4.0, 0.75], [9.0, 0.80], [20.0, 0.85]]
    with pytest.raises(
        ValueError,
        match=r"no trial has metric\(s\) \['flops'\]; the trials have \['default', 'ms'\]",
    ):
        plot_pareto(_trials(), "flops")
    assert metric_names(_trials()) == ["default", "ms"]


def test_pareto_axes_say_the_unit_and_which_way_is_better():
    # "latency_ms (min)" read as minutes: the unit is written out, the direction in words
    trials = [
        Trial(i, {}, "succeeded", metric=a, metrics={"default": a, "latency_ms": ms})
        for i, (a, ms) in enumerate([(0.7, 5.0), (0.8, 9.0)])
    ]
    ax = plot_pareto(trials, "latency_ms").axes[0]
    assert ax.get_xlabel() == "latency (ms), lower is better"
    assert ax.get_ylabel() == "default, higher is better"
    ax = plot_pareto(trials, "default", "latency_ms", ("maximize", "minimize")).axes[0]
    assert (ax.get_xlabel(), ax.get_ylabel()) == (
        "default, higher is better",
        "latency (ms), lower is better",
    )
    assert objective_label("size_MB", "minimize") == "size (MB), lower is better"
    assert objective_label("wall_time_min", "minimize") == "wall_time (minutes), lower is better"
    assert objective_label("top1", "maximize") == "top1, higher is better"


def test_pareto_ticks_of_counts_read_in_engineering_units():
    trials = [
        Trial(i, {}, "succeeded", metric=a, metrics={"default": a, "params": p})
        for i, (a, p) in enumerate([(0.10, 217_920), (0.12, 255_832), (0.07, 297_336)])
    ]
    fig = plot_pareto(trials, "params")
    fig.canvas.draw()
    ax = fig.axes[0]
    x_ticks = [t.get_text() for t in ax.get_xticklabels() if t.get_text()]
    assert x_ticks and all(t.endswith("k") for t in x_ticks)  # 220k, 240k, ... not 220000
    assert "250k" in x_ticks
    y_ticks = [t.get_text() for t in ax.get_yticklabels() if t.get_text()]
    assert "0.10" in y_ticks  # small metrics keep matplotlib's plain ticks


def test_learning_curves_colour_the_best_k():
    ax = plot_learning_curves(_trials(), top_k=2).axes[0]
    assert len(ax.lines) == 5
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["#4", "#1"]


def test_trials_of_reads_an_experiment_directory(tmp_path):
    store = TrialStore.create(tmp_path, {"space": "Net", "direction": "maximize"})
    for t in _trials():
        store.add(t)
    store.close()
    assert [t.to_dict() for t in trials_of(tmp_path)] == [t.to_dict() for t in _trials()]
    with pytest.raises(TypeError, match="expected nasx.trial.Trial"):
        trials_of([{"id": 0}])


def test_arch_weights_from_lightning_csv(tmp_path):
    logs = tmp_path / "lightning_logs" / "version_0"
    logs.mkdir(parents=True)
    (logs / "metrics.csv").write_text(
        "arch/op/conv,arch/op/pool,arch/skip/0,epoch,step,train_loss\n"
        "0.5,0.5,1.0,0,0,\n"
        ",,,0,5,1.2\n"
        "0.8,0.2,1.0,0,10,\n"
    )
    history = arch_weight_history(tmp_path)
    assert history == {
        "op": {"conv": [(0, 0.5), (10, 0.8)], "pool": [(0, 0.5), (10, 0.2)]},
        "skip": {"0": [(0, 1.0), (10, 1.0)]},
    }
    fig = plot_arch_weights(tmp_path)
    # The label whose weights moved ('op') comes first; 'skip' never moved.
    assert [ax.get_title() for ax in fig.axes if ax.get_title()] == ["op", "skip"]
    with pytest.raises(ValueError, match=r"no architecture weights for label\(s\) \['x'\]"):
        plot_arch_weights(history, labels=["x"])


def test_arch_weights_from_tensorboard_events(tmp_path):
    pytest.importorskip("tensorboard")
    from torch.utils.tensorboard import SummaryWriter

    with SummaryWriter(str(tmp_path / "lightning_logs" / "version_0")) as w:
        for step, p in ((0, 0.5), (4, 0.9)):
            w.add_scalar("arch/op/conv", p, step)
            w.add_scalar("arch/op/pool", 1 - p, step)
    history = arch_weight_history(tmp_path)
    assert history["op"]["conv"] == [(0, 0.5), (4, pytest.approx(0.9))]


def test_arch_weights_missing_logs_say_where_they_looked(tmp_path):
    with pytest.raises(FileNotFoundError, match="set log_arch_every"):
        arch_weight_history(tmp_path)
