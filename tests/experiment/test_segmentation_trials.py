"""The Segmentation evaluator in worker processes: a tiny SpineNet segmentation search in the
process pool comes back with mIoU and cost for every trial (as Detection does)."""

from __future__ import annotations

import os

import pytest

from nasx.experiment import NasExperiment
from nasx.strategy import Random

from .detection_helpers import check_segmentation_trials, tiny_segmentation, tiny_spinenet


# slow (about 10 s): the default suite is at its 5-minute budget, and Detection's pool test in the
# default suite already runs the evaluators' shared base class (DenseLightning) in workers
@pytest.mark.slow
def test_a_segmentation_search_runs_in_the_process_pool(tmp_path):
    exp = NasExperiment(
        tiny_spinenet(),
        tiny_segmentation(),
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
    check_segmentation_trials(trials, os.getpid())
