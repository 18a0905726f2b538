"""The ShuffleNet space of Single Path One-Shot (NNI's ``ShuffleNetSpace``) against the paper.

SPOS (Guo et al., ECCV 2020), Table 3: the block-search network (:data:`SPOS`) costs 319M FLOPs
(multiply-adds, the ShuffleNet papers' convention). nasx counts 322.9M (conv and linear layers,
classifier included): 1.2% over, checked within 1.5%; the exact counts are pinned.
"""

from __future__ import annotations

import pytest
import torch

from nasx.hub import SPOS, ShuffleNetSpace
from nasx.hub.shufflenet import channel_shuffle
from nasx.profiler import count_macs, count_parameters
from nasx.space import search_space


def test_spos_at_its_published_size():
    with torch.device("meta"):
        model = ShuffleNetSpace().freeze(SPOS)
    macs = count_macs(model, (3, 224, 224))
    assert count_parameters(model) == 3_558_464 and macs == 322_918_720
    assert macs == pytest.approx(319e6, rel=0.015)


def test_labels_values_and_channel_search():
    ss = search_space(ShuffleNetSpace())
    assert list(ss) == [f"layer_{i}" for i in range(1, 21)]  # 4^20 archs
    assert ss.size == 4**20 and ss["layer_7"].values == ["k3", "k5", "k7", "xcep"]
    ss = search_space(ShuffleNetSpace(num_labels=10, channel_search=True))
    # NNI: 0.2x .. 1.6x of the block's default middle width (out // 2), default 1.0x
    assert ss["channel_1"].values == [6, 12, 19, 25, 32, 38, 44, 51]
    assert ss["channel_1"].default == 32 and ss["channel_20"].values[-1] == 512
    arch = {**ss.sample(seed=0), "layer_1": "k3"}  # k3: pointwise, depthwise, pointwise
    model = ShuffleNetSpace(num_labels=10, channel_search=True).freeze(arch)
    mid = model.features[0].branch_main[0]  # the first 1x1 conv of block 1
    assert mid.out_channels == arch["channel_1"]
    assert model(torch.randn(2, 3, 32, 32)).shape == (2, 10)


def test_channel_shuffle_interleaves_the_two_halves():
    x = torch.arange(8.0).view(1, 8, 1, 1)
    even, odd = channel_shuffle(x)
    assert even.flatten().tolist() == [0, 2, 4, 6] and odd.flatten().tolist() == [1, 3, 5, 7]
