"""measure_latency: statistics, thread fixing, backends, argument checks."""

from __future__ import annotations

import pytest
import torch
import torch.nn as nn

from nasx.hardware.latency import cpu_threads, device_name, measure_latency, summarize


def test_summary_statistics_match_hand_computed_values():
    r = summarize([4.0, 1.0, 3.0, 2.0], device="x", batch_size=2, input_shape=(3,))
    assert r.median_ms == 2.5
    assert r.mean_ms == 2.5
    assert r.min_ms == 1.0 and r.max_ms == 4.0
    assert r.iqr_ms == pytest.approx(3.25 - 1.75)  # inclusive quartiles of 1..4
    assert r.std_ms == pytest.approx(1.2909944)
    assert r.to_dict()["input_shape"] == [3] and "samples_ms" not in r.to_dict()
    assert "2.500 ms" in str(r)
    assert summarize([5.0]).iqr_ms == 0.0


def test_measures_repetitions_and_restores_mode_and_threads():
    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4))
    model.train()
    before = torch.get_num_threads()
    r = measure_latency(model, (3, 8, 8), batch_size=3, warmup=1, repeats=4, threads=1)
    assert r.repeats == 4 and r.batch_size == 3 and r.input_shape == (3, 8, 8)
    assert r.threads == 1 and r.device.endswith("/1t")
    assert model.training  # restored
    assert torch.get_num_threads() == before
    assert all(s > 0 for s in r.samples_ms)


def test_cpu_threads_context_restores():
    before = torch.get_num_threads()
    with cpu_threads(1):
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == before
    with pytest.raises(ValueError, match="at least 1"):
        with cpu_threads(0):
            pass


def test_torchscript_backend():
    r = measure_latency(nn.Linear(4, 4), (4,), warmup=1, repeats=2, backend="torchscript")
    assert r.backend == "torchscript" and r.repeats == 2


def test_onnxruntime_backend_names_the_extra_when_missing():
    try:
        import onnxruntime  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match=r'pip install "nasx\[onnx\]"'):
            measure_latency(nn.Linear(4, 4), (4,), repeats=1, backend="onnxruntime")
    else:  # pragma: no cover - depends on the environment
        r = measure_latency(nn.Linear(4, 4), (4,), warmup=1, repeats=2, backend="onnxruntime")
        assert r.backend == "onnxruntime"


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="backend must be one of eager, torchscript"):
        measure_latency(nn.Linear(2, 2), (2,), backend="tvm")
    with pytest.raises(ValueError, match="repeats >= 1"):
        measure_latency(nn.Linear(2, 2), (2,), repeats=0)


def test_device_name_is_a_stable_key():
    assert device_name("cpu", 2) == device_name("cpu", 2)
    assert device_name("cpu", 1) != device_name("cpu", 2)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_latency_is_synchronised():  # pragma: no cover - run on a GPU machine
    model = nn.Sequential(*[nn.Linear(2048, 2048) for _ in range(8)]).cuda()
    r = measure_latency(model, (2048,), batch_size=256, warmup=3, repeats=5)
    assert r.device.startswith("cuda:") and r.threads is None
    # 8 matmuls of 256x2048x2048 take well over the few microseconds of their launches
    assert r.median_ms > 0.01


def test_thread_clock_counts_cpu_time_of_one_thread():
    r = measure_latency(nn.Linear(64, 64), (64,), warmup=1, repeats=3, clock="thread")
    assert r.repeats == 3 and all(s >= 0 for s in r.samples_ms)
    with pytest.raises(ValueError, match="needs a CPU device, threads=1"):
        measure_latency(nn.Linear(4, 4), (4,), repeats=1, threads=2, clock="thread")
    with pytest.raises(ValueError, match="clock must be 'wall' or 'thread'"):
        measure_latency(nn.Linear(4, 4), (4,), repeats=1, clock="cpu")
