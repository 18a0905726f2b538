"""Tests for nasx.evaluator.segmentation (mIoU against hand-computed values, mask checks, training,
the metrics dict, a search through NasExperiment) and for the masks of nasx.datasets.detection."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn as nn
from torch.utils.data import DataLoader

import nasx
from nasx.datasets import TFRecordImageDataset
from nasx.datasets.detection import (
    ALPHA_THRESHOLD,
    ObjectImages,
    PastedObjects,
    PastedSegmentation,
    load_objects,
    write_detection_shards,
)
from nasx.evaluator.segmentation import (
    Segmentation,
    SegmentationModel,
    SegmentationModule,
    check_masks,
    mean_iou,
)
from nasx.hub import SPINENET_49, SpineNet
from nasx.space import Categorical, LayerChoice, ModelSpace, model_context


def _miou(prediction, target, num_classes=3) -> float:
    metric = mean_iou(num_classes)
    metric.update(torch.tensor(prediction), torch.tensor(target))
    return float(metric.compute())


# --- mIoU -----------------------------------------------------------------------------------------


def test_a_perfect_mask_has_miou_one():
    mask = [[[0, 0, 1, 1], [0, 2, 2, 1]]]
    assert _miou(mask, mask) == pytest.approx(1.0)


def test_partial_overlap_miou_is_the_mean_iou_of_the_classes_present():
    # 4x4 target: background (0) everywhere but a 2x2 object of class 1 in the top-left corner.
    # The prediction puts class 1 on the 2x3 block of the first two rows, columns 0..2.
    #   class 1: intersection 4, union 6 -> 2/3
    #   class 0: target 12 pixels, predicted 10, intersection 10, union 12 -> 5/6
    #   class 2: in neither -> left out of the mean
    # mIoU = (2/3 + 5/6) / 2 = 3/4
    target = torch.zeros(1, 4, 4, dtype=torch.long)
    target[0, :2, :2] = 1
    prediction = torch.zeros(1, 4, 4, dtype=torch.long)
    prediction[0, :2, :3] = 1
    assert _miou(prediction.tolist(), target.tolist()) == pytest.approx(0.75)


def test_a_class_predicted_but_absent_counts_as_zero():
    # class 2 predicted on one pixel where the target has 0: IoU(2) = 0, IoU(0) = 3/4
    assert _miou([[0, 0, 0, 2]], [[0, 0, 0, 0]]) == pytest.approx((0.75 + 0.0) / 2)


# --- mask checks ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "masks, message",
    [
        (torch.zeros(2, 8, 8), "integer class ids .* got dtype torch.float32"),
        (torch.zeros(2, 8, 8, dtype=torch.bool), "integer class ids"),
        (torch.zeros(2, 1, 8, 8, dtype=torch.long), r"\[B, H, W\] = \[2, 8, 8\]"),
        (torch.zeros(2, 8, 4, dtype=torch.long), r"got shape \[2, 8, 4\]"),
        ([[0]], "integer tensor"),
    ],
)
def test_bad_masks_are_refused_with_what_is_wrong(masks, message):
    with pytest.raises(ValueError, match=message):
        check_masks(masks, torch.zeros(2, 3, 8, 8), num_classes=3)


def test_out_of_range_ids_name_the_sample():
    masks = torch.zeros(3, 4, 4, dtype=torch.long)
    masks[2, 1, 1] = 7
    with pytest.raises(ValueError, match=r"sample 2: class ids must be in \[0, 3\).*got 7"):
        check_masks(masks, torch.zeros(3, 3, 4, 4), num_classes=3)
    masks[2, 1, 1] = -1
    with pytest.raises(ValueError, match="sample 2.*got -1"):
        check_masks(masks, torch.zeros(3, 3, 4, 4), num_classes=3)


def test_the_training_step_checks_masks():
    module = SegmentationModule(num_classes=3, head="linear")
    module.set_model(nn.Conv2d(3, 4, 3, padding=1))
    with pytest.raises(ValueError, match="sample 0"):
        module.training_step((torch.zeros(1, 3, 8, 8), torch.full((1, 8, 8), 3)), 0)


def test_uint8_masks_are_accepted_and_trained_on():
    # a PNG mask decoded by PIL is uint8: allowed, converted for the cross-entropy
    module = SegmentationModule(num_classes=3, head="linear")
    module.set_model(nn.Conv2d(3, 4, 3, padding=1))
    module.log = lambda *args, **kwargs: None  # no trainer here to log to
    masks = torch.randint(0, 3, (2, 8, 8), dtype=torch.uint8)
    loss = module.training_step((torch.rand(2, 3, 8, 8), masks), 0)
    assert loss.ndim == 0 and float(loss.detach()) > 0


# --- the model ------------------------------------------------------------------------------------


def _tiny_spinenet() -> SpineNet:
    torch.manual_seed(0)
    with model_context(SPINENET_49):
        return SpineNet("49S", filter_size_scale=0.125, endpoints_num_filters=8, stem_filters=8)


@pytest.mark.parametrize("head", ["fcn", "deeplabv3", "linear"])
def test_heads_give_full_size_logits_from_a_feature_dict(head):
    model = SegmentationModel(_tiny_spinenet(), num_classes=4, head=head).eval()
    assert model(torch.rand(2, 3, 64, 64)).shape == (2, 4, 64, 64)


def test_backbone_channels_are_measured_without_out_channels():
    backbone = nn.Sequential(nn.Conv2d(3, 12, 3, stride=2, padding=1), nn.ReLU())
    model = SegmentationModel(backbone, num_classes=3)
    assert model(torch.rand(1, 3, 16, 16)).shape == (1, 3, 16, 16)
    with pytest.raises(TypeError, match=r"feature map \[B, C, h, w\]"):
        SegmentationModel(nn.Flatten(), num_classes=3)
    with pytest.raises(ValueError, match="head must be one of"):
        SegmentationModel(backbone, num_classes=3, head="unet")


def test_a_training_step_lowers_the_loss():
    torch.manual_seed(0)
    data = PastedSegmentation(load_objects("digits", limit=50), num_images=4, canvas=32, seed=0)
    images, masks = next(iter(DataLoader(data, batch_size=4)))
    module = SegmentationModule(num_classes=data.num_segmentation_classes, learning_rate=1e-2)
    module.set_model(nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU()))
    optimizer = module.configure_optimizers()
    losses = []
    for _ in range(5):
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(module.model(images), masks)
        loss.backward()
        optimizer.step()
        losses.append(float(loss.detach()))
    assert losses[-1] < losses[0]


# --- the evaluator --------------------------------------------------------------------------------


def test_evaluator_returns_miou_pixel_accuracy_and_cost():
    data = PastedSegmentation(load_objects("digits", limit=40), num_images=4, canvas=32, seed=0)
    loader = DataLoader(data, batch_size=2)
    reports = []
    ev = Segmentation(
        num_classes=data.num_segmentation_classes,
        image_size=32,
        train_dataloaders=loader,
        val_dataloaders=loader,
        max_epochs=1,
        accelerator="cpu",
        latency=lambda model, shape: 2.5,
    )
    backbone = nn.Sequential(nn.Conv2d(3, 8, 3, stride=2, padding=1), nn.ReLU())
    metrics = ev.evaluate(backbone, report=reports.append)
    assert set(metrics) == {
        "default", "miou", "pixel_accuracy", "params", "backbone_params", "macs", "flops",
        "latency_ms",
    }  # fmt: skip
    assert metrics["default"] == metrics["miou"] == reports[-1]
    assert 0.0 <= metrics["miou"] <= 1.0 and 0.0 <= metrics["pixel_accuracy"] <= 1.0
    assert metrics["backbone_params"] == 3 * 8 * 9 + 8 < metrics["params"]
    assert metrics["flops"] == 2 * metrics["macs"] > 0
    assert metrics["latency_ms"] == 2.5


def test_evaluator_needs_validation_data_and_a_known_latency():
    with pytest.raises(ValueError, match="latency must be"):
        Segmentation(num_classes=2, latency="guess")
    with pytest.raises(ValueError, match="Segmentation needs validation data to compute mIoU"):
        Segmentation(num_classes=2, max_epochs=1).evaluate(nn.Conv2d(3, 4, 1))


class TinySegSpace(ModelSpace):
    """A 2-layer encoder with a searched width and kernel: a feature map at stride 2."""

    def __init__(self):
        super().__init__()
        width = nasx.choice("width", [4, 8])
        self.stem = nn.Sequential(nn.Conv2d(3, width, 3, stride=2, padding=1), nn.ReLU())
        self.block = LayerChoice(
            {
                "conv3x3": nn.Conv2d(width, width, 3, padding=1),
                "conv1x1": nn.Conv2d(width, width, 1),
            },
            label="block",
        )

    def forward(self, x):
        return torch.relu(self.block(self.stem(x)))


def test_a_tiny_search_ranks_trials_by_miou(tmp_path):
    # the architecture and a hyperparameter (the learning rate) searched together
    from nasx.experiment import NasExperiment
    from nasx.strategy import Random

    data = PastedSegmentation(load_objects("digits", limit=40), num_images=4, canvas=32, seed=0)
    loader = DataLoader(data, batch_size=4)
    evaluator = Segmentation(
        num_classes=data.num_segmentation_classes,
        image_size=32,
        head="linear",
        learning_rate=Categorical([1e-3, 1e-2], label="lr"),
        train_dataloaders=loader,
        val_dataloaders=loader,
        max_epochs=1,
        accelerator="cpu",
        latency=None,
    )
    search = NasExperiment(
        TinySegSpace(),
        evaluator,
        Random(seed=0),
        workdir=tmp_path,
        max_trials=3,
        execution="sequential",
        progress=False,
    )
    search.run()
    trials = search.trials("succeeded")
    assert len(trials) == 3
    for t in trials:
        assert set(t.arch) == {"width", "block"} and t.hparams["lr"] in (1e-3, 1e-2)
        assert t.metrics["default"] == t.metrics["miou"]
        assert 0.0 <= t.metrics["miou"] <= 1.0 and t.metrics["params"] > 0
    best = max(trials, key=lambda t: t.metrics["default"])
    assert search.export_top_models(1)[0] == best.arch


# --- masks of the pasted-objects data set ---------------------------------------------------------


def _solid_squares() -> ObjectImages:
    levels = np.array([60, 120, 180, 240], np.uint8)
    images = np.broadcast_to(levels[:, None, None, None], (4, 1, 4, 4)).copy()
    return ObjectImages(images, np.arange(4), ("a", "b", "c", "d"), masked=False)


def test_photo_masks_are_the_pasted_squares():
    ds = PastedSegmentation(_solid_squares(), num_images=6, canvas=40, seed=3)
    for i in range(len(ds)):
        _, mask = ds[i]
        expected = torch.zeros(40, 40, dtype=torch.long)
        for p in ds.layout(i):
            expected[p.y : p.y + p.side, p.x : p.x + p.side] = p.label + 1
        assert torch.equal(mask, expected)


def test_masked_object_masks_are_their_alpha_footprint():
    ds = PastedSegmentation(load_objects("digits", limit=200), num_images=8, canvas=64, seed=5)
    for i in range(len(ds)):
        _, mask = ds[i]
        layout = ds.layout(i)
        assert int((mask > 0).sum()) == sum(
            int((ds._alpha(p.index, p.side) > ALPHA_THRESHOLD).sum()) for p in layout
        )
        for p in layout:
            inside = mask[p.y : p.y + p.side, p.x : p.x + p.side]
            footprint = ds._alpha(p.index, p.side) > ALPHA_THRESHOLD
            assert torch.equal(inside[footprint], torch.full_like(inside[footprint], p.label + 1))
            # the mask's tight box is the object's box
            rows, cols = torch.nonzero(mask == p.label + 1, as_tuple=True)
            if len({q.label for q in layout}) == len(layout):  # no other object of its class
                box = (cols.min(), rows.min(), cols.max() + 1, rows.max() + 1)
                assert tuple(float(v) for v in box) == p.box


def test_the_object_pasted_last_wins_where_objects_overlap():
    # PastedObjects never overlaps objects, but render() must still say who owns a shared pixel
    from nasx.datasets.detection import Placement

    ds = PastedSegmentation(_solid_squares(), num_images=1, canvas=16, seed=0)
    under = Placement(0, 0, 2, 2, 8, (1.0, 1.0, 1.0), (2.0, 2.0, 10.0, 10.0))
    over = Placement(1, 1, 6, 6, 8, (1.0, 1.0, 1.0), (6.0, 6.0, 14.0, 14.0))
    ds._layouts[0] = ((0.0, 0.0, 0.0), [under, over])
    _, mask = ds[0]
    assert int(mask[7, 7]) == 2 and int(mask[3, 3]) == 1 and int(mask[13, 13]) == 2
    assert int((mask == 1).sum()) == 64 - 16 and int((mask == 2).sum()) == 64


def test_masks_round_trip_through_tfrecord(tmp_path):
    ds = PastedObjects(load_objects("digits", limit=100), 4, canvas=48, seed=0, masks=True)
    paths = write_detection_shards(ds, tmp_path / "val")
    for i, (image, mask) in enumerate(TFRecordImageDataset(paths, task="segmentation")):
        assert torch.equal(mask, ds.mask(i))
        assert torch.equal(image, ds[i][0].mul(255).round().div(255))
    _, target = next(iter(TFRecordImageDataset(paths, task="detection")))
    assert torch.equal(target["mask"], ds.mask(0)) and "mask" in ds[0][1]
    assert "mask" not in PastedObjects(ds.objects, 1, canvas=48)[0][1]
