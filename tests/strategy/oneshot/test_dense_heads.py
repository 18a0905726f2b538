"""One-shot search of a backbone that the evaluator wraps in a head (Segmentation, Detection): every
strategy trains and exports; the path strategies attach a runnable supernet (Segmentation sizes its
head by a probe forward) and score archs through the whole model, head included. A detector reads
the backbone's ``out_channels`` off the supernet, and its boxes need a ``reward_fn``."""

from __future__ import annotations

import pytest
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

from nasx.evaluator.segmentation import Segmentation, SegmentationModel
from nasx.space import LayerChoice, ModelSpace
from nasx.strategy import DARTS, ENAS, Proxyless, RandomOneShot


class Encoder(ModelSpace):
    """Stride-2 features of 6 channels, no ``out_channels``: the head's width is probed."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 6, 3, stride=2, padding=1), nn.ReLU())
        self.block = LayerChoice(
            {"conv3x3": nn.Conv2d(6, 6, 3, padding=1), "zero": nn.Conv2d(6, 6, 1)}, label="block"
        )

    def forward(self, x):
        return torch.relu(self.block(self.stem(x)))


def _segmentation() -> Segmentation:
    g = torch.Generator().manual_seed(0)
    images = torch.rand(8, 3, 16, 16, generator=g)
    masks = (images.mean(1) > 0.5).long()  # [8, 16, 16]: bright pixels are class 1
    loader = DataLoader(TensorDataset(images, masks), batch_size=4)
    return Segmentation(
        num_classes=2, head="linear", image_size=16, train_dataloaders=loader,
        val_dataloaders=loader, max_epochs=1, accelerator="cpu", latency=None,
        enable_progress_bar=False,
    )  # fmt: skip


@pytest.mark.parametrize("strategy", [DARTS, Proxyless, RandomOneShot, ENAS])
def test_every_one_shot_strategy_searches_a_segmentation_backbone(strategy):
    scored_by: list[type] = []

    def reward(model, batch):  # what the path strategies score: the head's per-pixel output
        scored_by.append(type(model))
        return float((model(batch[0]).argmax(1) == batch[1]).float().mean())

    kwargs = {"reward_fn": reward} if strategy in (RandomOneShot, ENAS) else {}
    s = strategy(**kwargs)
    s.run(Encoder(), _segmentation())
    (arch,) = s.export_top_models(1)
    assert set(arch) == {"block"}
    assert isinstance(s.module.inner.model, SegmentationModel)
    if kwargs:
        assert scored_by and set(scored_by) == {SegmentationModel}


def test_the_default_reward_is_pixel_accuracy_of_the_whole_model():
    s = RandomOneShot(num_samples=2)
    s.run(Encoder(), _segmentation())
    model = s.module.inner.model.eval()  # the head around the trained supernet
    validation = _segmentation().train_dataloaders  # the same 8 images in 2 batches
    for score, arch in s.results:
        s.supernet.use_arch(arch)
        with torch.no_grad():
            expected = [float((model(x).argmax(1) == y).float().mean()) for x, y in validation]
        assert score == pytest.approx(sum(expected) / len(expected))


# --- detection: the detector's output is a list of dicts, so path strategies need reward_fn --------


class DetectionBackbone(ModelSpace):
    """P3..P7 maps of 8 channels for a 64 px image (8x8 down to 1x1): one searched block at P3."""

    out_channels = 8

    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, stride=8, padding=1), nn.ReLU())
        self.block = LayerChoice(
            {"conv3x3": nn.Conv2d(8, 8, 3, padding=1), "conv1x1": nn.Conv2d(8, 8, 1)}, label="block"
        )
        self.down = nn.ModuleList(nn.Conv2d(8, 8, 3, stride=2, padding=1) for _ in range(4))

    def forward(self, x):
        features = [torch.relu(self.block(self.stem(x)))]
        for down in self.down:
            features.append(down(features[-1]))
        return {str(level): f for level, f in zip(range(3, 8), features)}


def _detection():
    from nasx.datasets.detection import PastedObjects, detection_collate, load_objects
    from nasx.evaluator.detection import Detection

    data = PastedObjects(load_objects("digits", limit=40), num_images=4, canvas=64, seed=0)
    loader = DataLoader(data, batch_size=2, collate_fn=detection_collate)
    return Detection(
        num_classes=10, image_size=64, anchor_scale=2.0, train_dataloaders=loader,
        val_dataloaders=loader, max_epochs=1, accelerator="cpu", latency=None,
        enable_progress_bar=False,
    )  # fmt: skip


def _detections_found(model, batch) -> float:
    """A reward for a detector: the share of target objects whose class it found (eval mode)."""
    images, targets = batch
    with torch.no_grad():
        outputs = model.eval()(images)
    found = [
        len(set(o["labels"].tolist()) & set(t["labels"].tolist())) / len(t["labels"])
        for o, t in zip(outputs, targets)
    ]
    return sum(found) / len(found)


@pytest.mark.parametrize("strategy", [DARTS, Proxyless, RandomOneShot, ENAS])
def test_every_one_shot_strategy_searches_a_detection_backbone(strategy):
    """The detector reads ``out_channels`` off the supernet that stands for the backbone; the
    path strategies score archs with a ``reward_fn`` on the whole detector."""
    from torchvision.models.detection import RetinaNet

    scored: list[tuple[type, float]] = []

    def reward(model, batch):
        score = _detections_found(model, batch)
        scored.append((type(model), score))
        return score

    path_strategy = strategy in (RandomOneShot, ENAS)
    s = strategy(reward_fn=reward) if path_strategy else strategy()
    s.run(DetectionBackbone(), _detection())
    (arch,) = s.export_top_models(1)
    assert set(arch) == {"block"} and arch["block"] in {"conv3x3", "conv1x1"}
    assert isinstance(s.module.inner.model, RetinaNet)
    if path_strategy:
        assert scored and {kind for kind, _ in scored} == {RetinaNet}  # head included
        assert all(0.0 <= score <= 1.0 for _, score in scored)


@pytest.mark.parametrize("strategy", [RandomOneShot, ENAS])
def test_path_strategies_without_reward_fn_say_a_detector_needs_one(strategy):
    with pytest.raises(TypeError, match="reward_fn=\\(model, batch\\) -> float"):
        strategy().run(DetectionBackbone(), _detection())
