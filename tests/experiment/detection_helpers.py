"""A tiny detection search for the process-pool and Ray tests (importable, so workers load it):
the SpineNet space at a few channels, RetinaNet around it, 4 pasted-digit images of 64 px."""

from __future__ import annotations

import os

from torch.utils.data import DataLoader

from nasx.datasets.detection import PastedObjects, detection_collate, load_objects
from nasx.evaluator.detection import Detection
from nasx.hub import SpineNet

METRIC_KEYS = {
    "default", "map", "map_50", "map_75", "params", "backbone_params", "macs", "flops",
    "latency_ms",
}  # fmt: skip


def worker_pid(detector, input_shape) -> float:
    """A "latency model" that returns the id of the process it runs in: where the trial ran."""
    return float(os.getpid())


def tiny_spinenet() -> SpineNet:
    return SpineNet("49S", filter_size_scale=0.125, endpoints_num_filters=8, stem_filters=8)


def tiny_detection() -> Detection:
    data = PastedObjects(load_objects("digits", limit=40), num_images=4, canvas=64, seed=0)
    loader = DataLoader(data, batch_size=2, collate_fn=detection_collate)
    return Detection(
        num_classes=10,
        image_size=64,
        anchor_scale=2.0,
        train_dataloaders=loader,
        val_dataloaders=loader,
        max_epochs=1,
        limit_train_batches=1,
        accelerator="cpu",
        latency=worker_pid,
    )


def check_detection_trials(trials, parent_pid: int) -> None:
    """Every trial succeeded in another process and came back with mAP and the cost."""
    assert [t.status for t in trials] == ["succeeded"] * len(trials), [t.error for t in trials]
    for t in trials:
        assert set(t.metrics) == METRIC_KEYS
        assert t.metric == t.metrics["default"] == t.metrics["map"]
        assert 0.0 <= t.metrics["map"] <= t.metrics["map_50"] <= 1.0
        assert 0 < t.metrics["backbone_params"] < t.metrics["params"]
        assert t.metrics["flops"] == 2 * t.metrics["macs"] > 0
        assert t.metrics["latency_ms"] != parent_pid  # measured in a worker, not in the test
