"""What a person sees while an experiment runs: lines in a log, a bar in a terminal, a resume note."""

from __future__ import annotations

import io

import torch

from nasx.experiment import NasExperiment
from nasx.experiment.display.progress import Progress, format_seconds
from nasx.space import model_context
from nasx.strategy import GridSearch
from nasx.trial import Trial

from .helpers import FailOnTanh, SmallNet


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_durations_carry_units():
    assert [format_seconds(s) for s in (0.04, 9.96, 59.4, 60, 3599, 3600)] == [
        "0.0 s",
        "10.0 s",
        "59 s",
        "1 min 00 s",
        "59 min 59 s",
        "1 h 00 min",
    ]


def test_plain_lines_count_trials_keep_the_best_and_name_failures():
    out = io.StringIO()
    p = Progress(total=3, direction="minimize", stream=out)  # not a terminal: lines
    p.trial_finished(Trial(0, {}, "succeeded", metric=2.0, duration=1.0))
    p.trial_finished(Trial(1, {}, "failed", error="ValueError: bad\ntraceback", duration=0.5))
    p.trial_finished(Trial(2, {}, "succeeded", metric=1.0, duration=1.0))
    p.trial_finished(Trial(3, {}, "rejected", error="too big"))  # not a trial anyone waits for
    lines = out.getvalue().splitlines()
    assert len(lines) == 3
    assert lines[0].startswith("trial 0 succeeded: metric 2.0000 (best 2.0000) in 1.0 s | 1/3 done")
    assert lines[1].startswith("trial 1 failed: ValueError: bad in 0.5 s | 2/3 done")
    assert lines[2] == "trial 2 succeeded: metric 1.0000 (best 1.0000) in 1.0 s | 3/3 done"
    assert (p.done, p.failed, p.best) == (3, 1, 1.0)


def test_a_terminal_gets_one_bar_with_best_running_and_failed():
    out = FakeTerminal()
    p = Progress(total=2, stream=out, done=1, best=0.5)  # resumed: one trial done before
    p.trial_started()
    p.trial_finished(Trial(1, {}, "succeeded", metric=0.75, duration=1.0))
    p.close("max_trials (2) reached")
    screen = out.getvalue()
    assert "trials: 2/2" in screen and "best 0.7500, running 0, failed 0" in screen
    assert "\n" not in screen.split("search stopped")[0].strip()  # one line redrawn in place
    assert screen.rstrip().endswith("max_trials (2) reached; best metric 0.7500")


def test_a_bar_redraws_at_most_ten_times_a_second_and_close_draws_the_last_state(monkeypatch):
    from nasx.experiment.display import progress as progress_module

    now = [100.0]  # a fake clock: 1,000 trials in 1 s
    monkeypatch.setattr(progress_module.time, "monotonic", lambda: now[0])
    out = FakeTerminal()
    p = Progress(total=1000, stream=out)
    draws = []
    redraw = p._bar.set_postfix_str
    p._bar.set_postfix_str = lambda text, refresh=True: (draws.append(text), redraw(text, refresh))
    for i in range(1000):
        p.trial_started()
        now[0] += 0.001
        p.trial_finished(Trial(i, {}, "succeeded", metric=i / 1000, duration=0.001))
    assert 9 <= len(draws) <= 11  # one per 0.1 s of the fake clock, not two per trial
    p.close("max_trials (1000) reached")
    assert draws[-1] == "best 0.9990, running 0, failed 0"
    assert "trials: 1000/1000" in out.getvalue()


def test_a_silent_display_keeps_counts_and_formats_no_line():
    from nasx.experiment.display.progress import Discard

    class Counted(Progress):
        lines = 0

        def _line(self, trial):
            Counted.lines += 1

    p = Counted(total=None, direction="minimize", stream=Discard())
    p.trial_finished(Trial(0, {}, "succeeded", metric=2.0, duration=1.0))
    p.trial_finished(Trial(1, {}, "failed", error="E: x", duration=1.0))
    p.trial_finished(Trial(2, {}, "succeeded", metric=1.0, duration=1.0))
    assert (p.done, p.failed, p.best, Counted.lines) == (3, 1, 1.0, 0)
    shown = Counted(total=None, stream=io.StringIO())  # any other stream gets its lines
    shown.trial_finished(Trial(0, {}, "succeeded", metric=2.0, duration=1.0))
    assert Counted.lines == 1


def test_experiment_reports_each_trial_and_a_resume(tmp_path, capsys):
    NasExperiment(
        SmallNet(), FailOnTanh(), GridSearch(shuffle=False), workdir=tmp_path, max_trials=2
    ).run()
    err = capsys.readouterr().err
    assert sum(line.startswith("trial ") for line in err.splitlines()) == 2
    assert "search stopped after" in err and "2 trials in " in err  # the summary after it
    NasExperiment(
        SmallNet(),
        FailOnTanh(),
        GridSearch(shuffle=False),
        workdir=tmp_path,
        max_trials=3,
        resume=True,
    ).run()
    err = capsys.readouterr().err
    assert f"resuming the experiment in {tmp_path}: 2 trials already done" in err
    assert "3/3 done" in err


def test_progress_false_is_silent(tmp_path, capsys):
    NasExperiment(
        SmallNet(), FailOnTanh(), GridSearch(), workdir=tmp_path, max_trials=2, progress=False
    ).run()
    assert capsys.readouterr().err == ""


def random_metric(model) -> float:
    return torch.rand(()).item()  # depends only on the RNG state the trial starts with


def test_seed_makes_each_trial_reproducible_whatever_ran_before(tmp_path):
    first = NasExperiment(
        SmallNet(),
        random_metric,
        GridSearch(shuffle=False),
        workdir=tmp_path / "a",
        seed=7,
        progress=False,
    )
    first.run()
    # the same experiment in two runs, with unrelated RNG use in between
    second = NasExperiment(
        SmallNet(),
        random_metric,
        GridSearch(shuffle=False),
        workdir=tmp_path / "b",
        seed=7,
        max_trials=3,
        progress=False,
    )
    second.run()
    torch.rand(100)
    second.max_trials = None
    second.run()
    metrics = [t.metric for t in first.trials()]
    assert metrics == [t.metric for t in second.trials()]
    for trial in first.trials():  # reference: seed + trial id, build the model, draw
        torch.manual_seed(7 + trial.id)
        with model_context(trial.arch):
            SmallNet()
        assert trial.metric == torch.rand(()).item()


def test_no_time_is_left_once_the_search_has_stopped():
    """Issue 32: the last line said "about 3.2 s left" after a search that stopped early."""
    import io

    from nasx.experiment.display.notebook import NotebookProgress
    from nasx.trial import Trial

    shown: list[str] = []
    notebook = NotebookProgress(10, show=shown.append)
    stream = io.StringIO()
    terminal = Progress(10, stream=stream, bar=False)
    for p in (notebook, terminal):
        p.trial_started()
        p.trial_finished(Trial(0, {"w": 1}, "succeeded", metric=0.5, duration=1.0))
        assert p.time_left() is not None  # 9 of 10 trials to go, at this pace
        p.close("the strategy has no more archs to propose")
        assert p.time_left() is None
    assert "left" in shown[-2] and "left" not in shown[-1] and "stopped:" in shown[-1]
    assert stream.getvalue().splitlines()[-1].startswith("search stopped after")


def test_the_bar_of_a_search_that_stopped_early_ends_where_it_stopped():
    import io

    from nasx.trial import Trial

    p = Progress(10, stream=io.StringIO(), bar=True)
    bar = p._bar
    p.trial_finished(Trial(0, {"w": 1}, "succeeded", metric=0.5, duration=1.0))
    p.close("max_duration (1 s) reached")
    assert (bar.n, bar.total) == (1, 1)
