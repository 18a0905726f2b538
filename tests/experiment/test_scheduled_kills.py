"""Exact resume of a scheduled experiment killed for real: a child process runs ASHA over a
table (tests/experiment/scheduled_helpers.py) and is SIGKILLed several times, at writes to the
store (inside its transactions too) and at random moments, then resumed until it finishes.

Sequential, in a process pool and on Ray with one trial at a time: the result is the
uninterrupted sequential run's (each trial's budget, status and curve, the scheduler's final
state). With two worker processes the order of events depends on timing, so no run is exactly
another; there the store must be consistent (every rung holds each trial that reached it, with
its value; no promotion or job lost). All: no job is trained again except the ones in flight at
a kill.

The answers a job in flight got are stored only when another job starts or ends meanwhile, and a
resumed run gives them to the job it re-runs. Whether that replay works shows only where the
scheduler, asked again, would answer otherwise: three jobs at once, decided in an order fixed by
the events (tests/experiment/lockstep.py), with median stopping or ASHA pruning at its rungs
(tests/experiment/replay_helpers.py); the driver is killed right after writes that store such
answers, and the result is the uninterrupted run's.

The Ray driver is killed at writes and once its trials have trained a random number of epochs
more (the journal says so: no sleep races Ray's start-up, which takes seconds); its Ray tasks
die with it (Ray ends a dead driver's job), and the resumed driver re-runs the one in flight.
"""

from __future__ import annotations

import collections
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from nasx.experiment.loop.scheduled import JOBS_KEY, STATE_KEY

from .replay_helpers import SCHEDULERS, answered, asked_again, with_lockstep
from .replay_helpers import experiment as experiment_of
from .scheduled_helpers import N_TRIALS, check_rungs, experiment, key, read_journal, stored

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


def _env() -> dict:
    return {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }


def _start(workdir, execution, kill_at, journal, *more, stderr=subprocess.PIPE) -> subprocess.Popen:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.experiment.scheduled_helpers",
            str(workdir),
            execution,
            str(kill_at),
            str(journal),
            *more,
        ],
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=stderr,
        text=True,
    )


def _lines(path) -> int:
    return len(Path(path).read_text().splitlines()) if Path(path).exists() else 0


def _kill_after_epochs(proc, journal, epochs, timeout=300.0) -> None:
    """SIGKILL ``proc`` once ``journal`` has ``epochs`` more lines than now (its trials trained
    that much more), unless it ends first."""
    target, deadline = _lines(journal) + epochs, time.monotonic() + timeout
    while proc.poll() is None and _lines(journal) < target:
        if time.monotonic() > deadline:
            pytest.fail(f"the driver trained fewer than {epochs} epochs in {timeout:g} s")
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)


def _running(workdir) -> set[str]:
    """The archs of the trials whose job was in flight (stored running) at a kill."""
    if not (Path(workdir) / "nasx.db").exists():
        return set()
    return {key(t.arch) for t in stored(workdir)[0] if t.status in ("running", "waiting")}


def _run_with_kills(workdir, journal, execution, seed, kills=6, workers=None, address=None):
    """Run in driver processes until done (``workers`` trials at once: the script's default
    when None; on the Ray cluster at ``address``), each of the first ``kills`` SIGKILLed: at a
    random write (odd-numbered kills) or at a random moment after start-up (even; with
    ``workers``, once its trials have trained a random number of epochs more: a pool's workers
    and Ray take seconds to start); the archs in flight at each kill."""
    rng = random.Random(seed)
    in_flight: list[set[str]] = []
    more = tuple(str(a) for a in (workers, address) if a is not None)
    # stderr to a file: a driver blocked on a full pipe (Ray logs a lot) would never finish
    err_path = Path(workdir).parent / f"{Path(workdir).name}.err"
    for attempt in range(kills + 10):
        at_write = attempt < kills and attempt % 2 == 0
        kill_at = rng.randint(1, 40) if at_write else 0
        with open(err_path, "w") as err:
            proc = _start(workdir, execution, kill_at, journal, *more, stderr=err)
            try:
                assert proc.stdout.readline().strip() == "ready", err_path.read_text()
                if attempt < kills and not at_write and workers is None:
                    time.sleep(rng.uniform(0.3, 1.5))
                    proc.send_signal(signal.SIGKILL)
                elif attempt < kills and not at_write:
                    _kill_after_epochs(proc, journal, rng.randint(1, 25))
                out, _ = proc.communicate(timeout=600 if execution == "ray" else 240)
            finally:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
        if proc.returncode == 0:
            assert "done" in out
            return in_flight
        assert proc.returncode == -signal.SIGKILL, err_path.read_text()
        in_flight.append(_running(workdir))
        if execution != "ray":  # Ray ends a dead driver's tasks itself
            time.sleep(1.2)  # a killed pool's workers notice it within a second and stop
    pytest.fail("the experiment did not finish")


def _jobs_run_again(journal, reference=None) -> collections.Counter:
    """How many times each job (arch, budget) was started beyond once (or beyond its count
    in ``reference``, an uninterrupted run's journal)."""
    jobs = collections.Counter(read_journal(journal)[0])
    base = collections.Counter(read_journal(reference)[0]) if reference else collections.Counter()
    return collections.Counter(
        {job: n - max(base[job], 1) for job, n in jobs.items() if n > max(base[job], 1)}
    )


def _check_only_jobs_in_flight_ran_again(again, in_flight):
    for (arch, budget), n in again.items():
        kills = sum(arch in running for running in in_flight)
        assert n <= kills, f"job {arch} to {budget} ran {n} more time(s), {kills} kill(s) in it"


def test_a_sequential_run_killed_again_and_again_decides_as_an_uninterrupted_one(tmp_path):
    whole = experiment(tmp_path / "whole", tmp_path / "whole.journal")
    whole.run()
    in_flight = _run_with_kills(tmp_path / "cut", tmp_path / "cut.journal", "sequential", 0)
    _check_same_as_uninterrupted(tmp_path, in_flight, killed_mid_job=False)


def test_a_process_pool_run_killed_again_and_again_loses_no_rung(tmp_path):
    in_flight = _run_with_kills(tmp_path / "cut", tmp_path / "cut.journal", "process", 1)
    assert len(in_flight) >= 4
    trials, _ = stored(tmp_path / "cut")
    assert len(trials) == N_TRIALS and any(t.budget == 9 for t in trials)
    check_rungs(tmp_path / "cut")
    again = _jobs_run_again(tmp_path / "cut.journal")  # (each job runs once uninterrupted)
    _check_only_jobs_in_flight_ran_again(again, in_flight)


def _check_same_as_uninterrupted(tmp_path, in_flight, killed_mid_job=True):
    """The killed and resumed run in ``tmp_path / 'cut'`` made the uninterrupted run's
    (``tmp_path / 'whole'``) decisions: every trial's arch, budget, status and curve, the
    scheduler's final state; its rungs are consistent, and only the jobs in flight at a kill
    ran again. ``in_flight``: the archs in flight at each kill; ``killed_mid_job``: whether
    some kill must have stopped a job (a kill after epochs trained does; a timed one may not)."""
    assert len(in_flight) >= 4  # (a kill may come after the run's end)
    assert any(in_flight) or not killed_mid_job
    cut, cut_meta = stored(tmp_path / "cut")
    ref, ref_meta = stored(tmp_path / "whole")
    assert len(cut) == N_TRIALS
    assert [(t.arch, t.budget, t.status, t.intermediates) for t in cut] == [
        (t.arch, t.budget, t.status, t.intermediates) for t in ref
    ]
    assert cut_meta[STATE_KEY] == ref_meta[STATE_KEY]
    check_rungs(tmp_path / "cut")
    again = _jobs_run_again(tmp_path / "cut.journal", tmp_path / "whole.journal")
    _check_only_jobs_in_flight_ran_again(again, in_flight)


def test_a_process_pool_run_one_trial_at_a_time_killed_again_and_again_decides_as_an_uninterrupted_one(
    tmp_path,
):
    """One worker process: the order of events is the sequential run's, so the killed and
    resumed pool run makes exactly the uninterrupted in-process run's decisions."""
    whole = experiment(tmp_path / "whole", tmp_path / "whole.journal")
    whole.run()
    in_flight = _run_with_kills(tmp_path / "cut", tmp_path / "cut.journal", "process", 4, workers=1)
    _check_same_as_uninterrupted(tmp_path, in_flight)


def test_a_ray_driver_killed_again_and_again_decides_as_an_uninterrupted_run(tmp_path, ray_cluster):
    whole = experiment(tmp_path / "whole", tmp_path / "whole.journal")
    whole.run()
    in_flight = _run_with_kills(
        tmp_path / "cut", tmp_path / "cut.journal", "ray", 2, workers=1, address=ray_cluster.address
    )
    _check_same_as_uninterrupted(tmp_path, in_flight)


def _run_replay_with_kills(workdir, journal, scheduler, seed, kills=4):
    """Run the experiment of tests/experiment/replay_helpers.py (three jobs at once, decided in
    lockstep) in driver processes until done, each of the first ``kills`` SIGKILLed right after
    a write that stores answers given to a job in flight; per kill, the archs in flight and the
    stored answers the scheduler would now give otherwise."""
    rng = random.Random(seed)
    in_flight: list[set[str]] = []
    changed: list[list] = []
    for attempt in range(kills + 3):
        kill_at = rng.randint(1, 6) if attempt < kills else 0
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.experiment.replay_helpers",
                str(workdir),
                scheduler,
                str(kill_at),
                str(journal),
            ],
            env=_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            out, err = proc.communicate(timeout=240)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        if proc.returncode == 0:
            assert "done" in out
            return in_flight, changed
        assert proc.returncode == -signal.SIGKILL, err
        assert answered(stored(workdir)[1][JOBS_KEY]), "killed with no answer stored"
        in_flight.append(_running(workdir))
        changed.append(asked_again(workdir, scheduler))
    pytest.fail("the experiment did not finish")


@pytest.mark.parametrize("scheduler", sorted(SCHEDULERS))
def test_a_driver_killed_with_answered_jobs_in_flight_answers_them_as_before(tmp_path, scheduler):
    """Jobs in flight whose answers were stored (three at once: their answers reach the store
    when another job starts or ends) are re-run after the kill, and only their stored answers
    reproduce the uninterrupted run: the scheduler, asked again, would now answer some of them
    otherwise, as more results have arrived at those budgets."""
    with with_lockstep():
        experiment_of(tmp_path / "whole", tmp_path / "whole.journal", scheduler).run()
    in_flight, changed = _run_replay_with_kills(
        tmp_path / "cut", tmp_path / "cut.journal", scheduler, 3
    )
    assert len(in_flight) == 4, "the driver was not killed 4 times at a write storing answers"
    assert all(in_flight)
    assert any(changed), "no stored answer mattered: the test would not see a resume that re-asks"

    cut, cut_meta = stored(tmp_path / "cut")
    ref, ref_meta = stored(tmp_path / "whole")
    assert len(cut) == N_TRIALS
    assert [(t.arch, t.budget, t.status, t.intermediates) for t in cut] == [
        (t.arch, t.budget, t.status, t.intermediates) for t in ref
    ]
    assert cut_meta[STATE_KEY] == ref_meta[STATE_KEY]
    assert cut_meta[JOBS_KEY] == {"jobs": {}, "promotions": []}
    again = _jobs_run_again(tmp_path / "cut.journal", tmp_path / "whole.journal")
    _check_only_jobs_in_flight_ran_again(again, in_flight)
