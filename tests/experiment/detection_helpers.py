"""Tiny detection and segmentation searches for the process-pool and Ray tests (importable, so
workers load them): the SpineNet space at a few channels, RetinaNet or a 1x1 segmentation head
around it, 4 pasted-digit images of 64 px."""

from __future__ import annotations

import importlib.util
import os

import pytest
from torch.utils.data import DataLoader

from nasx.datasets.detection import (
    PastedObjects,
    PastedSegmentation,
    detection_collate,
    load_objects,
)
from nasx.evaluator.detection import Detection
from nasx.evaluator.segmentation import Segmentation
from nasx.hub import SpineNet

COST_KEYS = {"params", "backbone_params", "macs", "flops", "latency_ms"}
# task -> (the metric that is 'default', the other validation metrics)
METRICS = {
    "detection": ("map", {"map_50", "map_75"}),
    "segmentation": ("miou", {"pixel_accuracy"}),
}


# The tasks the pool and Ray tests run. Segmentation is slow (about 10 s): the default suite is at
# its 5-minute budget, and detection's run already takes the evaluators' shared base classes
# (nasx/evaluator/dense.py) to workers.
TASKS = [
    pytest.param(
        "detection",
        marks=pytest.mark.skipif(
            importlib.util.find_spec("pycocotools") is None,
            reason="mAP needs pycocotools (nasx[detection])",
        ),
    ),
    pytest.param("segmentation", marks=pytest.mark.slow),
]


def worker_pid(model, input_shape) -> float:
    """A "latency model" that returns the id of the process it runs in: where the trial ran."""
    return float(os.getpid())


def tiny_spinenet() -> SpineNet:
    return SpineNet("49S", filter_size_scale=0.125, endpoints_num_filters=8, stem_filters=8)


def tiny_evaluator(task: str) -> Detection | Segmentation:
    """The ``task``'s evaluator ('detection' or 'segmentation') on 4 images, one training batch."""
    objects = load_objects("digits", limit=40)
    common = dict(
        image_size=64, max_epochs=1, limit_train_batches=1, accelerator="cpu", latency=worker_pid
    )
    if task == "detection":
        data = PastedObjects(objects, num_images=4, canvas=64, seed=0)
        loader = DataLoader(data, batch_size=2, collate_fn=detection_collate)
        return Detection(
            num_classes=10,
            anchor_scale=2.0,
            train_dataloaders=loader,
            val_dataloaders=loader,
            **common,
        )
    seg = PastedSegmentation(objects, num_images=4, canvas=64, seed=0)
    loader = DataLoader(seg, batch_size=2)
    return Segmentation(
        num_classes=seg.num_segmentation_classes,
        head="linear",
        train_dataloaders=loader,
        val_dataloaders=loader,
        **common,
    )


def check_trials(task: str, trials, parent_pid: int) -> None:
    """Every trial succeeded in another process and came back with its metrics and the cost."""
    assert [t.status for t in trials] == ["succeeded"] * len(trials), [t.error for t in trials]
    key, others = METRICS[task]
    for t in trials:
        assert set(t.metrics) == {"default", key} | others | COST_KEYS
        assert t.metric == t.metrics["default"] == t.metrics[key]
        assert all(0.0 <= t.metrics[k] <= 1.0 for k in (key, *others))
        assert 0 < t.metrics["backbone_params"] < t.metrics["params"]
        assert t.metrics["flops"] == 2 * t.metrics["macs"] > 0
        assert t.metrics["latency_ms"] != parent_pid  # measured in a worker, not in the test
    if task == "detection":
        assert all(t.metrics["map"] <= t.metrics["map_50"] for t in trials)
