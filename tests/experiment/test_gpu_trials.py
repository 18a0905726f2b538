"""Trials on a real GPU: a trial that asks Ray for one GPU sees exactly one, and a trial that runs
out of GPU memory becomes one clear failed trial while the others go on. Skipped without CUDA
(the CPU suite builds Ray's and torch's errors by hand: test_ray_execution.py).

Run on a GPU machine, this file alone (the Ray test starts its own Ray with the GPUs; a Ray
started by other tests in the same session has none):

    pytest -q -p no:cacheprovider tests/experiment/test_gpu_trials.py
"""

from __future__ import annotations

import os
import sys

import pytest
import torch

from nasx.experiment import NasExperiment
from nasx.strategy import GridSearch
from nasx.trial import failure_kind

from .gpu_helpers import oom_on_width_4, visible_gpus
from .helpers import SmallNet, reference_metric

pytestmark = pytest.mark.skipif(
    not torch.cuda.is_available(),
    reason="needs a CUDA GPU (real GPU placement and out-of-memory errors cannot be made on CPU)",
)


def _check_one_oom_trial(trials) -> None:
    assert len(trials) == 6
    for t in trials:
        if t.arch["width"] == 4:
            assert t.status == "failed"
            assert failure_kind(t.error) == "OutOfMemoryError", t.error
            first = t.error.splitlines()[0]
            assert first.startswith("OutOfMemoryError: CUDA out of memory"), first
        else:  # the GPU memory of the failed trial was given back: the later trials ran
            assert t.status == "succeeded", t.error
            assert t.metric == reference_metric(t.arch)


@pytest.mark.parametrize("execution", ["sequential", "process"])
def test_a_trial_out_of_gpu_memory_is_one_failed_trial(tmp_path, execution):
    exp = NasExperiment(
        SmallNet(),
        oom_on_width_4,
        GridSearch(shuffle=False),
        workdir=tmp_path,
        execution=execution,
        progress=False,
    )
    exp.run()
    _check_one_oom_trial(exp.trials())


@pytest.fixture(scope="module")
def ray_with_gpus():
    ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'nasx[ray]')")
    if ray.is_initialized():
        pytest.skip("a Ray instance without GPUs is running in this session: run this file alone")
    ray.init(
        address="local",
        num_cpus=2,
        num_gpus=torch.cuda.device_count(),
        include_dashboard=False,
        log_to_driver=False,
        runtime_env={"env_vars": {"PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}},
    )
    try:
        yield ray
    finally:
        ray.shutdown()


def test_a_trial_asking_for_one_gpu_sees_exactly_one(tmp_path, ray_with_gpus):
    exp = NasExperiment(
        SmallNet(),
        visible_gpus,
        GridSearch(shuffle=False),
        workdir=tmp_path,
        max_concurrent_trials=2,
        trial_resources={"num_cpus": 1, "num_gpus": 1},
        progress=False,
    )
    exp.run()
    trials = exp.trials()
    assert [t.status for t in trials] == ["succeeded"] * 6, [t.error for t in trials]
    for t in trials:
        assert t.metrics["visible_devices"] == 1.0  # Ray set CUDA_VISIBLE_DEVICES to one GPU
        assert t.metrics["torch_devices"] == 1.0
        assert t.metrics["ran_on_cuda"] == 1.0


def test_a_ray_trial_out_of_gpu_memory_is_one_failed_trial(tmp_path, ray_with_gpus):
    exp = NasExperiment(
        SmallNet(),
        oom_on_width_4,
        GridSearch(shuffle=False),
        workdir=tmp_path,
        trial_resources={"num_cpus": 1, "num_gpus": 1},
        progress=False,
    )
    exp.run()
    _check_one_oom_trial(exp.trials())
