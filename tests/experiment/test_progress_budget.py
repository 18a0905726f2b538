"""With a multi-fidelity scheduler the progress display counts budget (epochs), not only trials:
towards the budget the scheduler plans for max_trials trials when it is known, else saying the
most it can be (issue 31, item 7)."""

from __future__ import annotations

import io

import torch.nn as nn

from nasx.experiment import NasExperiment
from nasx.experiment.display import notebook
from nasx.experiment.display.progress import BudgetCount, Progress
from nasx.experiment.schedulers import ASHA, SuccessiveHalving
from nasx.space import ModelSpace, choice
from nasx.strategy import GridSearch


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


class Net(ModelSpace):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(2, choice("width", [1, 2, 3, 4, 5, 6]))


def train(model, budget, report):
    quality = model.fc.out_features / 6
    for epoch in range(budget):
        report(quality * (epoch + 1) / budget)
    return quality


def _run(tmp_path, scheduler, max_trials, **kwargs):
    exp = NasExperiment(
        Net(),
        train,
        GridSearch(shuffle=False),
        workdir=tmp_path,
        max_trials=max_trials,
        scheduler=scheduler,
        **kwargs,
    )
    exp.run()
    return exp


def _stop_line(err: list[str]) -> str:
    """The display's last line (the run's summary follows it: nasx.experiment.results.summary)."""
    (line,) = [line for line in err if line.startswith("search stopped after ")]
    return line


def test_lines_count_budget_towards_the_planned_total(tmp_path, capsys):
    # SuccessiveHalving(1, 4, eta=2) plans 4 trials x 1 + 2 promoted to 2 + 1 promoted to 4 = 8
    exp = _run(tmp_path, SuccessiveHalving(1, 4, eta=2), 4)
    err = capsys.readouterr().err.splitlines()
    trial_lines = [line for line in err if line.startswith("trial ")]
    assert len(trial_lines) == 4  # a promotion is no new trial
    assert trial_lines[0].endswith(" left | budget 1/8")
    assert "paused: metric" in trial_lines[0] and "at budget 1" in trial_lines[0]
    assert _stop_line(err).endswith("; budget 8/8")
    # the count is what the stored trials reached
    assert sum(t.budget for t in exp.trials()) == 8


def test_a_scheduler_whose_budget_depends_on_results_says_the_most_it_can_be(tmp_path, capsys):
    exp = _run(tmp_path, ASHA(1, 4, eta=2), 4)
    last = _stop_line(capsys.readouterr().err.splitlines())
    reached = sum(t.budget for t in exp.trials())
    assert last.endswith(f"; budget {reached} (at most 16)")


def test_a_resumed_run_counts_from_the_stored_budget(tmp_path, capsys):
    _run(tmp_path, SuccessiveHalving(1, 4, eta=2, n_trials=2), 2)
    stored = 2 * 1 + 1 * 1 + 1 * 2  # a bracket of 2: 2 trials to 1, 1 to 2, 1 to 4
    capsys.readouterr()
    _run(tmp_path, SuccessiveHalving(1, 4, eta=2, n_trials=2), 4, resume=True)
    err = capsys.readouterr().err.splitlines()
    first = next(line for line in err if line.startswith("trial "))
    assert f"budget {stored + 1}/{2 * stored}" in first  # the third trial's first epoch
    assert _stop_line(err).endswith(f"; budget {2 * stored}/{2 * stored}")


def test_a_terminal_bar_fills_with_budget_and_counts_trials_beside_it():
    out = FakeTerminal()
    p = Progress(2, stream=out, budget=BudgetCount(0, total=3))
    p.trial_started()
    p.budget_reached(1)
    p.close("max_trials (2) reached")
    screen = out.getvalue()
    assert "budget: 0/3" in screen and "trials 0/2, best -" in screen
    assert "budget: 1/1" in screen  # stopped early: the bar ends where it stopped
    assert screen.rstrip().endswith("max_trials (2) reached; budget 1/3")
    bound = FakeTerminal()
    q = Progress(2, stream=bound, budget=BudgetCount(0, at_most=8))
    q.budget_reached(2)
    q.close()
    assert "budget: 2" in bound.getvalue() and "at most 8, trials 0/2" in bound.getvalue()


def test_time_left_follows_the_budget_pace(monkeypatch):
    clock = iter([0.0, 10.0])
    monkeypatch.setattr("nasx.experiment.display.progress.time.monotonic", lambda: next(clock))
    p = Progress(4, stream=io.StringIO(), bar=False, budget=BudgetCount(0, total=8))
    p.budget_reached(2)  # 2 of 8 in 10 s: 6 left at 5 s each
    assert p.time_left() == 30.0


def test_the_notebook_display_shows_the_budget_bar(tmp_path, monkeypatch):
    shown: list[str] = []
    monkeypatch.setattr(notebook, "in_notebook", lambda: True)
    monkeypatch.setattr(notebook, "_ipython_display", lambda first: shown.append)
    _run(tmp_path, SuccessiveHalving(1, 4, eta=2), 4)
    assert 'value="8" max="8"' in shown[-1]
    assert "budget 8/8 &middot; trials 4/4" in shown[-1]
    assert "trial 3 paused: 0.6667 at budget 1" in shown[-1]  # the budget each trial reached
