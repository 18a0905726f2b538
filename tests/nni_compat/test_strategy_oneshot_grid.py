"""NNI's one-shot grid through ``NasExperiment``: every one-shot strategy (DARTS, GumbelDARTS, ENAS,
RandomOneShot, Proxyless) on the model families NNI documents one-shot search for: a simple
space (LayerChoice + InputChoice), a Repeat depth, a Cell whose nodes take several inputs
(NNI's ``loose_end`` cells stacked with Repeat), value-choice layers and searched attention.

What NNI 3.0 documents: ``NasExperiment(space, evaluator, strategy).run()`` trains the supernet
and ``export_top_models()`` returns an arch dict, which rebuilds the model with
``model_context``. Value choices and attention are written both ways NNI's docs write them: the
``Categorical`` object, and ``nni.choice(label, values)`` inside the ``Mutable*`` layer (issue 32:
nasx's value remembers its choice). A space that cannot search yet would be marked
``xfail(strict=True)`` in ``NOT_YET``, so it turns into a failure to remove once it passes.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

import nasx
from nasx import strategy as strategies
from nasx.evaluator import Classification
from nasx.experiment import NasExperiment
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

STRATEGIES = ["DARTS", "GumbelDARTS", "ENAS", "RandomOneShot", "Proxyless"]


class SimpleNet(ModelSpace):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 4, 3, padding=1)
        self.conv2 = LayerChoice(
            [nn.Conv2d(4, 4, 3, padding=1), nn.Conv2d(4, 4, 5, padding=2), nn.Identity()],
            label="conv2",
        )
        self.skip = InputChoice(2, 1, label="skip")
        self.fc = nn.Linear(4, 3)

    def forward(self, x):  # [B, 1, 8, 8] -> [B, 3]
        a = F.relu(self.conv1(x))
        b = F.relu(self.conv2(a))
        return self.fc(self.skip([a, b]).mean((2, 3)))


class RepeatNet(ModelSpace):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(1, 4, 3, padding=1)
        self.blocks = Repeat(
            lambda i: LayerChoice(
                [nn.Conv2d(4, 4, 3, padding=1), nn.Conv2d(4, 4, 1)], label=f"op{i}"
            ),
            (1, 3),
            label="depth",
        )
        self.fc = nn.Linear(4, 3)

    def forward(self, x):
        return self.fc(F.relu(self.blocks(self.stem(x))).mean((2, 3)))


def _cell_op(index: int, conv: int):
    # an edge from a cell input reads the cell's input width; an edge from a node reads 4 channels
    def make(node: int, op: int, inp: int | None) -> nn.Module:
        c_in = (4 if index == 0 else 12) if inp is not None and inp < 1 else 4
        return nn.Conv2d(c_in, 4, conv, padding=conv // 2)

    return make


class CellNet(ModelSpace):
    def __init__(self, merge_op: str = "all", num_ops_per_node: int = 2):
        super().__init__()
        self.stem = nn.Conv2d(1, 4, 3, padding=1)
        self.cells = Repeat(
            lambda index: Cell(
                {"conv1": _cell_op(index, 1), "conv3": _cell_op(index, 3)},
                num_nodes=3,
                num_ops_per_node=num_ops_per_node,  # 2: nodes take several inputs
                merge_op=merge_op,
                label=f"cell{index}",
            ),
            (1, 2),
            label="cells",
        )
        self.fc = nn.Linear(12, 3)

    def forward(self, x):
        return self.fc(self.cells(self.stem(x)).mean((2, 3)))


class ValueChoiceNet(ModelSpace):
    def __init__(self):
        super().__init__()
        width = Categorical([4, 8], label="width")
        self.conv = MutableConv2d(1, width, 3, padding=1)
        self.fc = MutableLinear(width, 3)  # the same choice sizes both layers, as in NNI's tests

    def forward(self, x):
        return self.fc(F.relu(self.conv(x)).mean((2, 3)))


class NniValueChoiceNet(ModelSpace):
    """NNI's spelling: ``nni.choice`` inside the layers (one label, asked for twice)."""

    def __init__(self):
        super().__init__()
        self.conv = MutableConv2d(1, nasx.choice("width", [4, 8]), 3, padding=1)
        self.fc = MutableLinear(nasx.choice("width", [4, 8]), 3)

    def forward(self, x):
        return self.fc(F.relu(self.conv(x)).mean((2, 3)))


def _nni_attention_net():
    from nasx.space import MutableMultiheadAttention

    class NniAttentionNet(ModelSpace):
        """A searched embedding width and head count, NNI's spelling."""

        def __init__(self):
            super().__init__()
            embed = nasx.choice("embed", [4, 8])
            self.embed = MutableLinear(8, embed)
            self.attn = MutableMultiheadAttention(embed, nasx.choice("heads", [1, 2]))
            self.fc = MutableLinear(embed, 3)

        def forward(self, x):  # [B, 1, 8, 8]: 8 tokens of 8 features
            h = self.embed(x.squeeze(1))
            return self.fc(self.attn(h, h, h)[0].mean(1))

    return NniAttentionNet()


def _attention_net():
    from nasx.space import MutableMultiheadAttention  # NNI's searched attention (space half)

    class AttentionNet(ModelSpace):
        def __init__(self):
            super().__init__()
            self.embed = nn.Linear(8, 8)
            self.attn = MutableMultiheadAttention(8, Categorical([1, 2], label="heads"))
            self.fc = nn.Linear(8, 3)

        def forward(self, x):  # [B, 1, 8, 8]: 8 tokens of 8 features
            h = self.embed(x.squeeze(1))
            return self.fc(self.attn(h, h, h)[0].mean(1))

    return AttentionNet()


SPACES = {
    "simple": SimpleNet,
    "repeat": RepeatNet,
    "cell": CellNet,
    # NNI's own one-shot test cell: loose ends, stacked. Its rebuilt model is as wide as the arch
    # leaves loose ends (the layers after it are not), so only the search and export are checked.
    # RandomOneShot crashed on it with a channel mismatch in mixed_cell until commit 63f9140.
    "cell_loose_end": lambda: CellNet("loose_end", 1),
    "value_choice": ValueChoiceNet,
    "attention": _attention_net,
    "value_choice_nni": NniValueChoiceNet,
    "attention_nni": _nni_attention_net,
}
NOT_YET: dict[str, str] = {}  # attention: weight sharing over num_heads (mixed_attention.py)


def _evaluator():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(64, 1, 8, 8, generator=g)
    y = (x.mean((1, 2, 3)) > 0).long() + (x[:, 0, 0, 0] > 1).long()
    data = DataLoader(TensorDataset(x, y), batch_size=16)
    return Classification(
        train_dataloaders=data,
        val_dataloaders=data,
        max_epochs=1,
        limit_train_batches=2,
        limit_val_batches=1,
        accelerator="cpu",
        enable_progress_bar=False,
        logger=False,
    )


def _grid():
    for space in SPACES:
        for name in STRATEGIES:
            marks = (
                [pytest.mark.xfail(strict=True, reason=NOT_YET[space])] if space in NOT_YET else []
            )
            yield pytest.param(space, name, marks=marks, id=f"{name}-{space}")


@pytest.mark.parametrize("space, name", list(_grid()))
def test_one_shot_strategy_searches_space_through_nas_experiment(space, name, tmp_path):
    torch.manual_seed(0)
    model_space = SPACES[space]()
    labels = list(search_space(model_space))
    experiment = NasExperiment(
        model_space, _evaluator(), getattr(strategies, name)(), workdir=tmp_path
    )
    experiment.run()
    arch = experiment.export_top_models()[0]
    assert sorted(arch) == sorted(labels)
    if space == "cell_loose_end":
        return
    with model_context(arch):
        model = SPACES[space]()
    assert model(torch.randn(2, 1, 8, 8)).shape == (2, 3)
