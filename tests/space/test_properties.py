"""Property tests: any arch of a few spaces rebuilds into a working model with no choices left."""

import torch
import torch.nn as nn
from hypothesis import given, settings
from hypothesis import strategies as st

from nasx.space import (
    Cell,
    InputChoice,
    LayerChoice,
    ModelSpace,
    MutableModule,
    Repeat,
    choice,
    search_space,
)


class MLPSpace(ModelSpace):
    def __init__(self):
        super().__init__()
        hidden = choice("hidden", [4, 8, 16])
        self.inp = nn.Linear(6, hidden)
        self.body = Repeat(
            lambda i: LayerChoice(
                [
                    nn.Sequential(nn.Linear(hidden, hidden), nn.ReLU()),
                    nn.Sequential(nn.Linear(hidden, hidden), nn.Tanh()),
                    nn.Identity(),
                ],
                label=f"layer{i}",
            ),
            (0, 3),
            label="depth",
        )
        self.skip = InputChoice(2, n_chosen=None, reduction="sum", label="skip")
        self.out = nn.Linear(hidden, 3)

    def forward(self, x):
        h = self.inp(x)
        return self.out(self.skip([h, self.body(h)]))


class CellSpace(ModelSpace):
    def __init__(self):
        super().__init__()
        ops = {
            "conv": lambda n, o, i: nn.Conv2d(4, 4, 3, padding=1),
            "pool": lambda n, o, i: nn.MaxPool2d(3, 1, 1),
            "skip": lambda n, o, i: nn.Identity(),
        }
        self.stem = nn.Conv2d(3, 4, 1)
        self.cell = Cell(
            ops,
            num_nodes=3,
            num_ops_per_node=2,
            num_predecessors=2,
            merge_op=choice("merge", ["all", "loose_end"]),
            label="cell",
        )
        self.head = nn.LazyLinear(5)

    def forward(self, x):
        s = self.stem(x)
        return self.head(self.cell(s, s).mean((2, 3)))


def _arch_strategy(space):
    labels = list(search_space(space).items())
    return st.fixed_dictionaries({label: st.sampled_from(c.grid()) for label, c in labels})


@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_random_archs_rebuild_and_run(data):
    for space_cls, x in ((MLPSpace, torch.randn(2, 6)), (CellSpace, torch.randn(2, 3, 6, 6))):
        space = space_cls()
        arch = data.draw(_arch_strategy(space))
        model = space.freeze(arch)
        out = model(x)
        assert out.shape[0] == 2 and torch.isfinite(out).all()
        assert search_space(model) == {}
        assert not any(
            isinstance(m, (MutableModule, LayerChoice, InputChoice, Repeat))
            for m in model.modules()
        )
