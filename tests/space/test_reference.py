"""A space rebuilt under model_context equals the hand-written model it stands for."""

import torch
import torch.nn as nn

from nasx.space import (
    Categorical,
    Cell,
    InputChoice,
    LayerChoice,
    ModelSpace,
    MutableConv2d,
    Repeat,
    model_context,
    search_space,
)

OPS = {
    "conv3": lambda node, op, inp: nn.Conv2d(8, 8, 3, padding=1, bias=False),
    "pool": lambda node, op, inp: nn.AvgPool2d(3, 1, 1),
    "skip": lambda node, op, inp: nn.Identity(),
}


class ConvNetSpace(ModelSpace):
    def __init__(self):
        super().__init__()
        self.stem = MutableConv2d(
            1,
            8,
            Categorical([3, 5], label="stem_kernel"),
            padding=Categorical([1, 2], label="stem_pad"),
        )
        self.act = LayerChoice({"relu": nn.ReLU(), "gelu": nn.GELU()}, label="act")
        self.blocks = Repeat(
            lambda i: nn.Sequential(nn.Conv2d(8, 8, 3, padding=1), nn.ReLU()), (1, 3), label="depth"
        )
        self.cell = Cell(OPS, num_nodes=2, num_predecessors=2, label="cell")
        self.skip = InputChoice(2, label="skip")
        self.head = nn.Linear(16, 10)

    def forward(self, x):
        stem = self.act(self.stem(x))
        body = self.blocks(stem)
        y = self.cell(stem, body)  # 2 nodes of 8 channels, concatenated
        y = self.skip([y, torch.cat([body, body], 1)])
        return self.head(y.mean((2, 3)))


class HandWritten(nn.Module):
    """What ConvNetSpace means for ARCH, written without nasx."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(1, 8, 5, padding=2)
        self.act = nn.GELU()
        self.blocks = nn.Sequential(
            *[nn.Sequential(nn.Conv2d(8, 8, 3, padding=1), nn.ReLU()) for _ in range(2)]
        )
        self.conv_node3 = nn.Conv2d(8, 8, 3, padding=1, bias=False)
        self.pool = nn.AvgPool2d(3, 1, 1)
        self.head = nn.Linear(16, 10)

    def forward(self, x):
        stem = self.act(self.stem(x))
        body = self.blocks(stem)
        node2 = self.pool(body)  # op_2_0 = pool, input_2_0 = [1]
        node3 = self.conv_node3(node2)  # op_3_0 = conv3, input_3_0 = [2]
        y = torch.cat([node2, node3], 1)  # skip = [0]: the cell's output
        return self.head(y.mean((2, 3)))


ARCH = {
    "stem_kernel": 5,
    "stem_pad": 2,
    "act": "gelu",
    "depth": 2,
    "cell/op_2_0": "pool",
    "cell/input_2_0": [1],
    "cell/op_3_0": "conv3",
    "cell/input_3_0": [2],
    "skip": [0],
}


def _copy_weights(model: nn.Module, ref: nn.Module) -> None:
    ref.stem.load_state_dict(model.stem.state_dict())
    ref.blocks.load_state_dict(model.blocks.state_dict())
    ref.conv_node3.load_state_dict(model.cell.ops[1][0].state_dict())
    ref.head.load_state_dict(model.head.state_dict())


def test_rebuilt_model_matches_hand_written_outputs_and_parameter_count():
    assert set(search_space(ConvNetSpace())) == set(ARCH)
    with model_context(ARCH):
        model = ConvNetSpace()
    ref = HandWritten()
    _copy_weights(model, ref)
    n_params = sum(p.numel() for p in model.parameters())
    assert n_params == sum(p.numel() for p in ref.parameters())
    x = torch.randn(2, 1, 12, 12)
    torch.testing.assert_close(model(x), ref(x))


def test_rebuilt_model_trains_like_a_plain_model():
    torch.manual_seed(0)  # before building: the initial weights must not depend on earlier tests
    model = ConvNetSpace().freeze(ARCH)
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    x, y = torch.randn(8, 1, 8, 8), torch.randint(0, 10, (8,))
    losses = []
    for _ in range(40):
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0] * 0.5


def test_rebuilt_model_exports():
    model = ConvNetSpace().freeze(ARCH).eval()
    x = torch.randn(1, 1, 12, 12)
    exported = torch.export.export(model, (x,))
    torch.testing.assert_close(exported.module()(x), model(x))


class Scriptable(ModelSpace):
    def __init__(self):
        super().__init__()
        self.body = Repeat(
            lambda i: LayerChoice(
                [nn.Linear(4, 4), nn.Sequential(nn.Linear(4, 4), nn.ReLU())], label=f"b{i}"
            ),
            (1, 2),
            label="depth",
        )
        self.pick = InputChoice(2, label="pick")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.pick([x, self.body(x)])


def test_rebuilt_model_scripts_with_torchscript():
    model = Scriptable().freeze({"depth": 2, "b0": 1, "b1": 0, "pick": [1]}).eval()
    scripted = torch.jit.script(model)
    x = torch.randn(3, 4)
    torch.testing.assert_close(scripted(x), model(x))
