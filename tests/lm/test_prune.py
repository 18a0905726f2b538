"""Minitron's pruning: importance finds what a hand-built parent does not use (a silent head, a
dead neuron, an identity layer), and pruning exactly that leaves the logits unchanged; the search
ranks distilled candidates near the parameter target."""

from __future__ import annotations

import pytest
import torch

from nasx.hub.gpt import GPTSpace, gpt_arch
from nasx.lm import importance, model_arch, prune, prune_search, prune_space
from nasx.lm.prune import complete_arch

SPACE = dict(
    vocab_size=32,
    block_size=8,
    search_embed_dim=(16, 24, 32),
    search_depth=(2, 3),
    search_num_heads=(1, 2),
    search_mlp_ratio=(1.0, 2.0),
    head_dim=8,
)
PARENT = gpt_arch(32, [2, 2, 2], [2.0, 2.0, 2.0])


def _parent():
    torch.manual_seed(0)
    space = GPTSpace(**SPACE)
    model = space.freeze(PARENT).eval()
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn_like(p) * 0.3)
    return space, model


def _data(n=4, seed=0):
    g = torch.Generator().manual_seed(seed)
    tokens = torch.randint(0, 32, (n, 2, 9), generator=g)
    return [(t[:, :-1], t[:, 1:]) for t in tokens]


def _silence(model):
    """Head 1 of layer 0 and neuron 5 of layer 2 output nothing; layer 1 is the identity."""
    b0, b1, b2 = model.blocks
    with torch.no_grad():
        b0.attn.v.weight[8:16] = 0  # head 1's values: its output is 0 whatever it attends to
        b0.attn.v.bias[8:16] = 0
        b2.fc1.weight[5] = 0  # neuron 5: gelu(0) = 0
        b2.fc1.bias[5] = 0
        for p in (b1.attn.proj.weight, b1.attn.proj.bias, b1.fc2.weight, b1.fc2.bias):
            p.zero_()  # both residual branches add 0: layer 1 is the identity


def test_importance_finds_what_the_parent_does_not_use():
    _, parent = _parent()
    _silence(parent)
    imp = importance(parent, _data(), batches=4)
    assert imp.heads[0][1] == 0 < imp.heads[0][0]
    assert imp.neurons[2][5] == 0 < imp.neurons[2].sort().values[1]
    assert imp.layers.argmin() == 1 and imp.layers[1] < 1e-6 < imp.layers[0]
    assert (imp.embed > 0).all()


def test_pruning_what_is_unused_keeps_the_logits():
    space, parent = _parent()
    _silence(parent)
    imp = importance(parent, _data(), batches=4)
    # the layer and the head that do nothing go; every embedding channel stays (the MLP's
    # widths are ratios of it, so one dead neuron cannot go alone: importance's test checks it)
    child_arch = {"embed_dim": 32, "depth": 2, "num_head_0": 1, "mlp_ratio_0": 2.0}
    child_arch.update({"num_head_1": 2, "mlp_ratio_1": 2.0})
    child = prune(parent, space, child_arch, imp).eval()
    x, _ = _data()[0]
    with torch.no_grad():
        torch.testing.assert_close(child(x), parent(x), rtol=1e-5, atol=1e-5)
    assert model_arch(child)["num_head_0"] == 1 and len(child.blocks) == 2
    # the kept layers are the parent's layers 0 and 2, in order
    torch.testing.assert_close(child.blocks[1].fc2.weight, parent.blocks[2].fc2.weight)


def test_pruning_the_most_important_instead_changes_the_logits():
    """The same arch with importance reversed keeps the silent head and the identity layer and
    drops a working one: the logits change (so the test above can fail)."""
    space, parent = _parent()
    _silence(parent)
    imp = importance(parent, _data(), batches=4)
    imp.heads = [-h for h in imp.heads]
    imp.layers = -imp.layers
    child_arch = {"embed_dim": 32, "depth": 2, "num_head_0": 1, "mlp_ratio_0": 2.0}
    child_arch.update({"num_head_1": 2, "mlp_ratio_1": 2.0})
    child = prune(parent, space, child_arch, imp).eval()
    x, _ = _data()[0]
    with torch.no_grad():
        assert not torch.allclose(child(x), parent(x), atol=1e-3)


def test_the_full_arch_is_the_parent_and_channels_follow_importance():
    space, parent = _parent()
    imp = importance(parent, _data(), batches=2)
    x, _ = _data()[1]
    same = prune(parent, space, PARENT, imp).eval()
    with torch.no_grad():
        torch.testing.assert_close(same(x), parent(x))
    imp.embed = torch.arange(32.0)  # the last 16 channels matter most
    child = prune(parent, space, complete_arch(space, gpt_arch(16, [2, 2], [2.0, 2.0])), imp)
    torch.testing.assert_close(child.tok_emb.weight, parent.tok_emb.weight[:, 16:])
    torch.testing.assert_close(
        child.blocks[0].attn.q.weight, parent.blocks[0].attn.q.weight[:, 16:]
    )


def test_bad_input_is_named():
    space, parent = _parent()
    imp = importance(parent, _data(), batches=1)
    with pytest.raises(ValueError, match="cannot keep 3 heads of layer 0 of 2"):
        bigger = GPTSpace(**{**SPACE, "search_num_heads": (3,)})
        prune(parent, bigger, gpt_arch(32, [3, 3], [2.0, 2.0]), imp)
    with pytest.raises(TypeError, match="not a model of nasx.hub.gpt.GPTSpace"):
        importance(torch.nn.Linear(2, 2), _data())
    with pytest.raises(ValueError, match="no arch of the space is within 10% of 10 parameters"):
        prune_search(parent, space, _data(), _data(), _data(), target_params=10)


def test_prune_space_and_search_rank_distilled_candidates():
    space, parent = _parent()
    archs = prune_space(parent, space)
    assert len(archs) == 3 * 2 * 2 * 2  # embed_dim x depth x heads x MLP ratio, all fit the parent
    sizes = [
        sum(p.numel() for p in prune(parent, space, a, importance(parent, _data(), 1)).parameters())
        for a in archs[:3]
    ]
    assert sizes == sorted(sizes)
    total = sum(p.numel() for p in parent.parameters())
    ranked = prune_search(
        parent,
        space,
        _data(),
        _data(),
        _data(seed=1),
        target_params=total // 2,
        tolerance=0.3,
        max_candidates=3,
        distill_steps=5,
    )
    assert 1 <= len(ranked) <= 3
    losses = [c.loss_distilled for c in ranked]
    assert losses == sorted(losses)
    for c in ranked:
        assert abs(c.params - total // 2) <= 0.3 * total // 2
        assert c.params == sum(p.numel() for p in c.model.parameters())
