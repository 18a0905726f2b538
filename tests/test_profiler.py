"""Tests for nasx.profiler against hand-computed counts and torchvision's published model sizes."""

import torch.nn as nn
import torchvision

from nasx.profiler import count_macs, count_parameters


def test_hand_computed_counts():
    net = nn.Sequential(
        nn.Conv2d(4, 8, 3, stride=2, padding=1, bias=False),  # out 8x4x4: 128 * 36 = 4608 MACs
        nn.Conv2d(8, 8, 3, padding=1, groups=8),  # depthwise: 128 * 9 = 1152 MACs
        nn.Flatten(),
        nn.Linear(128, 5),  # 5 * 128 = 640 MACs
    )
    assert count_macs(net, (4, 8, 8)) == 4608 + 1152 + 640
    assert count_parameters(net) == 4 * 8 * 9 + (8 * 9 + 8) + (128 * 5 + 5)


def test_shared_parameters_counted_once_and_mode_restored():
    lin = nn.Linear(3, 3)
    net = nn.Sequential(lin, lin).train()
    assert count_parameters(net) == 12
    assert count_macs(net, (3,)) == 18
    assert net.training


def test_resnet18_matches_published_figures():
    # torchvision documents resnet18 as 11.69M params and 1.81 GFLOPS (multiply-adds) at 224x224.
    model = torchvision.models.resnet18()
    assert count_parameters(model) == 11_689_512
    assert abs(count_macs(model, (3, 224, 224)) / 1e9 - 1.81) < 0.01
