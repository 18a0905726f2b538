"""The dense-prediction evaluators in Ray trials, on the tests' Ray cluster
(tests/experiment/conftest.py): each trial trains its detector (or segmenter) on a worker node and
sends back mAP (mIoU) and the cost."""

from __future__ import annotations

import os

import pytest

from nasx.experiment import NasExperiment
from nasx.strategy import Random

from .detection_helpers import TASKS, check_trials, tiny_evaluator, tiny_spinenet

pytest.importorskip("ray", reason="Ray is not installed (pip install 'nasx[ray]')")


@pytest.mark.slow  # end to end: make test-slow runs it (and CI)
@pytest.mark.parametrize("task", TASKS)
def test_a_dense_prediction_search_runs_on_ray(task, tmp_path, ray_cluster):
    exp = NasExperiment(
        tiny_spinenet(),
        tiny_evaluator(task),
        Random(seed=0),
        workdir=tmp_path,
        max_trials=2,
        max_concurrent_trials=2,
        execution="ray",
        progress=False,
    )
    exp.run()
    trials = exp.trials()
    assert len(trials) == 2
    check_trials(task, trials, os.getpid())
