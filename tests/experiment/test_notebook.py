"""The Jupyter progress display: refreshed HTML with counts, best, time left and last trials."""

from __future__ import annotations

import sys

from nasx.experiment.display import notebook
from nasx.experiment.display.notebook import NotebookProgress, in_notebook
from nasx.trial import Trial

from ..toy_experiment import make_experiment


def test_display_counts_best_failures_and_stop_reason():
    shown: list[str] = []
    p = NotebookProgress(4, "minimize", show=shown.append, done=1, best=0.9)
    p.trial_started()
    p.trial_finished(Trial(1, {}, "succeeded", metric=0.4, duration=1.0))
    p.trial_started()
    p.trial_finished(Trial(2, {}, "failed", error="<b>oops</b>\ntrace", duration=1.0))
    p.close("max_trials (4) reached")
    last = shown[-1]
    assert 'value="3" max="4"' in last and "trials 3/4" in last
    assert "best 0.4000" in last and "failed 1" in last and "running 0" in last
    assert "trial 2 failed: &lt;b&gt;oops&lt;/b&gt;" in last and "<b>oops" not in last
    assert "about" in shown[-2] and "left" in shown[-2]  # time left from this run's pace
    assert "left" not in last  # and none once it has stopped (issue 32)
    assert "stopped: max_trials (4) reached" in last


def test_not_a_notebook_here():
    assert in_notebook() is False


def test_experiment_uses_the_notebook_display_in_jupyter(tmp_path, monkeypatch):
    shown: list[str] = []
    monkeypatch.setattr(notebook, "in_notebook", lambda: True)
    monkeypatch.setattr(notebook, "_ipython_display", lambda first: shown.append)
    make_experiment(tmp_path / "e", max_trials=4)
    assert "trials 4/4" in shown[-1] and "stopped: max_trials (4) reached" in shown[-1]
    assert "ipykernel" not in sys.modules
