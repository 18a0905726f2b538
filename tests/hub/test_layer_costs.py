"""Tests for nasx.hub.layer_costs and the spaces' ``analytic_cost``: hand-computed layers, the
published archs' sizes, and the formulas against the model built on the meta device and counted
(nasx's own counters) on sampled archs, an odd input size included."""

import pytest
import torch.nn as nn

from nasx.hardware.cost import arch_cost
from nasx.hub import layer_costs as lc
from nasx.hub.mnasnet import MNASNET_A1, MnasNet
from nasx.hub.mobile_blocks import InvertedResidual
from nasx.hub.mobilenetv3 import MOBILENETV3_LARGE, MOBILENETV3_SMALL, MobileNetV3Space
from nasx.hub.proxylessnas import GPU_WIDTHS, PROXYLESSNAS_GPU, PROXYLESSNAS_MOBILE, ProxylessNAS
from nasx.profiler import count_macs, count_parameters
from nasx.space import search_space


def test_layer_formulas_match_hand_computed_values_and_torch_layers():
    # stem of the mobile nets at 224: 3*32*9 weights + BN 2*32; 112*112*32 outputs * 27 MACs
    assert lc.conv_bn(3, 32, 3, 112, 112) == (864 + 64, 112 * 112 * 32 * 27)
    assert lc.conv_out(224, 3, 2) == 112 and lc.conv_out(33, 5, 2) == 17
    assert lc.linear(960, 1280) == (960 * 1280 + 1280, 960 * 1280)
    # MobileNetV3-Large's 3rd stage layer with SE: 24 -> 72 -> 40, k5, stride 2, SE squeeze 24
    block = InvertedResidual(24, 40, 2, expand=3, kernel=5, se=True, act="relu", divisible=True)
    p, m, ho, wo = lc.inverted_residual(24, 72, 40, 5, 2, 56, 56, expand=True, squeeze=24)
    assert (ho, wo) == (28, 28)
    assert p == count_parameters(block)
    assert m == count_macs(block, (24, 56, 56))
    # by hand: expansion 24*72 + 144 (56*56*72*24); depthwise 72*25 + 144 (28*28*72*25);
    # SE 72*24+24 + 24*72+72 (2*72*24); projection 72*40 + 80 (28*28*40*72)
    assert p == 1728 + 144 + 1800 + 144 + 3552 + 2880 + 80
    assert m == 56 * 56 * 72 * 24 + 28 * 28 * 72 * 25 + 2 * 72 * 24 + 28 * 28 * 40 * 72
    assert lc.squeeze_excite(72, 24) == (3552, 3456)
    assert count_parameters(nn.BatchNorm2d(72)) == lc.batch_norm(72)


@pytest.mark.parametrize(
    "space, arch, params, macs",
    [
        # Cai et al., ICLR 2019, released ProxylessNAS-Mobile 4.1M / 320M, GPU 7.1M / 465M
        (ProxylessNAS(), PROXYLESSNAS_MOBILE, 4_080_512, 320_427_584),
        (ProxylessNAS(widths=GPU_WIDTHS), PROXYLESSNAS_GPU, 7_119_848, 465_260_160),
        # Howard et al., ICCV 2019, Table 3: Large 5.4M / 219M, Small 2.5M / 56M (torchvision's
        # networks, counted the same way, give these figures: tests/hub/test_mobilenetv3.py)
        (MobileNetV3Space(), MOBILENETV3_LARGE, 5_483_032, 216_589_760),
        (MobileNetV3Space(skeleton="small"), MOBILENETV3_SMALL, 2_542_856, 56_510_400),
        (MnasNet(), MNASNET_A1, 3_887_038, 311_579_072),  # 3.9M / 312M
    ],
    ids=["proxyless-mobile", "proxyless-gpu", "mbv3-large", "mbv3-small", "mnasnet-a1"],
)
def test_published_archs_from_the_formulas(space, arch, params, macs):
    assert space.analytic_cost(arch, (3, 224, 224)) == (params, macs)
    cost = arch_cost(space, arch, (3, 224, 224))
    assert (cost.params, cost.macs) == (params, macs)


@pytest.mark.parametrize(
    "make",
    [
        lambda: ProxylessNAS(num_classes=7),
        lambda: ProxylessNAS(num_classes=7, widths=GPU_WIDTHS),
        lambda: MobileNetV3Space(num_classes=7),
        lambda: MobileNetV3Space(num_classes=7, skeleton="small"),
    ],
    ids=["proxyless", "proxyless-gpu-widths", "mbv3-large", "mbv3-small"],
)
def test_formulas_equal_the_built_model_on_sampled_archs(make):
    space = make()
    ss = search_space(space)
    # seeds 0-2 plus the extremes of every choice (deepest, widest, all SE on / off)
    archs = [ss.sample(seed=seed) for seed in range(3)]
    archs += [{k: c.values[-1] for k, c in ss.items()}, {k: c.values[0] for k, c in ss.items()}]
    for arch in archs:
        for shape in ((3, 224, 224), (3, 33, 50)):  # odd sizes: the convs' rounding
            formula = arch_cost(space, arch, shape)
            assert formula == arch_cost(space, arch, shape, analytic=False), (arch, shape)


def test_wrong_input_shape_and_arch_are_refused():
    with pytest.raises(ValueError, match=r"ProxylessNAS takes \(3, H, W\) inputs"):
        arch_cost(ProxylessNAS(), PROXYLESSNAS_MOBILE, (1, 32, 32))
    with pytest.raises(ValueError, match=r"MobileNetV3Space takes \(3, H, W\) inputs"):
        arch_cost(MobileNetV3Space(), MOBILENETV3_LARGE, (3, 32))
    with pytest.raises(ValueError, match="s2/width"):
        arch_cost(MobileNetV3Space(), {**MOBILENETV3_LARGE, "s2/width": 9}, (3, 32, 32))
