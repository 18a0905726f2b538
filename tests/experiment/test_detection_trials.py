"""The Detection evaluator in worker processes: a tiny SpineNet detection search in the process
pool comes back with mAP and cost for every trial (the Ray run is in test_ray_detection.py)."""

from __future__ import annotations

import os

import pytest

from nasx.experiment import NasExperiment
from nasx.strategy import Random

from .detection_helpers import check_detection_trials, tiny_detection, tiny_spinenet

pytest.importorskip("pycocotools", reason="Detection's mAP needs pycocotools (nasx[detection])")


def test_a_detection_search_runs_in_the_process_pool(tmp_path):
    exp = NasExperiment(
        tiny_spinenet(),
        tiny_detection(),
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
    check_detection_trials(trials, os.getpid())
