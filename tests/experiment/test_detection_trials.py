"""The dense-prediction evaluators in worker processes: a tiny SpineNet detection (and
segmentation) search in the process pool comes back with the metric and the cost for every
trial (the Ray run is in test_ray_detection.py)."""

from __future__ import annotations

import importlib.util
import os

import pytest

from nasx.experiment import NasExperiment
from nasx.strategy import Random

from .detection_helpers import check_trials, tiny_evaluator, tiny_spinenet

NO_COCO = importlib.util.find_spec("pycocotools") is None


@pytest.mark.parametrize(
    "task",
    [
        pytest.param(
            "detection",
            marks=pytest.mark.skipif(NO_COCO, reason="mAP needs pycocotools (nasx[detection])"),
        ),
        # slow (about 10 s): the default suite is at its 5-minute budget, and detection's run
        # already takes the evaluators' shared base classes (nasx/evaluator/dense.py) to workers
        pytest.param("segmentation", marks=pytest.mark.slow),
    ],
)
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
