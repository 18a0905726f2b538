"""Edge-batched mixture cells compute what edge-by-edge cells compute: outputs, gradients of
weights and alphas, and batch-norm running statistics (the reference is the same supernet with
``batch_edges = False``)."""

from __future__ import annotations

import copy

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from nasx.hub import DARTS
from nasx.strategy.oneshot import Supernet
from nasx.strategy.oneshot.supernet.batched_edges import run_batched, signature
from nasx.strategy.oneshot.supernet.mixed_cell import MixedCell

from .toys import DartsLikeSpace


def _pair(space: nn.Module) -> tuple[Supernet, Supernet]:
    batched = Supernet(space)
    plain = copy.deepcopy(batched)
    for m in plain.modules():
        if isinstance(m, MixedCell):
            m.batch_edges = False
    return batched, plain


def _compare(batched: Supernet, plain: Supernet, x: torch.Tensor, train: bool = True) -> None:
    y = torch.randint(0, 10, (x.shape[0],))
    for net in (batched, plain):
        net.train(train)
    out_b, out_p = batched(x), plain(x)
    torch.testing.assert_close(out_b, out_p, rtol=1e-4, atol=1e-5)
    if not train:
        return
    F.cross_entropy(out_b, y).backward()
    F.cross_entropy(out_p, y).backward()
    grads_p = dict(plain.named_parameters())
    for name, p in batched.named_parameters():
        ref = grads_p[name].grad
        assert (p.grad is None) == (ref is None), name
        if ref is not None:
            torch.testing.assert_close(p.grad, ref, rtol=1e-3, atol=1e-6, msg=name)
    buffers_p = dict(plain.named_buffers())
    for name, b in batched.named_buffers():
        torch.testing.assert_close(b, buffers_p[name], rtol=1e-4, atol=1e-6, msg=name)


@pytest.mark.parametrize("channels_last", [False, True])
def test_hub_darts_supernet_same_outputs_gradients_and_running_stats(channels_last):
    torch.manual_seed(0)
    batched, plain = _pair(DARTS(width=4, num_cells=3))  # normal and reduction cells
    x = torch.randn(4, 3, 16, 16)
    if channels_last:
        batched.to(memory_format=torch.channels_last)
        plain.to(memory_format=torch.channels_last)
        x = x.contiguous(memory_format=torch.channels_last)
    with torch.no_grad():  # alphas away from uniform, so a wrong weight-to-edge pairing shows
        for p in batched.arch_parameters():
            p.normal_()
        for p, q in zip(plain.arch_parameters(), batched.arch_parameters(), strict=True):
            p.copy_(q)
    _compare(batched, plain, x)
    _compare(batched, plain, x, train=False)  # eval: running statistics, no update


def test_tutorial_space_with_a_none_op_and_two_nodes():
    torch.manual_seed(1)
    batched, plain = _pair(DartsLikeSpace(width=4, num_cells=2, num_nodes=2))
    _compare(batched, plain, torch.randn(3, 3, 8, 8))


def test_unknown_layers_run_edge_by_edge_inside_the_group():
    class Scale(nn.Module):  # not a layer batched_edges knows
        def forward(self, x):
            return 2 * x

    assert signature(Scale()) is None
    assert signature(nn.Sequential(nn.ReLU(), Scale())) is None
    assert signature(nn.BatchNorm2d(4, momentum=None)) is None


def test_run_batched_equals_each_module_on_its_channel_block():
    torch.manual_seed(2)
    mods = [
        nn.Sequential(
            nn.ReLU(),
            nn.Conv2d(4, 4, 3, stride=2, padding=2, dilation=2, groups=4, bias=False),
            nn.Conv2d(4, 6, 1, bias=True),
            nn.BatchNorm2d(6),
            nn.AvgPool2d(3, 1, 1, count_include_pad=False),
        )
        for _ in range(3)
    ]
    x = [torch.randn(2, 4, 9, 9) for _ in mods]
    ref = torch.cat([m(xi) for m, xi in zip(copy.deepcopy(mods), x, strict=True)], 1)
    out = run_batched(mods, torch.cat(x, 1), signature(mods[0]))
    torch.testing.assert_close(out, ref, rtol=1e-4, atol=1e-5)
