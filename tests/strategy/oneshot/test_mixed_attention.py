"""Weight sharing over MutableMultiheadAttention's num_heads: paths equal the rebuilt subnet,
mixtures weight every head count's output, searched widths are refused by name."""

from __future__ import annotations

import pytest
import torch
import torch.nn as nn

from nasx.space import Categorical, ModelSpace, MutableMultiheadAttention
from nasx.strategy.oneshot import Supernet
from nasx.strategy.oneshot.supernet import subnet


class Net(ModelSpace):
    def __init__(self, batch_first=False, embed=8):
        super().__init__()
        heads = Categorical([1, 2, 4], label="heads")
        self.attn = MutableMultiheadAttention(embed, heads, batch_first=batch_first)

    def forward(self, x):
        return self.attn(x, x, x)[0]


@pytest.mark.parametrize("batch_first", [False, True])
def test_a_path_equals_the_rebuilt_subnet(batch_first):
    torch.manual_seed(0)
    net = Supernet(Net(batch_first), mode="path", alphas=False).eval()
    x = torch.randn(3, 5, 8)
    outs = []
    for heads in (1, 2, 4):
        net.use_arch({"heads": heads})
        model = subnet(net, {"heads": heads}).eval()
        assert model.attn.num_heads == heads
        with torch.no_grad():
            got, want = net(x), model(x)
        torch.testing.assert_close(got, want)
        outs.append(got)
    assert not torch.allclose(outs[0], outs[1])  # the head split matters, the weights are shared


def test_a_mixture_weights_each_head_count_by_its_probability():
    torch.manual_seed(0)
    net = Supernet(Net(), mode="mixture").eval()
    x = torch.randn(4, 2, 8)
    p = torch.tensor([0.2, 0.3, 0.5])
    net.use_mixture(lambda key, alpha: p)
    with torch.no_grad():
        mixed = net(x)
        expected = 0
        for w, heads in zip(p, (1, 2, 4)):
            net.use_arch({"heads": heads})
            expected = expected + w * net(x)
    torch.testing.assert_close(mixed, expected)
    # the gradient reaches the heads' alphas
    net.use_mixture(lambda key, alpha: alpha.softmax(-1))
    net(x).square().sum().backward()
    assert net.alphas()["heads"].grad.abs().sum() > 0


def test_searched_embedding_width_is_refused_by_name():
    class Wide(ModelSpace):
        def __init__(self):
            super().__init__()
            self.attn = MutableMultiheadAttention(Categorical([8, 16], label="embed"), 2)

    with pytest.raises(NotImplementedError, match="embed_dim"):
        Supernet(Wide(), mode="path", alphas=False)
    assert isinstance(nn.MultiheadAttention(8, 2), nn.Module)
