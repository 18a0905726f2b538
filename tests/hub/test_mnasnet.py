"""Tests for nasx.hub.mnasnet: MnasNet-A1 and MobileNetV2 as archs, sizes against the papers."""

import pytest
import torch
import torchvision

from nasx.hub.mnasnet import MNASNET_A1, MOBILENET_V2, MnasNet
from nasx.profiler import count_macs, count_parameters
from nasx.space import model_context, search_space


def _build(arch, **kwargs):
    with model_context(arch):
        return MnasNet(**kwargs)


def test_archs_are_valid_in_the_space():
    space = search_space(MnasNet())
    assert space.validate(MNASNET_A1) == MNASNET_A1
    assert space.validate(MOBILENET_V2) == MOBILENET_V2
    assert set(space) == {
        f"block{b}/{k}"
        for b in range(1, 8)
        for k in ("conv", "expand", "kernel", "se", "skip", "filters", "repeats")
    }


def test_mnasnet_a1_params_and_macs_match_the_paper():
    # Paper (Table 1): 3.9M parameters, 312M multiply-adds at 224x224. Params given to 2 digits:
    # 1.5% tolerance; MACs to 3 digits: 0.5%.
    model = _build(MNASNET_A1)
    assert count_parameters(model) == pytest.approx(3.9e6, rel=0.015)
    assert count_macs(model, (3, 224, 224)) == pytest.approx(312e6, rel=0.005)


def test_mobilenet_v2_arch_is_torchvisions_network():
    # Same layers in the same order as torchvision's MobileNetV2 (which uses ReLU6, not ReLU).
    ours, ref = _build(MOBILENET_V2), torchvision.models.mobilenet_v2()
    assert [p.shape for p in ours.parameters()] == [p.shape for p in ref.parameters()]
    assert count_macs(ours, (3, 224, 224)) == count_macs(ref, (3, 224, 224))  # 300.8M, paper: 300M


def test_layer_choices_change_the_layers():
    arch = {
        **MNASNET_A1,
        "block7/conv": "conv",
        "block7/kernel": 5,
        "block7/repeats": 2,
        "block7/filters": 240,
    }
    model = _build(arch, num_classes=10)
    first, second = model.blocks[6]
    assert first.layers[0].kernel_size == (5, 5) and first.layers[0].groups == 1
    assert second.residual and first.layers[0].out_channels == 240
    assert model(torch.randn(2, 3, 32, 32)).shape == (2, 10)


def test_search_form_runs_its_defaults():
    space = MnasNet(num_classes=10)
    assert space(torch.randn(2, 3, 32, 32)).shape == (2, 10)
