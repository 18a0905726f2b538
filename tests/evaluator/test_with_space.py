"""End to end with nasx.space: archs rebuilt under model_context, ranked by Classification."""

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

from nasx.evaluator import Classification, FunctionalEvaluator, normalize_metric
from nasx.space import LayerChoice, ModelSpace, model_context, search_space


class XorSpace(ModelSpace):
    """A linear classifier or a small MLP: only the MLP can separate XOR."""

    def __init__(self):
        super().__init__()
        self.body = LayerChoice(
            {
                "linear": nn.Linear(2, 2),
                "mlp": nn.Sequential(nn.Linear(2, 16), nn.ReLU(), nn.Linear(16, 2)),
            },
            label="body",
        )

    def forward(self, x):
        return self.body(x)


def _xor(n, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.rand(n, 2, generator=g) * 2 - 1  # uniform in [-1, 1]^2
    y = ((x[:, 0] > 0) ^ (x[:, 1] > 0)).long()  # quadrants: XOR of the signs
    return TensorDataset(x, y)


def test_classification_ranks_archs_as_expected():
    space = search_space(XorSpace())
    train = DataLoader(_xor(512, 0), batch_size=32, shuffle=True)
    val = DataLoader(_xor(256, 1), batch_size=128)
    ev = Classification(
        learning_rate=0.05, train_dataloaders=train, val_dataloaders=val, max_epochs=6
    )
    scores = {}
    for arch in space.grid():
        torch.manual_seed(0)
        with model_context(arch):
            model = XorSpace()
        assert search_space(model) == {}
        scores[arch["body"]], _ = normalize_metric(ev.evaluate(model))
    # a linear boundary gets at most 3 of the 4 XOR quadrants right
    assert scores["linear"] < 0.8 < 0.9 < scores["mlp"]


def test_functional_evaluator_sees_the_built_model():
    def n_params(model):
        return float(sum(p.numel() for p in model.parameters()))

    ev = FunctionalEvaluator(n_params)
    sizes = {}
    for arch in search_space(XorSpace()).grid():
        with model_context(arch):
            sizes[arch["body"]] = ev.evaluate(XorSpace())
    # linear: 2*2+2 = 6; mlp: (2*16+16) + (16*2+2) = 82
    assert sizes == {"linear": 6.0, "mlp": 82.0}
