"""A one-shot checkpoint records the evaluator's settings: a resume with another learning rate or
batch size is refused, naming the setting; more epochs are allowed (that is how a search goes
on); a checkpoint written before nasx recorded them still resumes."""

from __future__ import annotations

import logging

import pytest
import torch

from nasx.strategy import DARTS
from nasx.strategy.oneshot.checkpoint import CheckpointError

from .toys import ToySpace, toy_evaluator


@pytest.fixture
def one_epoch(tmp_path):
    torch.manual_seed(0)
    DARTS().run(ToySpace(), toy_evaluator(epochs=1), workdir=tmp_path)
    return tmp_path


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"lr": 0.5}, "evaluator setting 'learning_rate': was 0.01, now 0.5"),
        ({"batch_size": 16}, "evaluator setting 'train_dataloaders.batch_size': was 32, now 16"),
    ],
)
def test_a_resume_with_other_evaluator_settings_is_refused(one_epoch, change, message):
    last = one_epoch / "checkpoints" / "last.ckpt"
    before = last.read_bytes()
    with pytest.raises(CheckpointError, match="another search") as err:
        DARTS().run(ToySpace(), toy_evaluator(epochs=2, **change), workdir=one_epoch)
    assert message in str(err.value)
    assert last.read_bytes() == before


def test_more_epochs_and_a_checkpoint_without_evaluator_settings_resume(one_epoch, caplog):
    last = one_epoch / "checkpoints" / "last.ckpt"
    ckpt = torch.load(last, map_location="cpu", weights_only=True)
    assert ckpt["nasx_identity"]["evaluator"]["learning_rate"] == 0.01
    del ckpt["nasx_identity"]["evaluator"]  # as written before this change
    torch.save(ckpt, last)
    with caplog.at_level(logging.INFO, logger="nasx"):
        DARTS().run(ToySpace(), toy_evaluator(epochs=2, lr=0.5), workdir=one_epoch)
    assert "resuming one-shot search from" in caplog.text  # not started afresh
    done = torch.load(last, map_location="cpu", weights_only=True)
    assert done["nasx_identity"]["evaluator"]["learning_rate"] == 0.5
