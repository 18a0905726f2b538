"""Tiny detection and segmentation searches for the process-pool and Ray tests (importable, so
workers load them): the SpineNet space at a few channels, RetinaNet or a 1x1 segmentation head
around it, 4 pasted-digit images of 64 px."""

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


SEGMENTATION_KEYS = {
    "default", "miou", "pixel_accuracy", "params", "backbone_params", "macs", "flops",
    "latency_ms",
}  # fmt: skip


def tiny_segmentation():
    """Segmentation with a 1x1 head on the same tiny SpineNet: 4 pasted-digit masks of 64 px."""
    from nasx.datasets.detection import PastedSegmentation
    from nasx.evaluator.segmentation import Segmentation

    data = PastedSegmentation(load_objects("digits", limit=40), num_images=4, canvas=64, seed=0)
    loader = DataLoader(data, batch_size=2)
    return Segmentation(
        num_classes=data.num_segmentation_classes,
        head="linear",
        image_size=64,
        train_dataloaders=loader,
        val_dataloaders=loader,
        max_epochs=1,
        limit_train_batches=1,
        accelerator="cpu",
        latency=worker_pid,
    )


def check_segmentation_trials(trials, parent_pid: int) -> None:
    """Every trial succeeded in another process and came back with mIoU and the cost."""
    assert [t.status for t in trials] == ["succeeded"] * len(trials), [t.error for t in trials]
    for t in trials:
        assert set(t.metrics) == SEGMENTATION_KEYS
        assert t.metric == t.metrics["default"] == t.metrics["miou"]
        assert 0.0 <= t.metrics["miou"] <= 1.0 and 0.0 <= t.metrics["pixel_accuracy"] <= 1.0
        assert 0 < t.metrics["backbone_params"] < t.metrics["params"]
        assert t.metrics["flops"] == 2 * t.metrics["macs"] > 0
        assert t.metrics["latency_ms"] != parent_pid  # measured in a worker, not in the test
