"""Notebook display of trials and experiments: escaped HTML, and the pandas conversion."""

from __future__ import annotations

import pytest

from nasx.experiment.display.html import trials_html
from nasx.experiment.results.table import TrialTable
from nasx.trial import Trial

from ..toy_experiment import make_experiment

TRIALS = [
    Trial(
        0,
        {"<b>op": "<i>conv"},
        "succeeded",
        metric=0.5,
        metrics={"default": 0.5, "ms": 3.0},
        duration=1.0,
    ),
    Trial(1, {"<b>op": "pool"}, "failed", error="<script>alert(1)</script>\ntraceback"),
]


def test_every_user_string_is_escaped():
    html = TrialTable(TRIALS)._repr_html_()
    assert "<script>" not in html and "<b>" not in html and "<i>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and "&lt;i&gt;conv" in html
    assert html.count("<tr>") == 3  # header + 2 trials
    assert "<th" in html and ">ms</th>" in html  # a column per extra metric


def test_long_tables_are_cut_with_a_note():
    many = [Trial(i, {"k": i}, "succeeded", metric=float(i)) for i in range(70)]
    html = trials_html(many, max_rows=60)
    assert html.count("<tr>") == 1 + 60 + 1 and "... 10 more trials" in html


def test_to_pandas_has_a_row_per_trial_and_a_column_per_metric():
    pd = pytest.importorskip("pandas")
    df = TrialTable(TRIALS).to_pandas()
    assert isinstance(df, pd.DataFrame)
    assert list(df.columns) == [
        "id",
        "status",
        "metric",
        "duration",
        "start_time",
        "end_time",
        "arch",
        "error",
        "metric_ms",
    ]
    assert df["metric_ms"].tolist()[0] == 3.0 and df.loc[1, "status"] == "failed"
    assert df.loc[0, "arch"] == {"<b>op": "<i>conv"}


def test_to_pandas_without_pandas_says_how_to_get_it(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "pandas", None)  # as if not installed
    with pytest.raises(ImportError, match=r'pip install "nasx\[pandas\]"'):
        TrialTable(TRIALS).to_pandas()


def test_experiment_html_shows_status_best_and_table(tmp_path):
    exp = make_experiment(tmp_path / "e", max_trials=6, seed=3)
    html = exp._repr_html_()
    succeeded = len(exp.trials("succeeded"))
    assert f"{succeeded} succeeded" in html and "ToyCells" in html and "Random" in html
    best = max(exp.trials("succeeded"), key=lambda t: (t.metric, -t.id))
    assert f"best: {best.metric:.6g} (trial {best.id})" in html
    assert "&lt;script&gt;" in html and "<script>" not in html  # the toy's failure message
