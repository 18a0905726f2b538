"""Tests for nasx.evaluator.detection: COCO mAP against hand-computed values, target checks, the
evaluator's metrics dict; and for nasx.datasets.detection: boxes that match the pasted objects."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader

from nasx.datasets import TFRecordImageDataset
from nasx.datasets.detection import (
    ObjectImages,
    PastedObjects,
    detection_collate,
    load_objects,
    write_detection_shards,
)
from nasx.evaluator.detection import (
    Detection,
    DetectionModule,
    build_detector,
    check_detection_targets,
    mean_average_precision,
)
from nasx.hub import SPINENET_49, SpineNet
from nasx.space import model_context

TINY = {"filter_size_scale": 0.125, "endpoints_num_filters": 8, "stem_filters": 8}


def _tiny_backbone(**widths) -> SpineNet:
    torch.manual_seed(0)
    with model_context(SPINENET_49):
        return SpineNet("49S", **{**TINY, **widths})


def _map(predictions, targets) -> dict[str, float]:
    metric = mean_average_precision()
    metric.update(predictions, targets)
    return {k: float(v) for k, v in metric.compute().items() if v.numel() == 1}


def _prediction(boxes, labels, scores=None):
    boxes = torch.tensor(boxes, dtype=torch.float32)
    scores = torch.ones(len(boxes)) if scores is None else torch.tensor(scores)
    return {"boxes": boxes, "labels": torch.tensor(labels), "scores": scores}


def _target(boxes, labels):
    return {"boxes": torch.tensor(boxes, dtype=torch.float32), "labels": torch.tensor(labels)}


# --- mAP ------------------------------------------------------------------------------------------


def test_perfect_predictions_have_map_one():
    boxes = [[10.0, 10.0, 50.0, 40.0], [60.0, 5.0, 90.0, 70.0]]
    result = _map(
        [_prediction(boxes, [0, 2], [0.9, 0.8]), _prediction([[0.0, 0, 30, 30]], [1])],
        [_target(boxes, [0, 2]), _target([[0.0, 0, 30, 30]], [1])],
    )
    assert result["map"] == pytest.approx(1.0)
    assert result["map_50"] == pytest.approx(1.0)
    assert result["map_75"] == pytest.approx(1.0)


def test_shifted_box_map_is_the_share_of_iou_thresholds_it_passes():
    # A 10x10 box predicted 2 px to the right: IoU = 8*10 / (100 + 100 - 80) = 2/3. COCO's mAP
    # averages AP over IoU thresholds 0.50, 0.55, ..., 0.95: the box matches at 0.50, 0.55, 0.60
    # and 0.65 (AP 1) and misses at the other six (AP 0), so mAP = 4/10; mAP@50 = 1, mAP@75 = 0.
    result = _map([_prediction([[2.0, 0, 12, 10]], [0])], [_target([[0.0, 0, 10, 10]], [0])])
    assert result["map"] == pytest.approx(0.4)
    assert result["map_50"] == pytest.approx(1.0)
    assert result["map_75"] == pytest.approx(0.0)


def test_a_wrong_class_scores_zero():
    result = _map([_prediction([[0.0, 0, 10, 10]], [1])], [_target([[0.0, 0, 10, 10]], [0])])
    assert result["map"] == pytest.approx(0.0)


# --- target checks --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "target, message",
    [
        ({"boxes": torch.zeros(2, 3), "labels": torch.zeros(2, dtype=torch.long)}, r"\[N, 4\]"),
        ({"boxes": torch.zeros(4), "labels": torch.zeros(1, dtype=torch.long)}, r"\[N, 4\]"),
        ({"boxes": torch.tensor([[0.0, 0, 4, 4]]), "labels": torch.tensor([5])}, r"in \[0, 5\)"),
        ({"boxes": torch.tensor([[0.0, 0, 4, 4]]), "labels": torch.tensor([-1])}, "got -1"),
        (
            {"boxes": torch.tensor([[0.0, 0, 4, 4]]), "labels": torch.tensor([1, 2])},
            "1 boxes but 2",
        ),
        ({"boxes": torch.tensor([[4.0, 0, 4, 4]]), "labels": torch.tensor([1])}, "no area"),
        (
            {"boxes": torch.tensor([[0.0, 0, float("nan"), 4]]), "labels": torch.tensor([1])},
            "finite",
        ),
        ({"boxes": torch.tensor([[0, 0, 4, 4]]), "labels": torch.tensor([1])}, "float tensor"),
        ({"boxes": torch.tensor([[0.0, 0, 4, 4]]), "labels": torch.tensor([1.0])}, "integer"),
        ({"boxes": torch.tensor([[0.0, 0, 4, 4]])}, "'boxes' and 'labels'"),
    ],
)
def test_bad_targets_are_refused_with_what_is_wrong(target, message):
    good = {"boxes": torch.tensor([[1.0, 1, 3, 3]]), "labels": torch.tensor([0])}
    with pytest.raises(ValueError, match=message) as err:
        check_detection_targets([good, target], num_classes=5)
    assert str(err.value).startswith("target 1:")


def test_empty_targets_are_fine():
    empty = {"boxes": torch.zeros(0, 4), "labels": torch.zeros(0, dtype=torch.long)}
    check_detection_targets([empty], num_classes=3)


def test_the_training_step_checks_targets_before_torchvision():
    module = DetectionModule(num_classes=3, image_size=64, anchor_scale=2.0)
    module.set_model(_tiny_backbone())
    bad = {"boxes": torch.tensor([[0.0, 0, 8, 8]]), "labels": torch.tensor([3])}
    with pytest.raises(ValueError, match=r"labels must be in \[0, 3\)"):
        module.training_step(([torch.rand(3, 64, 64)], [bad]), 0)


def test_build_detector_needs_out_channels_and_a_known_kind():
    with pytest.raises(TypeError, match="out_channels"):
        build_detector(torch.nn.Identity(), num_classes=2)
    with pytest.raises(ValueError, match="detector must be one of"):
        build_detector(_tiny_backbone(), num_classes=2, detector="yolo")
    with pytest.raises(ValueError, match="multiple of 32"):
        build_detector(_tiny_backbone(), num_classes=2, detector="fcos")


@pytest.mark.parametrize("kind", ["retinanet", "fcos"])
def test_both_detectors_train_a_step_and_predict(kind):
    # FCOS's head has GroupNorm(32, channels): 64 endpoint channels, so that a group of the
    # 1x1 P7 map of a 64 px image holds two values
    backbone = _tiny_backbone(endpoints_num_filters=64)
    detector = build_detector(backbone, 3, kind, image_size=64, anchor_scale=2.0)
    target = {"boxes": torch.tensor([[8.0, 8.0, 40.0, 30.0]]), "labels": torch.tensor([2])}
    # two images: at 64 px the P7 map is 1x1, and batch norm needs more than one value
    losses = detector([torch.rand(3, 64, 64)] * 2, [target] * 2)
    torch.stack(list(losses.values())).sum().backward()
    detector.eval()
    with torch.no_grad():
        (out,) = detector([torch.rand(3, 64, 64)])
    assert out["boxes"].shape[1:] == (4,) and len(out["labels"]) == len(out["scores"])


# --- the evaluator --------------------------------------------------------------------------------


def test_evaluator_returns_map_and_cost():
    data = PastedObjects(load_objects("digits", limit=40), num_images=4, canvas=64, seed=0)
    loader = DataLoader(data, batch_size=2, collate_fn=detection_collate)
    reports = []
    ev = Detection(
        num_classes=10,
        image_size=64,
        anchor_scale=2.0,
        train_dataloaders=loader,
        val_dataloaders=loader,
        max_epochs=1,
        accelerator="cpu",
        latency=lambda detector, shape: 1.5,  # a latency model instead of timing
    )
    metrics = ev.evaluate(_tiny_backbone(), report=reports.append)
    assert set(metrics) == {
        "default", "map", "map_50", "map_75", "params", "backbone_params", "macs", "flops",
        "latency_ms",
    }  # fmt: skip
    assert metrics["default"] == metrics["map"] == reports[-1]
    assert 0.0 <= metrics["map"] <= metrics["map_50"] <= 1.0
    assert metrics["backbone_params"] < metrics["params"]
    assert metrics["flops"] == 2 * metrics["macs"] > 0
    assert metrics["latency_ms"] == 1.5
    assert ev.direction == "maximize"


def test_evaluator_needs_validation_data_and_a_known_latency():
    with pytest.raises(ValueError, match="latency must be"):
        Detection(num_classes=2, latency="guess")
    with pytest.raises(ValueError, match="validation data"):
        Detection(num_classes=2, max_epochs=1).evaluate(_tiny_backbone())


def test_detection_takes_hyperparameter_choices_as_segmentation_does():
    from nasx.evaluator.hparams import evaluator_choices, freeze_evaluator
    from nasx.space import Categorical, InvalidArchError

    ev = Detection(num_classes=2, learning_rate=Categorical([1e-3, 1e-2], label="lr"))
    assert list(evaluator_choices(ev)) == ["lr"]
    assert ev.module.learning_rate == 1e-3  # built with the default
    assert freeze_evaluator(ev, {"lr": 1e-2}).module.learning_rate == 1e-2
    with pytest.raises(InvalidArchError, match="'lr'"):
        freeze_evaluator(ev, {"lr": 0.5})


# --- the pasted-objects data set ------------------------------------------------------------------


def _solid_squares() -> ObjectImages:
    """Class c is a uniform 4x4 square of grey level 60 * (c + 1)."""
    levels = np.array([60, 120, 180, 240], np.uint8)
    images = np.broadcast_to(levels[:, None, None, None], (4, 1, 4, 4)).copy()
    return ObjectImages(images, np.arange(4), ("a", "b", "c", "d"), masked=False)


def test_photo_boxes_cover_exactly_the_pasted_objects():
    ds = PastedObjects(_solid_squares(), num_images=6, canvas=40, object_size=(0.2, 0.4), seed=3)
    for i in range(len(ds)):
        image, target = ds[i]
        background = image[:, 0, 0].clone() if not _in_any(0, 0, target["boxes"]) else None
        covered = torch.zeros(40, 40, dtype=torch.bool)
        for box, label in zip(target["boxes"].long().tolist(), target["labels"].tolist()):
            x0, y0, x1, y1 = box
            patch = image[:, y0:y1, x0:x1]
            assert torch.allclose(patch, torch.full_like(patch, 60 * (label + 1) / 255), atol=1e-6)
            covered[y0:y1, x0:x1] = True
        assert covered.sum() == sum(p.side**2 for p in ds.layout(i))  # boxes do not overlap
        if background is not None:  # everything outside the boxes is the background colour
            outside = image[:, ~covered]
            assert torch.equal(outside, background[:, None].expand_as(outside))


def _in_any(x: int, y: int, boxes: torch.Tensor) -> bool:
    return any(b[0] <= x < b[2] and b[1] <= y < b[3] for b in boxes.tolist())


def test_masked_boxes_are_the_tight_boxes_of_the_object_pixels():
    ds = PastedObjects(load_objects("digits", limit=200), num_images=8, canvas=64, seed=5)
    for i in range(len(ds)):
        image, target = ds[i]
        background, placements = ds._draw(i)
        bg = torch.tensor(background).view(3, 1, 1)
        assert target["labels"].tolist() == [p.label for p in placements]
        for p, box in zip(placements, target["boxes"].tolist()):
            # undo the blend: canvas = bg * (1 - alpha) + color * alpha, per channel
            c = int(np.argmax(np.abs(np.subtract(p.color, background))))
            region = image[c, p.y : p.y + p.side, p.x : p.x + p.side]
            alpha = (region - bg[c]) / (p.color[c] - background[c])
            rows = torch.nonzero((alpha > 0.2 + 1e-4).any(1)).flatten()
            cols = torch.nonzero((alpha > 0.2 + 1e-4).any(0)).flatten()
            expected = [p.x + cols[0], p.y + rows[0], p.x + cols[-1] + 1, p.y + rows[-1] + 1]
            assert box == [float(v) for v in expected]
            # and the source digit's label is the box's label
            assert p.label == int(ds.objects.labels[p.index])


def test_pasted_objects_are_deterministic_from_the_seed():
    objects = load_objects("digits", limit=100)
    a, b = (
        PastedObjects(objects, 3, canvas=48, seed=1),
        PastedObjects(objects, 3, canvas=48, seed=1),
    )
    c = PastedObjects(objects, 3, canvas=48, seed=2)
    assert torch.equal(a[2][0], b[2][0]) and torch.equal(a[2][1]["boxes"], b[2][1]["boxes"])
    assert not torch.equal(a[2][0], c[2][0])
    counts = [len(a[i][1]["labels"]) for i in range(3)]
    assert all(1 <= n <= 3 for n in counts)


def test_pasted_objects_refuse_bad_settings():
    objects = _solid_squares()
    with pytest.raises(ValueError, match="objects_per_image"):
        PastedObjects(objects, 2, objects_per_image=(0, 2))
    with pytest.raises(ValueError, match="object_size"):
        PastedObjects(objects, 2, object_size=(0.5, 1.5))
    with pytest.raises(ValueError, match="under 2 pixels"):
        PastedObjects(objects, 2, canvas=8, object_size=(0.1, 0.5))
    with pytest.raises(ValueError, match="object source must be one of"):
        load_objects("imagenet")
    with pytest.raises(IndexError):
        PastedObjects(objects, 2)[2]


def test_tfrecord_round_trip_keeps_boxes_labels_and_pixels(tmp_path):
    ds = PastedObjects(load_objects("digits", limit=100), num_images=5, canvas=48, seed=0)
    paths = write_detection_shards(ds, tmp_path / "val", num_shards=2, class_names=ds.classes)
    back = sorted(TFRecordImageDataset(paths, task="detection"), key=lambda s: s[1]["boxes"].sum())
    original = sorted((ds[i] for i in range(len(ds))), key=lambda s: s[1]["boxes"].sum())
    for (image, target), (image0, target0) in zip(back, original, strict=True):
        assert torch.equal(target["boxes"], target0["boxes"])
        assert torch.equal(target["labels"], target0["labels"])
        assert torch.allclose(image, (image0 * 255).round() / 255, atol=1e-6)  # PNG: exact pixels
