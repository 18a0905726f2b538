"""The dashboard's large-experiment paths, each against a reference: rows sorted and paged by the
server against a plain sort of every trial, chart summaries against numpy and against
nasx.plot's own Pareto front, decoded trials kept across versions only when unchanged."""

from __future__ import annotations

import http.client
import json
import os
import random
import threading
import time

import numpy as np
import pytest

from nasx.dashboard import render
from nasx.dashboard.aggregate import binned_quantiles, pareto_indices, step_quantiles
from nasx.dashboard.experiments import ChartCache, Experiments, _keep_decoded
from nasx.dashboard.rows import parse_query, sort_trials
from nasx.dashboard.server import make_server
from nasx.experiment.storage.readonly import ExperimentRecord, read_experiment
from nasx.plot.charts import pareto_front, plot_pareto
from nasx.trial import Trial

from ..toy_experiment import make_experiment


@pytest.fixture(scope="module")
def experiment(tmp_path_factory):
    return make_experiment(tmp_path_factory.mktemp("scale") / "exp", max_trials=12, seed=5)


@pytest.fixture(scope="module")
def server(experiment):
    srv = make_server([experiment.workdir], port=0)
    threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    yield srv
    srv.shutdown()
    srv.server_close()


def get(srv, path: str) -> tuple[int, dict]:
    conn = http.client.HTTPConnection("127.0.0.1", srv.server_address[1], timeout=60)
    conn.request("GET", path, headers={"Host": "127.0.0.1"})
    resp = conn.getresponse()
    body = json.loads(resp.read())
    conn.close()
    return resp.status, body


def reference_order(trials: list[dict], get_value, descending: bool) -> list[int]:
    """What the page did before the server sorted: values (numbers) ascending or descending,
    trials without a value last, ties by id."""
    with_value = [t for t in trials if get_value(t) is not None]
    without = sorted((t for t in trials if get_value(t) is None), key=lambda t: t["id"])
    sign = -1 if descending else 1
    with_value.sort(key=lambda t: (sign * get_value(t), t["id"]))
    return [t["id"] for t in with_value + without]


@pytest.mark.parametrize(
    ("sort", "value"),
    [
        ("metric", lambda t: t["metric"]),
        ("m:latency_ms", lambda t: (t["metrics"] or {}).get("latency_ms")),
        ("id", lambda t: t["id"]),
        ("duration", lambda t: t["duration"]),
    ],
)
@pytest.mark.parametrize("descending", [False, True])
def test_rows_are_sorted_and_paged_like_the_full_table(server, sort, value, descending):
    _, full = get(server, "/api/exp/0")
    expected = reference_order(full["trials"], value, descending)
    pages = []
    for offset in range(0, 12, 5):  # three pages of five: 5 + 5 + 2
        status, page = get(
            server, f"/api/exp/0/rows?sort={sort}&desc={int(descending)}&offset={offset}&limit=5"
        )
        assert status == 200 and page["total"] == 12 and page["n_trials"] == 12
        assert page["offset"] == offset and page["version"] == full["version"]
        pages += page["rows"]
    assert [r["id"] for r in pages] == expected
    assert pages == [next(t for t in full["trials"] if t["id"] == i) for i in expected]


def test_rows_filter_by_status(server):
    _, full = get(server, "/api/exp/0")
    failed = [t["id"] for t in full["trials"] if t["status"] == "failed"]
    assert failed, "the toy experiment has failures"
    _, page = get(server, "/api/exp/0/rows?status=failed&sort=id")
    assert [r["id"] for r in page["rows"]] == failed and page["total"] == len(failed)
    assert get(server, "/api/exp/0/rows?status=waiting")[1]["rows"] == []


@pytest.mark.parametrize(
    ("query", "message"),
    [
        (
            "sort=nope",
            "sort must be one of ['id', 'status', 'metric', 'budget', 'duration', 'arch', 'error', "
            "'m:latency_ms']",
        ),
        ("sort=m:loss", "sort must be one of"),
        ("desc=yes", "desc must be 0 or 1, got 'yes'"),
        ("status=done", "status must be one of"),
        ("offset=-1", "offset must be an integer from 0, got '-1'"),
        ("limit=0", "limit must be an integer from 1 to 1000, got '0'"),
        ("limit=5000", "limit must be an integer from 1 to 1000"),
    ],
)
def test_bad_row_queries_name_the_parameter(server, query, message):
    status, body = get(server, f"/api/exp/0/rows?{query}")
    assert status == 400 and message in body["error"]


def test_sorting_text_columns_and_missing_values():
    trials = [
        Trial(0, {"op": "b"}, "succeeded", metric=0.5, error=None),
        Trial(1, {"op": "a"}, "failed", error="ValueError: x\ntraceback"),
        Trial(2, {"op": "c"}, "succeeded", metric=float("nan")),
        Trial(3, {"op": "a"}, "succeeded", metric=0.5),
    ]
    assert [t.id for t in sort_trials(trials, "metric")] == [0, 3, 1, 2]  # NaN: no value
    assert [t.id for t in sort_trials(trials, "metric", True)] == [0, 3, 1, 2]  # ties by id
    assert [t.id for t in sort_trials(trials, "arch")] == [1, 3, 0, 2]
    assert [t.id for t in sort_trials(trials, "arch", True)] == [2, 0, 1, 3]
    assert [t.id for t in sort_trials(trials, "error")] == [1, 0, 2, 3]
    assert parse_query({}, []).limit == 100


# ----------------------------------------------------------------------------- aggregates
def test_pareto_indices_match_the_plot_front():
    rng = random.Random(0)
    for case in range(200):
        n = rng.randint(0, 40)
        points = [
            (rng.choice([0, 1, 2, rng.random()]), rng.choice([0, 1, rng.random()]))
            for _ in range(n)
        ]
        for directions in [
            ("maximize", "maximize"),
            ("minimize", "maximize"),
            ("minimize", "minimize"),
        ]:
            assert pareto_indices(points, directions) == pareto_front(points, directions), (
                case,
                points,
            )


def test_binned_quantiles_against_numpy():
    rng = np.random.default_rng(0)
    x = rng.integers(0, 1000, 5000)
    y = rng.normal(size=5000)
    bands = binned_quantiles(x, y, bins=10)
    edges = np.linspace(x.min(), x.max(), 11)
    for k in range(10):
        inside = (x >= edges[k]) & ((x < edges[k + 1]) if k < 9 else (x <= edges[k + 1]))
        assert bands.count[k] == inside.sum()
        assert np.isclose(bands.median[k], np.median(y[inside]))
        assert np.isclose(bands.q10[k], np.quantile(y[inside], 0.1))
        assert np.isclose(bands.high[k], y[inside].max())
    with pytest.raises(ValueError, match="bins must be at least 1"):
        binned_quantiles([1], [1], bins=0)


def test_step_quantiles_against_numpy():
    rng = random.Random(1)
    curves = [[rng.random() for _ in range(rng.randint(1, 6))] for _ in range(300)]
    bands = step_quantiles(curves)
    for step in range(6):
        column = [c[step] for c in curves if len(c) > step]
        assert bands.center[step] == step + 1 and bands.count[step] == len(column)
        assert np.isclose(bands.q90[step], np.quantile(column, 0.9))
        assert np.isclose(bands.low[step], min(column))


def _many(n: int, seed: int = 0) -> ExperimentRecord:
    rng = random.Random(seed)
    trials = []
    for i in range(n):
        if i % 40 == 3:
            trials.append(Trial(i, {"op": "x"}, "failed", error="boom"))
            continue
        acc = rng.random()
        trials.append(
            Trial(
                i,
                {"op": rng.choice("abc")},
                "succeeded",
                metric=acc,
                metrics={"default": acc, "latency_ms": rng.uniform(1, 20)},
                intermediates=[acc * e / 5 for e in range(1, 6)],
            )
        )
    from pathlib import Path

    return ExperimentRecord(Path("."), "multi-trial", {"direction": "maximize"}, trials)


def test_large_experiments_get_summary_charts_with_the_exact_best_and_front():
    exp = _many(max(render.AGGREGATE_ABOVE.values()) + 500)
    svgs = {
        name: render.chart(exp, name, {"x": "latency_ms"} if name == "pareto" else {})
        for name in ("history", "pareto", "curves")
    }
    for name, svg in svgs.items():
        assert b"<svg" in svg[:500] and len(svg) < 600_000, (name, len(svg))
    # the figures themselves: best so far and the front are exact
    fig = render._figure(exp, "history", {})
    best_line = next(line for line in fig.axes[0].lines if line.get_label() == "best so far")
    assert best_line.get_ydata()[-1] == max(t.metric for t in exp.trials if t.metric is not None)
    assert "failed (63)" in [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    fig = render._figure(exp, "pareto", {"x": "latency_ms"})
    front = fig.axes[0].collections[-1].get_offsets().tolist()
    reference = plot_pareto(exp.trials, "latency_ms").axes[0].collections[1].get_offsets().tolist()
    assert front == reference
    assert fig.axes[0].get_xlabel() == "latency (ms), lower is better"
    fig = render._figure(exp, "curves", {})
    assert len([line for line in fig.axes[0].lines if line.get_label().startswith("#")]) == 10


@pytest.mark.parametrize("large", [False, True], ids=["small", "summary"])
def test_pareto_x_direction_comes_from_the_page_or_the_metric_name(large):
    """A score on x (higher is better) gets the front of maximizing it, not of minimizing it."""
    exp = _many(max(render.AGGREGATE_ABOVE.values()) + 500 if large else 300)
    for trial in exp.trials:  # a second score: its own copy of the latency, under a score's name
        if "latency_ms" in trial.metrics:
            trial.metrics["macro_f1"] = trial.metrics["latency_ms"]
    expected = {
        d: plot_pareto(exp.trials, "latency_ms", directions=(d, "maximize"))
        .axes[0]
        .collections[1]
        .get_offsets()
        .tolist()
        for d in ("minimize", "maximize")
    }
    assert expected["minimize"] != expected["maximize"]
    for params, direction in [
        ({"x": "latency_ms"}, "minimize"),  # guessed from the name: a latency
        ({"x": "macro_f1"}, "maximize"),  # guessed: a score
        ({"x": "latency_ms", "xdir": "maximize"}, "maximize"),  # the page says
        ({"x": "macro_f1", "xdir": "minimize"}, "minimize"),
    ]:
        ax = render._figure(exp, "pareto", params).axes[0]
        assert ax.collections[-1].get_offsets().tolist() == expected[direction], params
        assert ax.get_xlabel().endswith(
            f"{'lower' if direction == 'minimize' else 'higher'} is better"
        )
    with pytest.raises(ValueError, match="xdir must be 'minimize' or 'maximize', got 'up'"):
        render.check(exp, "pareto", {"xdir": "up"})


def test_small_experiments_keep_one_mark_per_trial(experiment):
    exp = read_experiment(experiment.workdir)
    fig = render._figure(exp, "history", {})
    assert "trial" in [t.get_text() for t in fig.axes[0].get_legend().get_texts()]


# ----------------------------------------------------------------------------- caching
def test_finished_trials_keep_their_decoded_objects_only_when_unchanged():
    old = [
        Trial(0, {"a": 1}, "succeeded", metric=0.5),
        Trial(1, {"a": 2}, "running"),
        Trial(2, {"a": 3}, "succeeded", metric=0.7),
    ]
    new = [
        Trial(0, {"a": 1}, "succeeded", metric=0.5),
        Trial(1, {"a": 2}, "succeeded", metric=0.6),
        Trial(2, {"a": 3}, "succeeded", metric=0.8),
        Trial(3, {"a": 4}, "running"),
    ]
    kept = _keep_decoded(old, new)
    assert kept[0] is old[0]  # unchanged and finished
    assert kept[1] is new[1] and kept[2] is new[2] and kept[3] is new[3]


def test_a_chart_being_drawn_is_drawn_once():
    cache, calls = ChartCache(), []

    def slow():
        calls.append(1)
        time.sleep(0.3)
        return b"svg"

    threads = [threading.Thread(target=cache.get, args=("k", slow)) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1 and cache.get("k", slow) == b"svg"


def test_charts_catch_up_at_once_when_the_run_is_quiet(experiment):
    exps = Experiments([experiment.workdir], chart_interval=60.0, quiet_after=0.0)
    assert exps.chart_version(0, "v1") == "v1"
    assert exps.chart_version(0, "v2") == "v2"  # finished long ago: no reason to wait
    drawn = []
    exps.on_new_charts = lambda i, v: drawn.append((i, v))
    exps.chart_version(0, "v3")
    assert drawn == [(0, "v3")]


def test_charts_of_a_run_that_just_ended_are_drawn_without_another_poll(tmp_path):
    from nasx.experiment.storage.store import TrialStore

    store = TrialStore.create(tmp_path, {"direction": "maximize"})
    store.add(Trial(0, {"k": 1}, "succeeded", metric=0.5))
    store.close()
    exps = Experiments([tmp_path], chart_interval=60.0, quiet_after=0.4)
    drawn = []
    exps.on_new_charts = lambda i, v: drawn.append(v)
    assert exps.chart_version(0, "v1") == "v1"
    os.utime(tmp_path / "nasx.db")  # the run's last write, just now
    assert exps.chart_version(0, "v2") == "v1"  # still busy: the charts wait
    deadline = time.monotonic() + 10
    while drawn != ["v1", "v2"] and time.monotonic() < deadline:
        time.sleep(0.05)
    # once quiet, the server moved on (and drew) by itself: the page's next poll finds them
    assert drawn == ["v1", "v2"] and exps.chart_version(0, "v2") == "v2"


def test_nasx_serve_draws_the_first_charts_before_the_page_asks(experiment):
    srv = make_server([experiment.workdir], port=0, draw_ahead=True)
    threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    try:
        (head,) = get(srv, "/api/experiments")[1]
        wanted = {
            (0, "history", head["chart_version"], (("metric", "default"),)),
            (0, "pareto", head["chart_version"], (("x", "latency_ms"),)),
            (0, "curves", head["chart_version"], ()),
        }
        deadline = time.monotonic() + 120
        while not wanted <= set(srv.charts._data) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert wanted <= set(srv.charts._data)
        for key in wanted:  # drawn: the page's request is answered from the cache
            assert srv.charts._data[key].result(timeout=120).startswith(b"<?xml")
    finally:
        srv.shutdown()
        srv.server_close()
    plain = make_server([experiment.workdir], port=0)  # a library user's server: no drawing ahead
    plain.server_close()
    assert plain.experiments.on_new_charts is None
