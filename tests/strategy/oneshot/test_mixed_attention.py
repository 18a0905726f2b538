"""Weight sharing over MutableMultiheadAttention's num_heads: paths equal the rebuilt subnet,
mixtures weight every head count's output; the same over a searched embedding width."""

from __future__ import annotations

import pytest
import torch
import torch.nn as nn

from nasx.space import Categorical, ModelSpace, MutableLinear, MutableMultiheadAttention
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


class Wide(ModelSpace):
    """A searched embedding width and head count, between layers of the same width."""

    def __init__(self, batch_first=False, bias_kv=False):
        super().__init__()
        embed = Categorical([4, 8], label="embed")
        self.proj = MutableLinear(3, embed)
        self.attn = MutableMultiheadAttention(
            embed, Categorical([1, 2], label="heads"), batch_first=batch_first, add_bias_kv=bias_kv
        )
        self.head = MutableLinear(embed, 2)

    def forward(self, x):
        h = self.proj(x)
        return self.head(self.attn(h, h, h)[0])


WIDE_ARCHS = [{"embed": e, "heads": h} for e in (4, 8) for h in (1, 2)]


@pytest.mark.parametrize("batch_first, bias_kv", [(False, False), (True, True)])
def test_a_searched_width_path_equals_the_rebuilt_subnet(batch_first, bias_kv):
    torch.manual_seed(0)
    net = Supernet(Wide(batch_first, bias_kv), mode="path", alphas=False).eval()
    assert net.model.attn.in_proj_weight.shape == (24, 8)  # one attention of the largest width
    x = torch.randn(3, 5, 3)
    outs = []
    for arch in WIDE_ARCHS:
        net.use_arch(arch)
        model = subnet(net, arch).eval()
        assert type(model.attn) is nn.MultiheadAttention and model.attn.embed_dim == arch["embed"]
        with torch.no_grad():
            got, want = net(x), model(x)
        torch.testing.assert_close(got, want)
        outs.append(got)
    # the narrow width is a slice of the wide one's weights, not the same function
    assert not torch.allclose(outs[0], outs[2])


def test_a_searched_width_mixture_weights_every_outcome_by_its_probability():
    torch.manual_seed(0)
    net = Supernet(Wide(), mode="mixture").eval()
    x = torch.randn(4, 2, 3)
    p = {"embed": torch.tensor([0.3, 0.7]), "heads": torch.tensor([0.6, 0.4])}
    net.use_mixture(lambda key, alpha: p[key])
    with torch.no_grad():
        net(x)  # a forward sets the mixture weights the layers read
        h = net.model.proj(x)  # the projection mixes too: its output has the largest width
        mixed = net.model.attn(h, h, h)[0]
        expected = 0
        for arch in WIDE_ARCHS:
            net.use_arch(arch)
            e = arch["embed"]
            out = net.model.attn(h[..., :e], h[..., :e], h[..., :e])[0]
            weight = p["embed"][[4, 8].index(e)] * p["heads"][[1, 2].index(arch["heads"])]
            expected = expected + weight * torch.nn.functional.pad(out, (0, 8 - e))
    torch.testing.assert_close(mixed, expected)
    net.use_mixture(lambda key, alpha: alpha.softmax(-1))
    net(x).square().sum().backward()
    assert net.alphas()["embed"].grad.abs().sum() > 0 and net.alphas()["heads"].grad.abs().sum() > 0


def test_proxyless_gates_reach_the_width_label():
    torch.manual_seed(0)
    net = Supernet(Wide(), mode="path")
    probs = {k: a.softmax(-1) for k, a in net.alphas().items()}
    net.use_arch({"embed": 8, "heads": 2}, gates=probs)
    net(torch.randn(2, 5, 3)).square().sum().backward()
    assert net.alpha("embed").grad.abs().sum() > 0 and net.alpha("heads").grad.abs().sum() > 0


def test_a_searched_key_width_is_refused_by_name():
    class Keys(ModelSpace):
        def __init__(self):
            super().__init__()
            self.attn = MutableMultiheadAttention(8, 2, kdim=Categorical([4, 8], label="k"))

    with pytest.raises(NotImplementedError, match="kdim"):
        Supernet(Keys(), mode="path", alphas=False)


def test_a_narrow_width_uses_the_leading_block_of_each_projection():
    # the reference: a plain attention of width 4 given, by hand, the leading 4x4 block of the
    # wide attention's query, key, value and output projections (AutoFormer's entanglement)
    torch.manual_seed(0)
    net = Supernet(Wide(), mode="path", alphas=False).eval()
    wide = net.model.attn
    ref = nn.MultiheadAttention(4, 2).eval()
    q, k, v = wide.in_proj_weight.detach().split(8)
    qb, kb, vb = wide.in_proj_bias.detach().split(8)
    with torch.no_grad():
        ref.in_proj_weight.copy_(torch.cat([q[:4, :4], k[:4, :4], v[:4, :4]]))
        ref.in_proj_bias.copy_(torch.cat([qb[:4], kb[:4], vb[:4]]))
        ref.out_proj.weight.copy_(wide.out_proj.weight[:4, :4])
        ref.out_proj.bias.copy_(wide.out_proj.bias[:4])
        net.use_arch({"embed": 4, "heads": 2})
        h = torch.randn(5, 3, 4)
        torch.testing.assert_close(wide(h, h, h)[0], ref(h, h, h)[0])
