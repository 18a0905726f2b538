"""Tests for nasx.profiler against hand-computed counts and torchvision's published model sizes.

Every hub model is counted in tests/hub/test_counts.py.
"""

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision

from nasx.profiler import count_flops, count_macs, count_parameters, count_params


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


def test_a_transformer_encoder_layer_is_counted_in_full():
    # L tokens of width d, feed-forward width f: Q/K/V and output projections 4*L*d^2, the two
    # attention products (Q K^T and A V) 2*L^2*d over all heads, the feed-forward 2*L*d*f.
    L, d, heads, f = 10, 16, 4, 32
    layer = nn.TransformerEncoderLayer(d, heads, f, batch_first=True)
    expected = 4 * L * d * d + 2 * L * L * d + 2 * L * d * f
    assert count_macs(layer, (L, d)) == expected == 23_680
    assert count_flops(layer, (L, d)) == 2 * expected
    # the same with the attention weights materialized (bmm path instead of fused attention)
    attention = nn.MultiheadAttention(d, heads, batch_first=True)
    x = torch.zeros(1, L, d)
    assert count_macs(_Call(attention), inputs=(x, x, x)) == 4 * L * d * d + 2 * L * L * d


class _Call(nn.Module):
    """Wraps MultiheadAttention so its forward returns one tensor (and asks for the weights)."""

    def __init__(self, attention):
        super().__init__()
        self.attention = attention

    def forward(self, q, k, v):
        return self.attention(q, k, v, need_weights=True)[0]


class _FunctionalNet(nn.Module):
    """No conv or linear module at all: every product is a functional call."""

    def __init__(self):
        super().__init__()
        self.conv_w = nn.Parameter(torch.randn(6, 3, 3, 3))
        self.lin_w = nn.Parameter(torch.randn(10, 6 * 8 * 8))
        self.proj = nn.Parameter(torch.randn(10, 4))

    def forward(self, x):
        x = F.conv2d(x, self.conv_w, padding=1)  # 6*8*8 outputs * 27 = 10_368
        x = F.linear(x.flatten(1), self.lin_w)  # 10 * 384 = 3_840
        x = x @ self.proj  # (1x10) @ (10x4): 40
        return torch.einsum("bi,ij->bj", x, torch.ones(4, 2))  # 8


def test_functional_ops_are_counted():
    assert count_macs(_FunctionalNet(), (3, 8, 8)) == 10_368 + 3_840 + 40 + 8


def test_tied_weights_are_counted_once():
    embedding, decoder = nn.Embedding(100, 8), nn.Linear(8, 100, bias=False)
    decoder.weight = embedding.weight  # weight tying, as in language models
    assert count_parameters(nn.ModuleList([embedding, decoder])) == 800
    assert count_params is count_parameters


def test_inputs_given_as_they_are_and_bad_arguments():
    assert count_macs(nn.Linear(4, 2), inputs=torch.zeros(5, 4)) == 5 * 8
    with pytest.raises(ValueError, match="exactly one of input_shape"):
        count_macs(nn.Linear(4, 2))
    with pytest.raises(ValueError, match="exactly one of input_shape"):
        count_macs(nn.Linear(4, 2), (4,), inputs=torch.zeros(1, 4))


def test_fast_path_setting_and_mode_are_restored():
    layer = nn.TransformerEncoderLayer(8, 2, 16, batch_first=True).train()
    before = torch.backends.mha.get_fastpath_enabled()
    count_macs(layer, (3, 8))
    assert layer.training and torch.backends.mha.get_fastpath_enabled() == before


def test_a_meta_model_is_counted_without_computing():
    with torch.device("meta"):
        conv = nn.Conv2d(3, 64, 3)
    assert count_macs(conv, (3, 1000, 1000)) == 64 * 27 * 998 * 998
