"""One-shot search of a backbone that the evaluator wraps in a head (Segmentation): every strategy
trains and exports; the path strategies attach a runnable supernet (Segmentation sizes its head by
a probe forward) and score archs through the whole model, head included."""

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
