"""The DARTS retraining recipe: auxiliary loss, drop-path schedule, cosine LR, gradient clipping."""

from __future__ import annotations

import dataclasses
import math

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

from nasx.evaluator.recipes import (
    DartsRecipe,
    DartsRetrainModule,
    darts_retrain_evaluator,
    drop_path_prob_at,
)

FAST = dict(accelerator="cpu", devices=1, enable_progress_bar=False, logger=False)


class AuxNet(nn.Module):
    """Returns (logits, aux_logits) in training, logits in eval (as the hub's cell spaces do)."""

    def __init__(self):
        super().__init__()
        self.main, self.aux = nn.Linear(4, 3), nn.Linear(4, 3)
        self.drop_path_probs: list[float] = []

    def forward(self, x):
        return (self.main(x), self.aux(x)) if self.training else self.main(x)

    def set_drop_path_prob(self, p):
        self.drop_path_probs.append(p)


def _data(n=16):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(n, 4, generator=g)
    return DataLoader(TensorDataset(x, (x[:, 0] > 0).long()), batch_size=8)


def test_loss_adds_the_auxiliary_head_weighted():
    m = DartsRetrainModule(auxiliary_loss_weight=0.4)
    m.set_model(AuxNet())
    m.log = lambda *a, **k: None  # outside a trainer
    x, y = next(iter(_data()))
    main, aux = m.model(x)
    expected = F.cross_entropy(main, y) + 0.4 * F.cross_entropy(aux, y)
    torch.testing.assert_close(m.training_step((x, y), 0), expected)


def test_drop_path_rises_linearly_over_a_fit():
    recipe = dataclasses.replace(DartsRecipe(), max_epochs=4, learning_rate=0.1, drop_path_prob=0.2)
    ev = darts_retrain_evaluator(_data(), _data(), recipe=recipe, **FAST)
    model = AuxNet()
    assert 0.0 <= ev.fit(model) <= 1.0  # NNI's evaluator.fit, with validation data: val_acc
    # DARTS: drop_path_prob * epoch / epochs, for epochs 0..3
    assert model.drop_path_probs == pytest.approx([0.0, 0.05, 0.1, 0.15])
    assert drop_path_prob_at(600, 600, 0.2) == pytest.approx(0.2)


def test_cosine_schedule_matches_the_formula():
    m = DartsRetrainModule(learning_rate=0.1, max_epochs=4, eta_min=0.0)
    m.set_model(nn.Linear(4, 3))
    conf = m.configure_optimizers()
    opt, sched = conf["optimizer"], conf["lr_scheduler"]
    assert opt.param_groups[0]["momentum"] == 0.9 and opt.param_groups[0]["weight_decay"] == 3e-4
    for epoch in range(4):
        assert opt.param_groups[0]["lr"] == pytest.approx(
            0.1 * (1 + math.cos(math.pi * epoch / 4)) / 2
        )
        opt.step()
        sched.step()


def test_trainer_clips_gradients_and_overrides_win():
    ev = darts_retrain_evaluator(_data(), recipe=DartsRecipe(), **FAST)
    trainer = ev.trainer.build()
    assert trainer.gradient_clip_val == 5.0 and trainer.max_epochs == 600
    assert darts_retrain_evaluator(_data(), max_epochs=3, **FAST).trainer.build().max_epochs == 3


def test_bad_recipe_values_are_refused():
    with pytest.raises(ValueError, match="drop_path_prob"):
        DartsRetrainModule(drop_path_prob=1.0)
    with pytest.raises(ValueError, match="max_epochs"):
        drop_path_prob_at(0, 0, 0.2)
