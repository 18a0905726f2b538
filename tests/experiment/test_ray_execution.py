"""Ray execution on a local Ray instance (skipped when Ray is not installed)."""

from __future__ import annotations

import pytest

from nasx.experiment import NasExperiment
from nasx.strategy import GridSearch

from .helpers import SmallNet, crash_on_width_4, hang_on_width_8, reference_metric

ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'nasx[ray]')")


@pytest.fixture
def local_ray():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


@pytest.mark.slow
def test_ray_runs_every_trial_and_survives_a_hard_crash(tmp_path, local_ray):
    exp = NasExperiment(
        SmallNet(),
        crash_on_width_4,
        GridSearch(shuffle=False),
        workdir=tmp_path,
        max_concurrent_trials=2,
        execution="ray",
    )
    exp.run()
    trials = exp.trials()
    assert [t.id for t in trials] == list(range(6))
    for t in trials:
        if t.arch["width"] == 4:
            assert t.status == "failed" and t.error.startswith(
                "WorkerDied: Ray could not run trial"
            )
        else:
            assert t.status == "succeeded" and t.metric == reference_metric(t.arch)
            # the log came back from the Ray worker and was written by the experiment
            assert "succeeded" in (tmp_path / "trials" / str(t.id) / "trial.log").read_text()
    assert exp.export_top_models() == [{"width": 8, "act": 1}]
    assert ray.is_initialized()  # a Ray the user started is left running


@pytest.mark.slow
def test_ray_trial_timeout_cancels_a_stuck_trial(tmp_path, local_ray):
    exp = NasExperiment(
        SmallNet(),
        hang_on_width_8,
        GridSearch(shuffle=False),
        workdir=tmp_path,
        max_concurrent_trials=2,
        execution="ray",
        trial_timeout=5,
    )
    exp.run()
    trials = exp.trials()
    assert [t.status for t in trials] == ["succeeded"] * 4 + ["failed"] * 2
    assert trials[4].error.startswith("TrialTimeout: trial 4 ran longer than trial_timeout (5 s)")
