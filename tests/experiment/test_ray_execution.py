"""Ray execution on a Ray cluster of a head and two worker nodes (tests/experiment/conftest.py):
results, hard crashes, timeouts, placement by resources and Ray's own errors."""

from __future__ import annotations

import pytest

from nasx.experiment import NasExperiment
from nasx.strategy import GridSearch
from nasx.trial import failure_kind

from .helpers import (
    SlowToUnpickle,
    SmallNet,
    crash_on_width_4,
    hang_on_width_8,
    reference_metric,
)
from .ray_helpers import NodeRecorder, assigned_resources

ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'nasx[ray]')")


@pytest.mark.slow  # end to end: make test-slow runs it (and CI)
def test_ray_runs_every_trial_and_survives_a_hard_crash(tmp_path, ray_cluster):
    exp = NasExperiment(
        SmallNet(),
        crash_on_width_4,
        GridSearch(shuffle=False),
        workdir=tmp_path,
        max_concurrent_trials=2,
        execution="ray",
        progress=False,
    )
    exp.run()
    trials = exp.trials()
    assert [t.id for t in trials] == list(range(6))
    for t in trials:
        if t.arch["width"] == 4:
            assert t.status == "failed" and t.error.startswith(
                f"WorkerDied: trial {t.id} lost its Ray worker: the process running it died"
            )
            assert "\nWorkerCrashedError: " in t.error
        else:
            assert t.status == "succeeded" and t.metric == reference_metric(t.arch)
            # the log came back from the Ray worker and was written by the experiment
            assert "succeeded" in (tmp_path / "trials" / str(t.id) / "trial.log").read_text()
    assert exp.export_top_models() == [{"width": 8, "act": 1}]
    assert ray.is_initialized()  # a Ray the user started is left running


@pytest.mark.slow  # end to end: make test-slow runs it (and CI)
def test_trials_spread_over_the_worker_nodes(tmp_path, ray_cluster):
    markers = tmp_path / "markers"
    markers.mkdir()
    exp = NasExperiment(
        SmallNet(),
        NodeRecorder(markers, seconds=0.5),
        GridSearch(shuffle=False),
        workdir=tmp_path / "exp",
        max_concurrent_trials=2,
        execution="ray",
        progress=False,
    )
    exp.run()
    assert [t.status for t in exp.trials()] == ["succeeded"] * 6
    nodes = {p.read_text() for p in markers.iterdir()}
    assert nodes == {n.node_id for n in ray_cluster.cluster.worker_nodes}  # both, never the head


@pytest.mark.slow  # end to end: make test-slow runs it (and CI)
def test_trial_resources_place_every_trial_on_the_nodes_that_have_them(tmp_path, ray_cluster):
    exp = NasExperiment(
        SmallNet(),
        assigned_resources,
        GridSearch(shuffle=False),
        workdir=tmp_path,
        max_concurrent_trials=2,
        trial_resources={"num_cpus": 1, "resources": {"node_b": 1}},  # execution='ray' implied
        progress=False,
    )
    assert exp.execution == "ray"
    exp.run()
    trials = exp.trials()
    assert [t.status for t in trials] == ["succeeded"] * 6
    assert all(t.metrics.get("node_b") == 1.0 and "node_a" not in t.metrics for t in trials)


@pytest.mark.slow  # end to end: make test-slow runs it (and CI)
def test_resources_no_node_has_are_reported(tmp_path, ray_cluster, caplog):
    from nasx.experiment.execution.ray import RayExecutor

    executor = RayExecutor(lambda arch: None, lambda model: 1.0, 1, resources={"num_gpus": 1})
    executor.shutdown()
    assert "no node of the Ray cluster has the resources one trial asks for" in caplog.text


def test_bad_trial_resources_are_refused_before_anything_runs(tmp_path):
    with pytest.raises(ValueError, match="unknown key 'gpu'; allowed: num_cpus, num_gpus"):
        NasExperiment(
            SmallNet(), lambda m: 1.0, GridSearch(), workdir=tmp_path, trial_resources={"gpu": 1}
        )
    with pytest.raises(ValueError, match="num_cpus must be a non-negative number, got -1"):
        NasExperiment(
            SmallNet(),
            lambda m: 1.0,
            GridSearch(),
            workdir=tmp_path,
            trial_resources={"num_cpus": -1},
        )
    with pytest.raises(ValueError, match="pass execution='ray'"):
        NasExperiment(
            SmallNet(),
            lambda m: 1.0,
            GridSearch(),
            workdir=tmp_path,
            execution="process",
            trial_resources={"num_cpus": 1},
        )


@pytest.mark.parametrize(
    ("error", "says"),
    [
        (
            lambda rx: rx.OutOfMemoryError(
                "Task was killed due to the node running low on memory."
            ),
            "was killed by Ray's memory monitor: its node ran out of memory",
        ),
        (
            lambda rx: rx.NodeDiedError("Task failed because the node it was running on is dead."),
            "lost its Ray node: the node running it died",
        ),
        (lambda rx: rx.WorkerCrashedError(), "lost its Ray worker: the process running it died"),
        (lambda rx: rx.ActorDiedError(), "lost its Ray actor: the actor running it died"),
        (
            lambda rx: rx.ObjectLostError("ab" * 14, None, ""),
            "lost its result: Ray lost the object",
        ),
        (lambda rx: rx.OwnerDiedError("ab" * 14, None, ""), "lost its result: Ray lost the object"),
        (lambda rx: rx.TaskCancelledError(), "was cancelled in Ray"),
        (lambda rx: rx.RaySystemError("boom"), "could not be run by Ray"),
    ],
)
def test_each_ray_error_becomes_one_clear_trial_error(error, says):
    from ray import exceptions as rx

    from nasx.experiment.execution.ray import ray_failure

    e = error(rx)
    text = ray_failure(e, 7)
    head, ray_line = text.split("\n")  # what happened, then Ray's own first line: two lines
    assert head.startswith(f"WorkerDied: trial 7 {says}")
    assert ray_line.startswith(f"{type(e).__name__}: ")
    assert failure_kind(text) == "WorkerDied"


@pytest.mark.slow
def test_ray_trial_timeout_does_not_count_loading_the_task(tmp_path, ray_cluster):
    # Each task takes 3 s to load the evaluator (as a new worker importing torch would); the
    # trials themselves take milliseconds. Counted from submission, both would time out.
    exp = NasExperiment(
        SmallNet(),
        SlowToUnpickle(3.0),
        GridSearch(shuffle=False),
        workdir=tmp_path,
        max_trials=2,
        max_concurrent_trials=2,
        execution="ray",
        trial_timeout=1,
        progress=False,
    )
    exp.run()
    assert [t.status for t in exp.trials()] == ["succeeded", "succeeded"]


@pytest.mark.slow
def test_ray_trial_timeout_cancels_a_stuck_trial(tmp_path, ray_cluster):
    exp = NasExperiment(
        SmallNet(),
        hang_on_width_8,
        GridSearch(shuffle=False),
        workdir=tmp_path,
        max_concurrent_trials=2,
        execution="ray",
        trial_timeout=5,
        progress=False,
    )
    exp.run()
    trials = exp.trials()
    assert [t.status for t in trials] == ["succeeded"] * 4 + ["failed"] * 2
    assert trials[4].error.startswith("TrialTimeout: trial 4 ran longer than trial_timeout (5 s)")
