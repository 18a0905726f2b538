"""Deaths and stops of the experiment's own process: a trial is counted as crashed only for a death
while it evaluated (issue 29, item 1); Ctrl-C and SIGTERM store the trials in flight as
interrupted, say how to resume, and SIGTERM exits with 143 (item 4). Real signals where a user
would send them."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from nasx.experiment import NasExperiment
from nasx.experiment.storage.store import TrialStore, load_trials
from nasx.strategy import GridSearch
from nasx.trial import failure_kind

from .helpers import ProcessDeath, SmallNet, reference_metric, width_metric

SCRIPT = Path(__file__).with_name("signal_script.py")


def run_small(workdir, evaluator=width_metric, **kwargs):
    exp = NasExperiment(
        SmallNet(),
        evaluator,
        GridSearch(shuffle=False),
        workdir=workdir,
        resume=True,
        progress=False,
        **kwargs,
    )
    exp.run()
    return exp


def all_good(workdir) -> bool:
    trials = load_trials(workdir)
    return [t.id for t in trials] == list(range(6)) and all(
        t.status == "succeeded" and t.metric == reference_metric(t.arch) for t in trials
    )


# ----------------------------------------------------------------------------- deaths, in-process
# Where a death of the process can fall around trial 2 (grid order), outside its evaluation: its
# INSERT (running) or the UPDATE with its result, before or after the statement.
WRITE_POINTS = [
    ("add", "before"),
    ("add", "after"),
    ("update", "before"),
    ("update", "after"),
]


@pytest.mark.parametrize(("method", "when"), WRITE_POINTS)
def test_two_deaths_at_a_storage_write_point_lose_no_trial(tmp_path, monkeypatch, method, when):
    # Twice in a row at the same point, with max_trial_crashes=1: any death counted as the
    # trial's crash would fail it at once. Before an UPDATE, trial 2 dies twice (the second run
    # dies after re-starting it); at the other points trials 2 and 3 (each written once).
    deaths = []
    original = getattr(TrialStore, method)

    def write(self, trial):
        ours = trial.id >= 2 and len(deaths) < 2 and (method == "add" or trial.status != "running")
        if ours and when == "before":
            deaths.append(trial.status)
            raise ProcessDeath(f"{when} {method}")
        original(self, trial)
        if ours and when == "after":
            deaths.append(trial.status)
            raise ProcessDeath(f"{when} {method}")

    monkeypatch.setattr(TrialStore, method, write)
    for _ in range(2):
        with pytest.raises(ProcessDeath):
            run_small(tmp_path, max_trial_crashes=1)
        if len(deaths) == 2:
            break
    monkeypatch.undo()
    run_small(tmp_path, max_trial_crashes=1)
    assert len(deaths) == 2 and all_good(tmp_path), [(t.id, t.error) for t in load_trials(tmp_path)]


def test_a_death_while_evaluating_is_a_crash_and_one_between_trials_is_not(tmp_path):
    from .helpers import dies_on_width_4

    def run():
        return run_small(tmp_path, dies_on_width_4, max_trial_crashes=1)

    with pytest.raises(ProcessDeath):  # width 4 is trial 2: it dies evaluating
        run()
    mark = tmp_path / "trials" / "2" / "evaluating"
    assert mark.exists()
    # The mark is the whole difference: without it the same death counts nothing, and trial 2
    # (max_trial_crashes=1) runs again instead of being failed.
    mark.unlink()
    with pytest.raises(ProcessDeath):
        run()
    store = TrialStore(tmp_path)
    assert store.meta().get("crashes", {}) == {}
    store.close()
    with pytest.raises(ProcessDeath):  # trial 2 is failed (its death was counted); 3 dies
        run()
    exp = run()  # trial 3 is failed; 4 and 5 run
    assert [(t.id, t.status) for t in exp.trials()] == [
        (0, "succeeded"),
        (1, "succeeded"),
        (2, "failed"),
        (3, "failed"),
        (4, "succeeded"),
        (5, "succeeded"),
    ]
    assert all(failure_kind(t.error) == "Crashed" for t in exp.trials("failed"))
    assert "died 1 time(s)" in exp.trials("failed")[0].error
    assert not list(tmp_path.glob("trials/*/evaluating"))


def test_ctrl_c_stores_the_trial_in_flight_as_interrupted_and_resume_reruns_it(tmp_path, capsys):
    calls = []

    def interrupt_once(model):
        calls.append(model.fc1.out_features)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return width_metric(model)

    with pytest.raises(KeyboardInterrupt):
        NasExperiment(
            SmallNet(),
            interrupt_once,
            GridSearch(shuffle=False),
            workdir=tmp_path,
            max_trial_crashes=1,
        ).run()
    assert "stopped: 1 trial in flight stored as interrupted" in capsys.readouterr().err
    trial = load_trials(tmp_path)[2]
    assert trial.status == "waiting" and failure_kind(trial.error) == "Interrupted"
    assert not (tmp_path / "trials" / "2" / "evaluating").exists()
    run_small(tmp_path, interrupt_once, max_trial_crashes=1)  # not a crash: it runs again
    assert all_good(tmp_path)


# ----------------------------------------------------------------------------- real signals
def start(workdir, n, sleep, execution="sequential", propose_sleep=0.0):
    proc = subprocess.Popen(
        [
            sys.executable,
            str(SCRIPT),
            str(workdir),
            str(n),
            str(sleep),
            execution,
            str(propose_sleep),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)},
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "ready"
    return proc


def wait_for_evaluation(proc) -> int:
    """The width whose evaluation began next (the child prints ``evaluating <width>``)."""
    line = proc.stdout.readline()
    assert line.startswith("evaluating "), line + proc.stderr.read()
    return int(line.split()[1])


@pytest.mark.parametrize("execution", ["sequential", "process"])
def test_sigterm_stores_the_trial_in_flight_as_interrupted_and_exits_143(tmp_path, execution):
    proc = start(tmp_path, 4, 30.0 if execution == "sequential" else 0.05, execution)
    if execution == "process":  # the first evaluation runs in a worker; its print goes to its log
        while not TrialStore.exists(tmp_path) or not any(
            t.status == "running" for t in load_trials(tmp_path)
        ):
            pass
    else:
        assert wait_for_evaluation(proc) == 1
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 143, err
    lines = [line for line in err.splitlines() if line.startswith("stopped:")]
    assert len(lines) == 1 and f"nasx resume {tmp_path}" in lines[0], err
    assert "Traceback" not in err
    trials = load_trials(tmp_path)
    assert "running" not in {t.status for t in trials}
    waiting = [t for t in trials if t.status == "waiting"]
    assert waiting and all(failure_kind(t.error) == "Interrupted" for t in waiting)
    # resumed: the interrupted trial runs again, counted as no crash
    subprocess.run(
        [sys.executable, str(SCRIPT), str(tmp_path), "4", "0", execution],
        check=True,
        capture_output=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)},
    )
    trials = load_trials(tmp_path)
    assert [(t.status, t.metric) for t in trials] == [("succeeded", float(w)) for w in range(1, 5)]


@pytest.mark.slow  # 20 restarts of a Python process that imports torch: about a minute
def test_twenty_random_sigkills_lose_none_of_sixty_trials(tmp_path):
    # Trivial evaluations, 10 ms of the driver's own work per trial: a kill rarely lands inside an
    # evaluation, and almost never twice inside the same trial's (that would be a real crash of
    # the trial, counted on purpose). Most land while a run opens the workdir, proposes, re-runs
    # the interrupted trial or writes rows, where the previous release counted every death of a
    # trial marked running as its crash.
    rng = random.Random(0)
    kills = 0
    while kills < 20:
        proc = start(tmp_path, 60, 0.0, propose_sleep=0.01)  # once the child imported all
        try:
            proc.wait(timeout=rng.uniform(0.0, 0.1))
        except subprocess.TimeoutExpired:
            proc.kill()
            kills += 1
        proc.communicate()
        if proc.returncode == 0:
            break  # it finished before the next kill
    proc = start(tmp_path, 60, 0.0, propose_sleep=0.01)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    trials = load_trials(tmp_path)
    assert [t.id for t in trials] == list(range(60))
    widths = sorted(t.arch["width"] for t in trials)
    assert widths == list(range(1, 61))  # no arch twice
    assert [t.status for t in trials] == ["succeeded"] * 60, [
        (t.id, t.error) for t in trials if t.status != "succeeded"
    ]
    assert kills == 20
