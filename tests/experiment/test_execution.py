"""Execution in worker processes: hard crashes of a trial, objects defined in ``__main__``, and an
experiment killed with SIGKILL then resumed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from nasx.experiment import NasExperiment, load_trials
from nasx.strategy import GridSearch

from .helpers import (
    SlowToUnpickle,
    SmallNet,
    crash_on_width_4,
    hang_on_width_8,
    reference_metric,
    slow_metric,
)

ROOT = Path(__file__).resolve().parents[2]


def _env() -> dict:
    return {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }


def test_process_pool_survives_a_hard_crash(tmp_path):
    exp = NasExperiment(
        SmallNet(),
        crash_on_width_4,
        GridSearch(shuffle=False),
        workdir=tmp_path,
        max_concurrent_trials=2,
    )
    assert exp.execution == "process"
    exp.run()
    trials = exp.trials()
    assert len(trials) == 6
    for t in trials:
        if t.arch["width"] == 4:
            assert t.status == "failed"
            assert t.error.startswith(
                f"WorkerDied: the worker process running trial {t.id} was killed by signal SIGKILL"
            )
        else:
            assert t.status == "succeeded" and t.metric == reference_metric(t.arch)
            # The worker's stdout went to the trial's log.
            log = (tmp_path / "trials" / str(t.id) / "trial.log").read_text()
            assert f"evaluating width {t.arch['width']}" in log
    assert exp.export_top_models() == [{"width": 8, "act": 1}]


def test_trial_timeout_stops_a_stuck_trial(tmp_path):
    exp = NasExperiment(
        SmallNet(), hang_on_width_8, GridSearch(shuffle=False), workdir=tmp_path, trial_timeout=3
    )
    assert exp.execution == "process"  # one trial at a time, in a worker that can be stopped
    exp.run()
    trials = exp.trials()
    assert [t.status for t in trials] == ["succeeded"] * 4 + ["failed"] * 2
    assert (
        trials[4].error
        == "TrialTimeout: trial 4 ran longer than trial_timeout (3 s); its worker was stopped"
    )


def test_trial_timeout_does_not_count_the_worker_start_up(tmp_path):
    # Each worker takes 3 s to load the evaluator; the trials themselves take milliseconds.
    exp = NasExperiment(
        SmallNet(),
        SlowToUnpickle(3.0),
        GridSearch(shuffle=False),
        workdir=tmp_path,
        max_trials=2,
        trial_timeout=1,
    )
    exp.run()
    assert [t.status for t in exp.trials()] == ["succeeded", "succeeded"]


def test_trial_timeout_needs_workers(tmp_path):
    with pytest.raises(ValueError, match="trial_timeout needs trials in worker processes"):
        NasExperiment(
            SmallNet(),
            hang_on_width_8,
            GridSearch(),
            workdir=tmp_path,
            trial_timeout="1m",
            execution="sequential",
        )


MAIN_SCRIPT = """
import json, sys
import torch.nn as nn
from nasx.experiment import NasExperiment
from nasx.space import ModelSpace, choice
from nasx.strategy import GridSearch

class MainNet(ModelSpace):  # lives in __main__: workers get it by value
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(2, choice('width', [1, 2, 3]))

OFFSET = 100.0

def evaluate(model):  # a __main__ function using a __main__ global
    return OFFSET + model.fc.out_features

exp = NasExperiment(MainNet(), evaluate, GridSearch(shuffle=False), workdir=sys.argv[1], max_concurrent_trials=2)
exp.run()
print(json.dumps([[t.status, t.metric, t.error] for t in exp.trials()]))
"""


@pytest.mark.slow
def test_process_pool_runs_space_and_evaluator_defined_in_main(tmp_path):
    script = tmp_path / "search.py"
    script.write_text(MAIN_SCRIPT)  # no `if __name__ == '__main__'` guard, on purpose
    out = subprocess.run(
        [sys.executable, str(script), str(tmp_path / "exp")],
        env=_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    rows = json.loads(out.stdout.strip().splitlines()[-1])
    assert rows == [
        ["succeeded", 101.0, None],
        ["succeeded", 102.0, None],
        ["succeeded", 103.0, None],
    ]


KILL_SCRIPT = """
import sys
from nasx.experiment import NasExperiment
from nasx.strategy import GridSearch
from tests.experiment.helpers import SmallNet, slow_metric
NasExperiment(SmallNet(), slow_metric, GridSearch(shuffle=False), workdir=sys.argv[1], resume=True).run()
"""


def test_experiment_killed_with_sigkill_resumes_with_completed_trials_intact(tmp_path):
    script = tmp_path / "search.py"
    script.write_text(KILL_SCRIPT)
    workdir = tmp_path / "exp"
    proc = subprocess.Popen(
        [sys.executable, str(script), str(workdir)], env={**_env(), "NASX_TEST_SLEEP": "0.4"}
    )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            time.sleep(0.05)
            if (workdir / "nasx.db").exists():
                done = [t for t in load_trials(workdir) if t.status == "succeeded"]
                if len(done) >= 2:
                    break
        else:
            pytest.fail("the experiment did not finish 2 trials within 60 s")
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    at_kill = load_trials(workdir)
    completed = [t for t in at_kill if t.status == "succeeded"]
    in_flight = [t for t in at_kill if t.status == "running"]
    assert len(completed) >= 2 and len(at_kill) < 6
    assert len(in_flight) <= 1

    exp = NasExperiment(
        SmallNet(), slow_metric, GridSearch(shuffle=False), workdir=workdir, resume=True
    )
    exp.run()
    final = exp.trials()
    assert [t.id for t in final] == list(range(6))
    assert all(t.status == "succeeded" for t in final)
    assert sorted(json.dumps(t.arch, sort_keys=True) for t in final) == sorted(
        json.dumps({"width": w, "act": a}, sort_keys=True) for w in (2, 4, 8) for a in (0, 1)
    )
    for before in completed:  # untouched by the resume: same metric and timestamps
        after = final[before.id]
        assert after == before
    for t in in_flight:  # re-run in the resumed process
        assert final[t.id].arch == t.arch and final[t.id].end_time > t.start_time
    assert all(t.metric == reference_metric(t.arch) for t in final)


POOL_KILL_SCRIPT = """
import sys
from nasx.experiment import NasExperiment
from nasx.strategy import GridSearch
from tests.experiment.helpers import SmallNet, slow_metric
NasExperiment(SmallNet(), slow_metric, GridSearch(shuffle=False), workdir=sys.argv[1], max_concurrent_trials=2).run()
"""


def _children(pid: int) -> list[int]:
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            out.append(int(stat.parent.name))
    return out


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.slow
def test_killing_a_process_pool_experiment_stops_its_workers_and_resumes(tmp_path):
    script = tmp_path / "search.py"
    script.write_text(POOL_KILL_SCRIPT)
    workdir = tmp_path / "exp"
    proc = subprocess.Popen(
        [sys.executable, str(script), str(workdir)], env={**_env(), "NASX_TEST_SLEEP": "30"}
    )  # longer than the 10 s we wait for the workers to stop
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            time.sleep(0.1)
            if (workdir / "nasx.db").exists() and sum(
                t.status == "running" for t in load_trials(workdir)
            ) == 2:
                break
        else:
            pytest.fail("the pool did not start 2 trials within 90 s")
        workers = _children(proc.pid)
        assert len(workers) == 2
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    deadline = time.monotonic() + 10
    while any(_alive(w) for w in workers) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(_alive(w) for w in workers), "orphaned workers kept running"
    exp = NasExperiment(
        SmallNet(), slow_metric, GridSearch(shuffle=False), workdir=workdir, resume=True
    )
    exp.run()
    assert [t.status for t in exp.trials()] == ["succeeded"] * 6


@pytest.mark.slow
def test_single_trials_in_a_child_process_isolate_a_hard_crash(tmp_path):
    # execution='process' with one concurrent trial: isolation without concurrency.
    exp = NasExperiment(
        SmallNet(),
        crash_on_width_4,
        GridSearch(shuffle=False),
        workdir=tmp_path,
        execution="process",
        max_trials=4,
        progress=False,
    )
    exp.run()
    assert [t.status for t in exp.trials()] == ["succeeded", "succeeded", "failed", "failed"]
    assert all(t.error.startswith("WorkerDied") for t in exp.trials("failed"))


CRASH_SCRIPT = """
import sys
from nasx.experiment import NasExperiment
from nasx.strategy import GridSearch
from tests.experiment.helpers import SmallNet, crash_on_width_4
NasExperiment(SmallNet(), crash_on_width_4, GridSearch(shuffle=False), workdir=sys.argv[1],
              resume=True, max_trial_crashes=int(sys.argv[2]), progress=False).run()
"""


@pytest.mark.slow
def test_a_trial_that_sigkills_a_sequential_experiment_is_not_rerun_forever(tmp_path):
    """Real SIGKILLs: width 4 (trials 2 and 3) kills the experiment's own process each time."""
    script = tmp_path / "search.py"
    script.write_text(CRASH_SCRIPT)
    workdir = tmp_path / "exp"
    codes = []
    for _ in range(8):  # a crash loop would never exit 0
        proc = subprocess.run(
            [sys.executable, str(script), str(workdir), "2"], env=_env(), capture_output=True
        )
        codes.append(proc.returncode)
        if proc.returncode == 0:
            break
    # 2 crashes of trial 2, then 2 of trial 3, then the rest of the grid.
    assert codes == [-signal.SIGKILL] * 4 + [0]
    trials = load_trials(workdir)
    assert [t.status for t in trials] == ["succeeded"] * 2 + ["failed"] * 2 + ["succeeded"] * 2
    assert all("crashed the process" in t.error for t in trials if t.status == "failed")


@pytest.mark.parametrize("trial_timeout", [None, 30.0])
def test_a_worker_announces_a_trials_start_only_when_a_timeout_counts_from_it(
    tmp_path, trial_timeout
):
    # Each wait() reads one message per ready worker: the start, then the result. Without a
    # timeout the start is not sent (one wake-up less per trial), so the result comes first.
    from nasx.experiment.execution.jobs import Job
    from nasx.experiment.execution.local import ProcessPoolExecutor
    from nasx.experiment.execution.runner import ModelBuilder

    from .helpers import width_metric

    ex = ProcessPoolExecutor(
        ModelBuilder.from_space(SmallNet()),
        width_metric,
        1,
        tmp_path / "workers",
        trial_timeout=trial_timeout,
    )
    try:
        for i, width in enumerate([4, 8]):
            ex.submit(Job(i, {"width": width, "act": 0}, log_path=str(tmp_path / f"{i}.log")))
            first = ex.wait(timeout=60)
            if trial_timeout is None:
                assert [(r.id, r.status) for r in first] == [(i, "succeeded")]
            else:
                assert first == [] and ex._busy[0].started is not None
                assert [r.id for r in ex.wait(timeout=60)] == [i]
    finally:
        ex.shutdown()
