"""Tests for nasx.hub.proxylessnas: ProxylessNAS-Mobile and -GPU as archs, sizes against the
paper (and the parameter counts of the released networks)."""

import pytest
import torch

from nasx.hub.proxylessnas import GPU_WIDTHS, PROXYLESSNAS_GPU, PROXYLESSNAS_MOBILE, ProxylessNAS
from nasx.profiler import count_macs, count_parameters
from nasx.space import model_context, search_space


def _build(arch, **kwargs):
    with model_context(arch):
        return ProxylessNAS(**kwargs)


def test_archs_are_valid_in_the_space():
    space = search_space(ProxylessNAS())
    assert space.validate(PROXYLESSNAS_MOBILE) == PROXYLESSNAS_MOBILE
    assert space.validate(PROXYLESSNAS_GPU) == PROXYLESSNAS_GPU
    # 5 depths, 21 layers x (kernel, expand)
    assert len(space) == 5 + 2 * 21


@pytest.mark.parametrize(
    "arch, kwargs, params, macs",
    [
        # Cai et al., ICLR 2019, released ProxylessNAS-Mobile: 4.1M params, 320M MACs (as quoted
        # by github.com/mit-han-lab/proxylessnas and later papers); pytorchcv's port of the
        # released config has 4,080,512 parameters.
        (PROXYLESSNAS_MOBILE, {}, 4_080_512, 320e6),
        # ProxylessNAS-GPU: 7.1M params, 465M MACs (same sources); pytorchcv's port: 7,119,848.
        (PROXYLESSNAS_GPU, {"widths": GPU_WIDTHS}, 7_119_848, 465e6),
    ],
    ids=["mobile", "gpu"],
)
def test_published_archs_have_the_published_sizes(arch, kwargs, params, macs):
    model = _build(arch, **kwargs)
    assert count_parameters(model) == params
    assert count_macs(model, (3, 224, 224)) == pytest.approx(macs, rel=0.005)


def test_depth_and_layer_choices_change_the_layers():
    arch = {**PROXYLESSNAS_MOBILE, "s1/depth": 3, "s1_2/kernel": 7, "s1_2/expand": 6}
    model = _build(arch, num_classes=10)
    third = model.blocks[0][2]
    assert third.depthwise[0].kernel_size == (7, 7) and third.depthwise[0].out_channels == 32 * 6
    assert third.residual and not model.blocks[0][0].residual
    assert model(torch.randn(2, 3, 32, 32)).shape == (2, 10)


def test_search_form_runs_its_defaults():
    assert ProxylessNAS(num_classes=10)(torch.randn(2, 3, 32, 32)).shape == (2, 10)
