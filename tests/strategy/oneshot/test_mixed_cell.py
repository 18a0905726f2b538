"""MixedCell extras: PC-DARTS partial-channel edges against a hand computation."""

import pytest
import torch
import torch.nn as nn

from nasx.space import Cell, ModelSpace
from nasx.strategy.oneshot import Supernet
from nasx.strategy.oneshot.supernet.mixed_cell import channel_shuffle

from .toys import DartsLikeSpace


def test_channel_shuffle_interleaves_groups():
    x = torch.arange(6.0).view(1, 6, 1, 1)
    assert channel_shuffle(x, 2).flatten().tolist() == [0, 3, 1, 4, 2, 5]


def test_partial_edges_of_skip_ops_shuffle_their_input():
    """All weight on skip_connect: edge(x) = shuffle(cat(x[:, :C/2], x[:, C/2:])) = shuffle(x)."""
    torch.manual_seed(0)
    supernet = Supernet(
        DartsLikeSpace(width=4, num_cells=3, num_nodes=2), partial_channels=2
    ).eval()
    cell = supernet.model.cells[0]  # a normal cell: stride 1 everywhere
    assert cell.edges["2_0"]["sep_conv_3x3"][1].in_channels == 2  # ops on C/2 = 2 channels
    skip = torch.tensor([0.0, 0.0, 1.0, 0.0])
    supernet.state.arch = None
    supernet.state.weights = {k: skip for k in supernet.alphas()}
    s0, s1 = torch.randn(2, 12, 8, 8), torch.randn(2, 12, 8, 8)
    _, out = cell(s0, s1)
    p0, p1 = cell.preprocessor([s0, s1])
    n2 = channel_shuffle(p0, 2) + channel_shuffle(p1, 2)
    n3 = channel_shuffle(p0, 2) + channel_shuffle(p1, 2) + channel_shuffle(n2, 2)
    torch.testing.assert_close(out, torch.cat([n2, n3], 1))


def test_partial_channel_supernet_trains_and_has_fewer_weights():
    torch.manual_seed(0)
    space = DartsLikeSpace(width=4, num_cells=3, num_nodes=2)
    full, partial = Supernet(space), Supernet(space, partial_channels=2)
    assert sum(p.numel() for p in partial.model_parameters()) < 0.6 * sum(
        p.numel() for p in full.model_parameters()
    )
    x = torch.randn(2, 3, 16, 16)
    assert partial(x).shape == full(x).shape
    partial(x).sum().backward()
    assert all(a.grad is not None for a in partial.arch_parameters())


def test_partial_channels_need_factories_with_partial_and_mixture_mode():
    class Plain(ModelSpace):
        def __init__(self):
            super().__init__()
            self.cell = Cell(
                {"conv": lambda n, k, j: nn.Conv2d(4, 4, 3, padding=1)}, num_nodes=1, label="c"
            )

    with pytest.raises(TypeError, match="partial"):
        Supernet(Plain(), partial_channels=2)
    with pytest.raises(ValueError, match="mixture"):
        Supernet(DartsLikeSpace(width=4), mode="path", partial_channels=2)
