"""Tests for nasx.hub.mobilenetv3: MobileNetV3-Large and -Small as archs of the space, the same
layers as torchvision's networks, sizes against the paper."""

import pytest
import torch
import torchvision

from nasx.hub.mobile_blocks import make_divisible
from nasx.hub.mobilenetv3 import MOBILENETV3_LARGE, MOBILENETV3_SMALL, MobileNetV3Space
from nasx.profiler import count_macs, count_parameters
from nasx.space import model_context, search_space

SMALL = {"skeleton": "small"}


def _build(arch, **kwargs):
    with model_context(arch):
        return MobileNetV3Space(**kwargs)


def test_archs_are_valid_in_their_skeletons():
    assert search_space(MobileNetV3Space()).validate(MOBILENETV3_LARGE) == MOBILENETV3_LARGE
    assert search_space(MobileNetV3Space(**SMALL)).validate(MOBILENETV3_SMALL) == MOBILENETV3_SMALL


@pytest.mark.parametrize(
    "arch, kwargs, reference, params, macs",
    [
        # Howard et al., "Searching for MobileNetV3", ICCV 2019, Table 3: Large 5.4M params,
        # 219M MACs; Small 2.5M, 56M. torchvision's networks follow Tables 1-2 layer for layer.
        (MOBILENETV3_LARGE, {}, torchvision.models.mobilenet_v3_large, 5.4e6, 219e6),
        (MOBILENETV3_SMALL, SMALL, torchvision.models.mobilenet_v3_small, 2.5e6, 56e6),
    ],
    ids=["large", "small"],
)
def test_published_archs_are_torchvisions_networks_with_the_papers_sizes(
    arch, kwargs, reference, params, macs
):
    ours, ref = _build(arch, **kwargs), reference()
    assert [p.shape for p in ours.parameters()] == [p.shape for p in ref.parameters()]
    assert count_macs(ours, (3, 224, 224)) == count_macs(ref, (3, 224, 224))
    # the paper's figures have 2 digits: params within 2%; MACs within 1.5% (216.6M vs 219M,
    # which torchvision's network, counted the same way, gives too)
    assert count_parameters(ours) == pytest.approx(params, rel=0.02)
    assert count_macs(ours, (3, 224, 224)) == pytest.approx(macs, rel=0.015)


def test_make_divisible_rounds_to_multiples_of_8_within_10_percent():
    assert [make_divisible(v) for v in (72 // 4, 184 // 4, 80 * 2.3, 24 * 11 / 3, 10)] == [
        24,
        48,
        184,
        88,
        16,
    ]


def test_choices_change_the_layers():
    arch = {**MOBILENETV3_SMALL, "s2/width": 32, "s2_0/kernel": 7, "s2/act": "hswish"}
    model = _build(arch, num_classes=10, **SMALL)
    first = model.blocks[1][0]
    assert first.depthwise[0].kernel_size == (7, 7) and first.project[0].out_channels == 32
    assert isinstance(first.depthwise[2], torch.nn.Hardswish)
    assert model(torch.randn(2, 3, 32, 32)).shape == (2, 10)
