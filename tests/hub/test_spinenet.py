"""Tests for nasx.hub.spinenet: SpineNet-49 as an arch, RetinaNet sizes against the paper."""

import pytest
import torch
from torchvision.models.detection import RetinaNet

from nasx.hub.spinenet import SPINENET_49, SpineNet
from nasx.profiler import count_parameters
from nasx.space import model_context, search_space


def _backbone(scaling="49", arch=SPINENET_49):
    with model_context(arch):
        return SpineNet(scaling=scaling)


def test_spinenet_49_is_an_arch_of_the_space():
    space = search_space(SpineNet())
    assert space.validate(SPINENET_49) == SPINENET_49
    assert (
        len(space) == 15 + 10 + 15 + 1
    )  # types, levels of non-output blocks, parents, output order


@pytest.mark.parametrize("scaling, published", [("49", 28.5e6), ("96", 43.0e6), ("143", 66.9e6)])
def test_retinanet_parameter_counts_match_the_paper(scaling, published):
    # SpineNet paper, Table 2 (RetinaNet, COCO): 28.5M / 43.0M / 66.9M parameters. torchvision's
    # RetinaNet head (4 convs of 256, 9 anchors, 91 classes) is the paper's head except for
    # biases instead of per-level BN; the papers give 3 digits, so 0.5% tolerance.
    model = RetinaNet(_backbone(scaling), num_classes=91, min_size=640, max_size=640)
    assert count_parameters(model) == pytest.approx(published, rel=0.005)


def test_output_levels_and_shapes():
    backbone = _backbone("49S")
    feats = backbone(torch.randn(2, 3, 128, 128))
    assert list(feats) == ["p3", "p4", "p5", "p6", "p7"]
    assert [tuple(f.shape) for f in feats.values()] == [
        (2, 128, 128 // 2**level, 128 // 2**level) for level in range(3, 8)
    ]
    assert backbone.out_channels == 128


def test_spinenet_49_wiring_follows_the_block_specs():
    backbone = _backbone()
    assert backbone.block_levels == [2, 4, 3, 4, 6, 4, 5, 7, 5, 5, 4, 3, 5, 7, 6]
    assert backbone.output_blocks == {4: 10, 3: 11, 5: 12, 7: 13, 6: 14}
    # the P5 output block also sums block 9 (level 5, bottleneck, not read by anyone): map 11
    assert backbone.block_extras[12] == [11]


def test_retinanet_trains_one_step_with_the_backbone():
    torch.manual_seed(0)
    model = RetinaNet(_backbone("49S"), num_classes=3, min_size=128, max_size=128)
    images = [torch.rand(3, 128, 128), torch.rand(3, 128, 128)]
    targets = [
        {"boxes": torch.tensor([[10.0, 20.0, 60.0, 90.0]]), "labels": torch.tensor([1])},
        {"boxes": torch.tensor([[30.0, 30.0, 100.0, 70.0]]), "labels": torch.tensor([2])},
    ]
    losses = model(images, targets)
    loss = sum(losses.values())
    assert torch.isfinite(loss)
    loss.backward()
    model.eval()
    with torch.no_grad():
        detections = model(images)
    assert len(detections) == 2 and set(detections[0]) == {"boxes", "scores", "labels"}


def test_bad_scaling_is_refused():
    with pytest.raises(ValueError, match="scaling must be one of"):
        SpineNet(scaling="50")
