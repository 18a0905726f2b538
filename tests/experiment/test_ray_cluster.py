"""Ray trials on a cluster whose machines die: a worker node killed mid-trial, the experiment's
own process (the driver) killed and restarted. The cluster is a head and two worker nodes, each
its own set of processes on this machine (tests/experiment/conftest.py)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from nasx.experiment import NasExperiment, load_trials
from nasx.strategy import GridSearch

from .helpers import SmallNet, reference_metric
from .ray_helpers import NodeRecorder, slow_width_metric

ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'nasx[ray]')")

REPO_ROOT = Path(__file__).resolve().parents[2]
HANG = {"width": 4, "act": 0}  # trial 2 in GridSearch(shuffle=False) order


def _wait_for(predicate, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


@pytest.mark.slow  # end to end: make test-slow runs it (and CI)
def test_a_worker_node_killed_mid_trial_fails_only_its_trial(tmp_path, ray_cluster):
    markers = tmp_path / "markers"
    markers.mkdir()
    hang_marker = markers / f"{HANG['width']}-{HANG['act']}"
    killed: list[str] = []

    def kill_the_node_of_the_hanging_trial():
        node_id = _wait_for(
            lambda: hang_marker.exists() and hang_marker.read_text(), 120, "the hanging trial"
        )
        ray_cluster.kill(ray_cluster.node_by_id(node_id))
        killed.append(node_id)

    killer = threading.Thread(target=kill_the_node_of_the_hanging_trial, daemon=True)
    killer.start()
    exp = NasExperiment(
        SmallNet(),
        NodeRecorder(markers, seconds=0.2, hang=HANG),
        GridSearch(shuffle=False),
        workdir=tmp_path / "exp",
        max_concurrent_trials=2,
        execution="ray",
        progress=False,
    )
    try:
        exp.run()
    finally:
        killer.join(timeout=1)
        ray_cluster.restore()
    trials = exp.trials()
    assert [t.id for t in trials] == list(range(6))  # each arch once: nothing lost or repeated
    failed = [t for t in trials if t.status == "failed"]
    assert [t.arch for t in failed] == [HANG]
    assert failed[0].error.startswith(
        "WorkerDied: trial 2 lost its Ray node: the node running it died"
    )
    for t in trials:
        if t.arch != HANG:
            assert t.status == "succeeded" and t.metric == reference_metric(t.arch)
    # the other trials went on, some of them on the node that survived
    survivor = {p.read_text() for p in markers.iterdir()} - set(killed)
    assert killed and survivor


@pytest.mark.slow
def test_the_driver_killed_and_restarted_resumes_with_nothing_lost_or_repeated(
    tmp_path, ray_cluster
):
    workdir = tmp_path / "exp"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    driver = subprocess.Popen(
        [sys.executable, "-m", "tests.experiment.ray_helpers", ray_cluster.address, str(workdir)],
        cwd=REPO_ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:

        def two_done():
            if not (workdir / "nasx.db").exists():
                return None
            trials = load_trials(workdir)
            return trials if sum(t.status == "succeeded" for t in trials) >= 2 else None

        _wait_for(two_done, 180, "two finished trials")
    finally:
        driver.send_signal(signal.SIGKILL)
        driver.wait()
    before = {t.id: t for t in load_trials(workdir)}
    assert len(before) < 6 and any(t.status == "running" for t in before.values())

    exp = NasExperiment(
        SmallNet(),
        slow_width_metric,
        GridSearch(shuffle=False),
        workdir=workdir,
        max_concurrent_trials=2,
        execution="ray",
        resume=True,
        progress=False,
    )
    exp.run()
    trials = exp.trials()
    assert [t.id for t in trials] == list(range(6))
    assert sorted((t.arch["width"], t.arch["act"]) for t in trials) == [
        (w, a) for w in (2, 4, 8) for a in (0, 1)
    ]  # every arch exactly once
    assert all(t.status == "succeeded" and t.metric == reference_metric(t.arch) for t in trials)
    for t in before.values():  # what the killed driver finished stayed as it was
        if t.status == "succeeded":
            assert trials[t.id].end_time == t.end_time and trials[t.id].metric == t.metric
