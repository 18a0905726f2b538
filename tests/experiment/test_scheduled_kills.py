"""Exact resume of a scheduled experiment killed for real: a child process runs ASHA over a
table (tests/experiment/scheduled_helpers.py) and is SIGKILLed several times, at writes to the
store (inside its transactions too) and at random moments, then resumed until it finishes.

Sequential: the result is the uninterrupted run's (each trial's budget, status and curve, the
scheduler's final state). With two worker processes the order of events depends on timing, so
no run is exactly another; there the store must be consistent (every rung holds each trial that
reached it, with its value; no promotion or job lost). Both: no job is trained again except the
ones in flight at a kill.
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

from nasx.experiment.fidelity import STATE_KEY

from .scheduled_helpers import N_TRIALS, check_rungs, experiment, key, read_journal, stored

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


def _env() -> dict:
    return {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }


def _start(workdir, execution, kill_at, journal) -> subprocess.Popen:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.experiment.scheduled_helpers",
            str(workdir),
            execution,
            str(kill_at),
            str(journal),
        ],
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _running(workdir) -> set[str]:
    """The archs of the trials whose job was in flight (stored running) at a kill."""
    if not (Path(workdir) / "nasx.db").exists():
        return set()
    return {key(t.arch) for t in stored(workdir)[0] if t.status in ("running", "waiting")}


def _run_with_kills(workdir, journal, execution, seed, kills=6):
    """Run until done, SIGKILLed ``kills`` times: at a random write (odd-numbered kills) or
    at a random moment after start-up (even); the archs in flight at each kill."""
    rng = random.Random(seed)
    in_flight: list[set[str]] = []
    for attempt in range(kills + 10):
        at_write = attempt < kills and attempt % 2 == 0
        proc = _start(workdir, execution, rng.randint(1, 40) if at_write else 0, journal)
        try:
            assert proc.stdout.readline().strip() == "ready"
            if attempt < kills and not at_write:
                time.sleep(rng.uniform(0.3, 1.5))
                proc.send_signal(signal.SIGKILL)
            out, err = proc.communicate(timeout=240)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        if proc.returncode == 0:
            assert "done" in out
            return in_flight
        assert proc.returncode == -signal.SIGKILL, err
        in_flight.append(_running(workdir))
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
    assert len(in_flight) >= 4  # (a kill may come after the run's end)

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


def test_a_process_pool_run_killed_again_and_again_loses_no_rung(tmp_path):
    in_flight = _run_with_kills(tmp_path / "cut", tmp_path / "cut.journal", "process", 1)
    assert len(in_flight) >= 4
    trials, _ = stored(tmp_path / "cut")
    assert len(trials) == N_TRIALS and any(t.budget == 9 for t in trials)
    check_rungs(tmp_path / "cut")
    again = _jobs_run_again(tmp_path / "cut.journal")  # (each job runs once uninterrupted)
    _check_only_jobs_in_flight_ran_again(again, in_flight)
