"""A trained-in-place evaluator for the keep_weights tests (importable: worker processes and the
new process that loads a model use it too)."""

from __future__ import annotations

import torch
import torch.nn.functional as F


def regression_data(n: int = 32, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """A fixed regression task on 4 features (the same tensors in every process)."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 4, generator=g)
    return x, (x[:, :1] * 2.0 - x[:, 1:2]).tanh()


def val_loss(model: torch.nn.Module) -> float:
    """The metric: mean squared error of ``model`` on the validation set, in eval mode."""
    x, y = regression_data(seed=1)
    model.eval()
    with torch.no_grad():
        return float(F.mse_loss(model(x), y))


class TrainThenScore:
    """Trains the model it is given in place (SGD on the training set), then returns its
    validation loss (minimized), as nasx's Lightning evaluators do."""

    direction = "minimize"

    def __init__(self, steps: int = 20):
        self.steps = steps

    def evaluate(self, model, report=None):
        x, y = regression_data(seed=0)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        model.train()
        for _ in range(self.steps):
            opt.zero_grad()
            F.mse_loss(model(x), y).backward()
            opt.step()
        return val_loss(model)
