"""Checkpoint: a trial's training state between budgets. The file is written atomically, and
nasx's Lightning evaluators continue from it: a training paused at b epochs and continued to B
trains B - b epochs, reports only those, and ends with exactly the weights of an uninterrupted
B-epoch training (same data order and dropout masks: the random generators are restored)."""

from __future__ import annotations

import os

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

from nasx.evaluator import Classification, Lightning, LightningModule, Trainer
from nasx.evaluator.checkpoint import Checkpoint, restore_rng_state, rng_state, saved_budgets


def test_a_state_saved_at_a_budget_is_what_a_continuation_from_it_loads(tmp_path):
    folder = str(tmp_path / "checkpoint")
    first = Checkpoint(folder, from_budget=0, budget=3)
    assert first.resume_path is None and first.load() is None
    first.save({"epoch": 3, "w": torch.arange(4.0)})
    second = Checkpoint(folder, from_budget=3, budget=9)
    state = second.load()
    assert state["epoch"] == 3 and torch.equal(state["w"], torch.arange(4.0))
    assert saved_budgets(folder) == [3]
    # 3.0 and 3 are the same budget; a fractional one keeps its own name
    Checkpoint(folder, budget=0.5).save({})
    assert Checkpoint(folder, from_budget=3.0).resume_path == second.resume_path
    assert saved_budgets(folder) == [0.5, 3]


def test_nothing_is_written_where_nothing_will_continue(tmp_path):
    Checkpoint(str(tmp_path), budget=9, keep=False).save({"epoch": 9})
    Checkpoint(str(tmp_path)).save({"epoch": 9})  # no budget: not a state at any budget
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("interruption", [OSError("disk full"), KeyboardInterrupt()])
def test_a_write_that_dies_midway_leaves_the_earlier_state_whole(tmp_path, interruption):
    folder = str(tmp_path)
    Checkpoint(folder, budget=3).save({"epoch": 3})
    before = (tmp_path / "budget-3.pt").read_bytes()

    def dies_midway(path):
        with open(path, "wb") as f:
            f.write(b"half a checkpoint")
        raise interruption

    # the continuation 3 -> 9 rewriting the same name (as a restarted job may) dies writing
    with pytest.raises(type(interruption)):
        Checkpoint(folder, from_budget=3, budget=3).write(dies_midway)
    assert (tmp_path / "budget-3.pt").read_bytes() == before
    assert os.listdir(folder) == ["budget-3.pt"]  # no temporary file left by an exception
    assert Checkpoint(folder, from_budget=3, budget=9).load() == {"epoch": 3}


def test_a_temporary_file_left_by_a_killed_write_is_no_state(tmp_path):
    (tmp_path / "budget-9.pt.4242.tmp").write_bytes(b"half")
    Checkpoint(str(tmp_path), budget=3).save({})
    assert saved_budgets(tmp_path) == [3]


def test_the_random_generators_come_back_to_where_they_were():
    import random

    import numpy as np

    state = rng_state()
    drawn = (random.random(), np.random.rand(), torch.rand(1).item())
    restore_rng_state(state)
    assert (random.random(), np.random.rand(), torch.rand(1).item()) == drawn


# ------------------------------------------------------------------- Lightning continues
def _data():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(64, 3, generator=g)
    y = (x.sum(dim=1) > 0).long()
    # shuffled: the data order of each epoch is drawn from torch's generator
    return DataLoader(TensorDataset(x, y), batch_size=16, shuffle=True), DataLoader(
        TensorDataset(x, y), batch_size=32
    )


def _net(seed):
    torch.manual_seed(seed)  # a continued trial's model starts from other weights: loaded over
    return nn.Sequential(nn.Linear(3, 16), nn.ReLU(), nn.Dropout(0.3), nn.Linear(16, 2))


class _Module(LightningModule):
    """SGD with momentum and a step LR schedule: both states must come back."""

    metric_name = "val_loss"
    direction = "minimize"

    def training_step(self, batch, batch_idx):
        x, y = batch
        return F.cross_entropy(self(x), y)

    def validation_step(self, batch, batch_idx):
        x, y = batch
        self.log("val_loss", F.cross_entropy(self(x), y))

    def configure_optimizers(self):
        opt = torch.optim.SGD(self.parameters(), lr=0.2, momentum=0.9)
        return [opt], [torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)]


class _CountSteps:
    """Counts the training batches a fit runs (a callback), across the trainers built."""

    def __init__(self):
        import pytorch_lightning as pl

        counter = self

        class Count(pl.Callback):
            def on_train_batch_end(self, *args):
                counter.steps += 1

        self.steps, self.callback = 0, Count()


def _lightning(steps=None):
    train, val = _data()
    callbacks = [] if steps is None else [steps.callback]
    trainer = Trainer(max_epochs=9, accelerator="cpu", callbacks=callbacks)
    return Lightning(_Module(), trainer, train, val)


def _weights(model):
    return [p.detach().clone() for p in model.state_dict().values()]


def test_lightning_continues_from_b_to_B_as_if_never_paused(tmp_path):
    whole, whole_reports = _net(0), []
    torch.manual_seed(100)  # what run_trial's seed does before each job
    _lightning().evaluate(whole, report=whole_reports.append, budget=5)

    folder = str(tmp_path / "checkpoint")
    paused, first = _net(0), []
    torch.manual_seed(100)
    _lightning().evaluate(
        paused, report=first.append, budget=2, checkpoint=Checkpoint(folder, 0, 2)
    )
    assert saved_budgets(folder) == [2]

    steps, second = _CountSteps(), []
    continued = _net(1)
    torch.manual_seed(100)  # the promoted job is seeded as the first one was
    metric = _lightning(steps).evaluate(
        continued, report=second.append, budget=5, checkpoint=Checkpoint(folder, 2, 5)
    )
    assert steps.steps == (5 - 2) * 4  # 3 epochs of 4 batches, not 5 epochs
    assert len(second) == 3  # reports for epochs 3, 4 and 5 only
    assert first + second == pytest.approx(whole_reports, abs=0)
    assert metric == second[-1]
    for got, want in zip(_weights(continued), _weights(whole), strict=True):
        assert torch.equal(got, want)
    assert saved_budgets(folder) == [2, 5]  # the experiment, not the evaluator, tidies


def test_classification_continues_with_its_optimizer_state(tmp_path):
    train, val = _data()

    def evaluator():
        return Classification(
            learning_rate=0.05, train_dataloaders=train, val_dataloaders=val, accelerator="cpu"
        )

    whole = _net(0)
    torch.manual_seed(7)
    want = evaluator().evaluate(whole, budget=3)
    folder = str(tmp_path)
    paused = _net(0)
    torch.manual_seed(7)
    evaluator().evaluate(paused, budget=1, checkpoint=Checkpoint(folder, 0, 1))
    continued, reports = _net(5), []
    torch.manual_seed(7)
    got = evaluator().evaluate(
        continued, report=reports.append, budget=3, checkpoint=Checkpoint(folder, 1, 3)
    )
    assert (got, len(reports)) == (want, 2)
    for a, b in zip(_weights(continued), _weights(whole), strict=True):
        assert torch.equal(a, b)  # Adam's moments came back with the weights


def test_lightning_refuses_a_budget_not_beyond_the_checkpoint(tmp_path):
    ev = _lightning()
    ev.evaluate(_net(0), budget=2, checkpoint=Checkpoint(str(tmp_path), 0, 2))
    with pytest.raises(ValueError, match="must be larger than the one the checkpoint was saved"):
        ev.evaluate(_net(0), budget=2, checkpoint=Checkpoint(str(tmp_path), 2, 2))


def test_a_training_stopped_early_saves_no_state_at_the_budget(tmp_path):
    from pytorch_lightning.callbacks import EarlyStopping

    train, val = _data()
    stop = EarlyStopping("val_loss", patience=0, stopping_threshold=100.0)  # stops after epoch 1
    ev = Lightning(_Module(), Trainer(accelerator="cpu", callbacks=[stop]), train, val)
    ev.evaluate(_net(0), budget=3, checkpoint=Checkpoint(str(tmp_path), 0, 3))
    assert saved_budgets(tmp_path) == []  # a state at 1 epoch is not one at 3


class _WithObjectHparams(_Module):
    """Hyperparameters holding a class: torch.load(weights_only=True) refuses such objects."""

    def __init__(self, criterion=nn.CrossEntropyLoss):
        super().__init__()
        self.save_hyperparameters()


def test_a_module_with_arbitrary_hyperparameters_continues_too(tmp_path):
    train, val = _data()
    ev = Lightning(_WithObjectHparams(), Trainer(accelerator="cpu"), train, val)
    ev.evaluate(_net(0), budget=1, checkpoint=Checkpoint(str(tmp_path), 0, 1))
    saved = torch.load(tmp_path / "budget-1.pt", weights_only=True)  # readable as it is
    assert "hyper_parameters" not in saved and "callbacks" in saved
    reports = []
    ev.evaluate(
        _net(0), report=reports.append, budget=2, checkpoint=Checkpoint(str(tmp_path), 1, 2)
    )
    assert len(reports) == 1
