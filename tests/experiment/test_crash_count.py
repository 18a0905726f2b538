"""A trial's crash count is the number of real kills it took while it evaluated: the experiment's
process is SIGKILLed from outside (as the OOM killer or ``kill -9`` would) while one trial
evaluates, once or twice, then resumed; the stored count and the failure's text say as many
deaths as there were kills. A worker process of a pool killed once fails its trial once and
counts no crash of the experiment's process."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from nasx.experiment.storage.store import TrialStore, load_trials
from nasx.trial import failure_kind

SCRIPT = """
import sys, time
import torch.nn as nn
from nasx.experiment import NasExperiment
from nasx.space import ModelSpace, choice
from nasx.strategy import GridSearch

class Widths(ModelSpace):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(1, choice("width", [1, 2, 3]))

def slow_on_2(model):
    width = model.fc.out_features
    print(f"evaluating {width}", flush=True)
    if width == 2:
        time.sleep(float(sys.argv[2]))
    return float(width)

print("ready", flush=True)
NasExperiment(Widths(), slow_on_2, GridSearch(shuffle=False), workdir=sys.argv[1], resume=True,
              progress=False, execution=sys.argv[3], max_trial_crashes=2).run()
"""


def _start(script: Path, workdir: Path, sleep: float, execution: str) -> subprocess.Popen:
    proc = subprocess.Popen(
        [sys.executable, str(script), str(workdir), str(sleep), execution],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)},
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    return proc


def _kill_while_width_2_evaluates(script: Path, workdir: Path) -> None:
    proc = _start(script, workdir, 120.0, "sequential")
    try:
        while True:
            line = proc.stdout.readline()
            assert line, proc.stderr.read()
            if line.strip() == "evaluating 2":
                break
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()
    assert proc.returncode == -signal.SIGKILL


def _crashes(workdir: Path) -> dict:
    store = TrialStore(workdir)
    try:
        return store.meta().get("crashes", {})
    finally:
        store.close()


@pytest.mark.parametrize("kills", [1, 2])
def test_the_crash_count_is_the_number_of_real_kills(tmp_path, kills):
    script = tmp_path / "search.py"
    script.write_text(SCRIPT)
    workdir = tmp_path / "exp"
    for _ in range(kills):
        _kill_while_width_2_evaluates(script, workdir)
    done = subprocess.run(
        [sys.executable, str(script), str(workdir), "0", "sequential"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)},
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert _crashes(workdir) == {"1": kills}  # trial 1 is width 2 (grid order)
    trials = load_trials(workdir)
    if kills == 1:  # under max_trial_crashes=2: run again, and it succeeds
        assert [t.status for t in trials] == ["succeeded"] * 3
    else:
        assert [t.status for t in trials] == ["succeeded", "failed", "succeeded"]
        assert failure_kind(trials[1].error) == "Crashed"
        assert "died 2 time(s)" in trials[1].error


def test_a_worker_killed_once_fails_its_trial_once_and_counts_no_crash(tmp_path):
    script = tmp_path / "search.py"
    script.write_text(SCRIPT)
    workdir = tmp_path / "exp"
    proc = _start(script, workdir, 120.0, "process")
    try:
        deadline = time.monotonic() + 120
        trial_log = workdir / "trials" / "1" / "trial.log"  # a worker's trial prints there
        while "evaluating 2" not in (trial_log.read_text() if trial_log.exists() else ""):
            assert time.monotonic() < deadline and proc.poll() is None, proc.stderr.read()
            time.sleep(0.05)
        children = [
            int(p.parent.name) for p in Path("/proc").glob("[0-9]*/stat") if _parent(p) == proc.pid
        ]
        assert len(children) == 1
        os.kill(children[0], signal.SIGKILL)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, err
    trials = load_trials(workdir)
    assert [t.status for t in trials] == ["succeeded", "failed", "succeeded"]
    assert failure_kind(trials[1].error) == "WorkerDied" and "SIGKILL" in trials[1].error
    assert _crashes(workdir) == {}


def _parent(stat: Path) -> int | None:
    try:
        return int(stat.read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None
