"""space.freeze(arch) keeps the space's weights (nasx/space/reuse.py).

The reference is the space's own modules, run by hand for the arch: a subnet taken from a
trained space must compute what those modules compute.
"""

import torch
import torch.nn as nn

from nasx.space import (
    Categorical,
    Cell,
    InputChoice,
    LayerChoice,
    ModelSpace,
    MutableConv2d,
    MutableLinear,
    Repeat,
    model_context,
    search_space,
)


class Net(ModelSpace):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.op = LayerChoice(
            {"c3": nn.Conv2d(8, 8, 3, padding=1), "c5": nn.Conv2d(8, 8, 5, padding=2)}, label="op"
        )
        self.blocks = Repeat(
            lambda i: nn.Sequential(nn.Conv2d(8, 8, 3, padding=1), nn.ReLU()), (1, 3), label="depth"
        )
        self.skip = InputChoice(2, n_chosen=1, label="skip")
        self.head = MutableConv2d(8, Categorical([8, 16], label="width"), 1)
        self.fc = MutableLinear(self.head.out_channels, 5)

    def forward(self, x):
        x = self.bn(self.stem(x))
        x = self.skip([self.op(x), self.blocks(x)])
        return self.fc(self.head(x).mean((2, 3)))


def trained(space: nn.Module) -> nn.Module:
    """Weights and BN statistics no fresh initialisation gives (as after training)."""
    g = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for p in space.parameters():
            p.copy_(torch.randn(p.shape, generator=g))
        space.bn.running_mean.copy_(torch.randn(8, generator=g))
        space.bn.running_var.copy_(torch.rand(8, generator=g) + 0.5)
    return space.eval()


def by_hand(space, x, op, depth, skip):
    """The arch's forward written with the space's own modules."""
    x = space.bn(space.stem(x))
    y = space.op[op](x)
    if skip == [1]:
        y = x
        for block in space.blocks.blocks[:depth]:
            y = block(y)
    return space.fc(space.head(y).mean((2, 3)))


def test_a_frozen_subnet_computes_what_the_spaces_modules_compute():
    torch.manual_seed(0)
    space = trained(Net())
    x = torch.randn(2, 3, 8, 8)
    for arch in [
        {"op": "c5", "depth": 2, "skip": [1], "width": 8},
        {"op": "c3", "depth": 3, "skip": [0], "width": 8},
    ]:
        model = space.freeze(arch)
        assert not model.training  # the space's mode
        with torch.no_grad():
            expected = by_hand(space, x, arch["op"], arch["depth"], arch["skip"])
            assert torch.allclose(model(x), expected, atol=1e-5), arch


def test_the_subnet_owns_copies():
    space = trained(Net())
    model = space.freeze({"op": "c5", "depth": 1, "skip": [0], "width": 8})
    assert torch.equal(model.op.weight, space.op["c5"].weight)
    with torch.no_grad():
        model.op.weight.add_(1.0)
    assert not torch.equal(model.op.weight, space.op["c5"].weight)


def test_a_layer_whose_shape_the_arch_changes_starts_afresh():
    space = trained(Net())
    model = space.freeze({"op": "c5", "depth": 1, "skip": [0], "width": 16})
    assert model.head.weight.shape == (16, 8, 1, 1)
    assert torch.equal(model.stem.weight, space.stem.weight)  # the rest is kept
    assert model(torch.randn(1, 3, 8, 8)).shape == (1, 5)


def test_freeze_is_the_rebuilt_model_with_the_spaces_weights():
    space = trained(Net())
    arch = {"op": "c3", "depth": 2, "skip": [1], "width": 8}
    with model_context(arch):
        rebuilt = Net()
    model = space.freeze(arch)
    assert type(model) is type(rebuilt)
    assert model.state_dict().keys() == rebuilt.state_dict().keys()
    assert search_space(model) == {}


def test_cell_ops_keep_the_chosen_candidates_weights():
    class CellNet(ModelSpace):
        def __init__(self):
            super().__init__()
            ops = {
                "conv": lambda node, op, inp: nn.Conv2d(4, 4, 3, padding=1),
                "pool": lambda node, op, inp: nn.AvgPool2d(3, 1, 1),
            }
            self.cell = Cell(ops, num_nodes=2, num_predecessors=1, label="cell")

        def forward(self, x):
            return self.cell(x)

    space = trained_cell = CellNet()
    with torch.no_grad():
        for p in trained_cell.parameters():
            p.mul_(3.0).add_(0.5)
    arch = {label: c.grid()[0] for label, c in search_space(space).items()}
    arch = {**arch, "cell/op_1_0": "conv", "cell/op_2_0": "conv"}
    model = space.freeze(arch)
    x = torch.randn(1, 4, 6, 6)
    with torch.no_grad():
        with model_context(arch):
            fresh = CellNet()
        assert not torch.allclose(model(x), fresh(x))
        node1 = space.cell.ops[0][0]["conv"](x)
        node2 = space.cell.ops[1][0]["conv"](x if arch["cell/input_2_0"] == [0] else node1)
        assert torch.allclose(model(x), torch.cat([node1, node2], 1), atol=1e-5)


def test_built_on_the_meta_device_nothing_is_copied():
    space = trained(Net())
    with torch.device("meta"):
        model = space.freeze({"op": "c5", "depth": 1, "skip": [0], "width": 8})
    assert all(p.is_meta for p in model.parameters())


def test_a_space_built_on_the_meta_device_gives_no_weights():
    with torch.device("meta"):
        space = Net()
    model = space.freeze({"op": "c5", "depth": 1, "skip": [0], "width": 8})
    assert not any(p.is_meta for p in model.parameters())


def test_lazy_layers_are_left_to_their_first_call():
    class Lazy(ModelSpace):
        def __init__(self):
            super().__init__()
            self.fc = nn.LazyLinear(3)
            self.act = LayerChoice([nn.ReLU(), nn.Tanh()], label="act")

        def forward(self, x):
            return self.act(self.fc(x))

    model = Lazy().freeze({"act": 1})
    assert model(torch.randn(2, 5)).shape == (2, 3)
