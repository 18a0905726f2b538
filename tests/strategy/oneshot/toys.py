"""Shared test fixtures for one-shot tests: toy spaces with one clearly right candidate, and a
Lightning evaluator (the real ``nasx.evaluator.Classification`` when present, else a stand-in
with the same contract)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytorch_lightning as pl
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

from nasx.space import InputChoice, LayerChoice, ModelSpace

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "tutorials"))
from darts_space import DartsLikeSpace  # noqa: E402, F401  (tutorials/darts_space.py, for the tests)

FAST_TRAINER = dict(
    max_epochs=1,
    enable_progress_bar=False,
    logger=False,
    enable_checkpointing=False,
    enable_model_summary=False,
    accelerator="cpu",
    devices=1,
    num_sanity_val_steps=0,
)


class Noise(nn.Module):
    """A useless candidate: random features that ignore the input."""

    def __init__(self, d_out: int):
        super().__init__()
        self.d_out = d_out

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.randn(x.shape[0], self.d_out, device=x.device)


class Zero(nn.Module):
    def __init__(self, d_out: int):
        super().__init__()
        self.d_out = d_out

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.new_zeros(x.shape[0], self.d_out)


class ToySpace(ModelSpace):
    """x [B, 8] -> class of argmax(W* x). Only 'linear' can see the input; only input 0 is x."""

    def __init__(self):
        super().__init__()
        self.op = LayerChoice(
            {"noise": Noise(16), "zero": Zero(16), "linear": nn.Linear(8, 16)}, label="op"
        )
        self.pick = InputChoice(2, 1, label="pick")
        self.head = nn.Linear(16, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.op(x)
        return self.head(self.pick([torch.randn_like(h), h]))


TOY_RIGHT = {"op": "linear", "pick": [1]}


def toy_data(n: int = 512, seed: int = 0) -> TensorDataset:
    g = torch.Generator().manual_seed(seed)
    w = torch.randn(8, 3, generator=g)
    x = torch.randn(n, 8, generator=g)
    return TensorDataset(x, (x @ w).argmax(1))


class StandInModule(pl.LightningModule):
    """The evaluator contract's module: criterion, metric logging, optimizer config."""

    def __init__(self, learning_rate: float = 1e-2):
        super().__init__()
        self.criterion = nn.CrossEntropyLoss()
        self.learning_rate = learning_rate
        self.model = None

    def set_model(self, model: nn.Module) -> None:
        self.model = model

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = self.criterion(self.model(x), y)
        self.log("train_loss", loss)
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        logits = self.model(x)
        self.log("val_loss", self.criterion(logits, y))
        self.log("val_acc", (logits.argmax(1) == y).float().mean())

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=self.learning_rate)


class StandInTrainer:
    def __init__(self, **kwargs):
        self.kwargs = kwargs

    def build(self, **overrides):
        return pl.Trainer(**{**self.kwargs, **overrides})


class StandInClassification:
    """Same attributes as the contract's ``Classification`` (used until branch ``eval`` lands)."""

    direction = "maximize"

    def __init__(
        self,
        learning_rate=1e-2,
        train_dataloaders=None,
        val_dataloaders=None,
        datamodule=None,
        **trainer_kwargs,
    ):
        self.module = StandInModule(learning_rate)
        self.trainer = StandInTrainer(**trainer_kwargs)
        self.train_dataloaders, self.val_dataloaders, self.datamodule = (
            train_dataloaders,
            val_dataloaders,
            datamodule,
        )


def classification(**kwargs):
    """``nasx.evaluator.Classification`` when branch ``eval`` has landed, else the stand-in."""
    try:
        from nasx.evaluator import Classification
    except ImportError:
        return StandInClassification(**kwargs)
    return Classification(**kwargs)


def toy_evaluator(
    epochs: int = 1, lr: float = 1e-2, split: bool = False, batch_size: int = 32, **extra
):
    train = DataLoader(toy_data(512, 0), batch_size=batch_size, shuffle=True)
    val = None if split else DataLoader(toy_data(256, 0), batch_size=batch_size, shuffle=True)
    kwargs = {**FAST_TRAINER, "max_epochs": epochs, **extra}
    return classification(learning_rate=lr, train_dataloaders=train, val_dataloaders=val, **kwargs)
