"""The dense-prediction evaluators in worker processes: a tiny SpineNet detection (and
segmentation) search in the process pool comes back with the metric and the cost for every
trial (the Ray run is in test_ray_detection.py)."""

from __future__ import annotations

import os

import pytest

from nasx.experiment import NasExperiment
from nasx.strategy import Random

from .detection_helpers import TASKS, check_trials, tiny_evaluator, tiny_spinenet


@pytest.mark.parametrize("task", TASKS)
def test_a_dense_prediction_search_runs_in_the_process_pool(task, tmp_path):
    exp = NasExperiment(
        tiny_spinenet(),
        tiny_evaluator(task),
        Random(seed=0),
        workdir=tmp_path,
        max_trials=2,
        max_concurrent_trials=2,
        execution="process",
        progress=False,
    )
    exp.run()
    trials = exp.trials()
    assert len(trials) == 2 and trials[0].arch != trials[1].arch
    check_trials(task, trials, os.getpid())
