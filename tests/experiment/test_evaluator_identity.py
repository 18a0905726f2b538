"""The evaluator's settings belong to the experiment's identity: a resume with another learning
rate, epoch count or batch size is refused, naming the setting; ``resume="force"`` accepts it."""

from __future__ import annotations

import pytest
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

from nasx.evaluator import Classification
from nasx.experiment import ExperimentDirError, NasExperiment, TrialStore, load_trials
from nasx.strategy import GridSearch

from .helpers import SmallNet


class TwoClassNet(SmallNet):
    """SmallNet with two logits, for :class:`Classification`."""

    def __init__(self) -> None:
        super().__init__()
        self.fc2 = nn.Linear(self.fc1.out_features, 2)


def _loader(batch_size: int = 8) -> DataLoader:
    x = torch.randn(16, 4, generator=torch.Generator().manual_seed(0))
    return DataLoader(TensorDataset(x, (x[:, 0] > 0).long()), batch_size=batch_size)


def _classification(learning_rate: float = 1e-3, max_epochs: int = 1, batch_size: int = 8):
    return Classification(
        learning_rate=learning_rate,
        train_dataloaders=_loader(batch_size),
        val_dataloaders=_loader(batch_size),
        max_epochs=max_epochs,
        accelerator="cpu",
        enable_progress_bar=False,
        enable_model_summary=False,
        logger=False,
        enable_checkpointing=False,
    )


def _experiment(workdir, evaluator, resume=True, max_trials=1):
    return NasExperiment(
        TwoClassNet(),
        evaluator,
        GridSearch(shuffle=False),
        workdir=workdir,
        max_trials=max_trials,
        resume=resume,
        progress=False,
    )


@pytest.fixture(scope="module")
def one_trial(tmp_path_factory):
    """A workdir holding one trial trained with learning_rate=1e-3, 1 epoch, batches of 8."""
    workdir = tmp_path_factory.mktemp("lr")
    _experiment(workdir, _classification(), resume=False).run()
    return workdir


@pytest.mark.parametrize(
    ("change", "setting", "was", "now"),
    [
        ({"learning_rate": 0.5}, "learning_rate", "0.001", "0.5"),
        ({"max_epochs": 3}, "max_epochs", "1", "3"),
        ({"batch_size": 4}, "train_dataloaders.batch_size", "8", "4"),
    ],
)
def test_resume_with_other_evaluator_settings_is_refused(one_trial, change, setting, was, now):
    before = load_trials(one_trial)
    with pytest.raises(ExperimentDirError) as err:
        _experiment(one_trial, _classification(**change)).run()
    assert f"evaluator setting '{setting}': was {was}, now {now}" in str(err.value)
    assert 'resume="force"' in str(err.value)
    assert load_trials(one_trial) == before


def test_resume_with_the_same_evaluator_settings_runs_on(one_trial, tmp_path):
    import shutil

    workdir = tmp_path / "copy"
    shutil.copytree(one_trial, workdir)
    _experiment(workdir, _classification(), max_trials=2).run()
    assert [t.id for t in load_trials(workdir)] == [0, 1]


def test_force_resumes_with_other_settings_and_stores_them(one_trial, tmp_path):
    import shutil

    workdir = tmp_path / "copy"
    shutil.copytree(one_trial, workdir)
    exp = _experiment(workdir, _classification(learning_rate=0.5), max_trials=2)
    exp.resume = "force"
    exp.run()
    assert [t.id for t in load_trials(workdir)] == [0, 1]
    # From then on the new settings are the experiment's: a plain resume with them runs on.
    _experiment(workdir, _classification(learning_rate=0.5), max_trials=3).run()
    assert len(load_trials(workdir)) == 3
    with pytest.raises(ExperimentDirError, match="'learning_rate': was 0.5, now 0.001"):
        _experiment(workdir, _classification(), max_trials=4).run()


def test_force_never_accepts_another_space(one_trial):
    class OtherNet(TwoClassNet):
        pass

    with pytest.raises(ExperimentDirError, match="space class") as err:
        NasExperiment(
            OtherNet(),
            _classification(),
            GridSearch(shuffle=False),
            workdir=one_trial,
            max_trials=2,
            resume="force",
            progress=False,
        ).run()
    assert 'resume="force"' not in str(err.value)


def test_resume_refuses_an_unknown_resume_value(tmp_path):
    with pytest.raises(ValueError, match="resume must be True, False or 'force', got 'yes'"):
        _experiment(tmp_path, _classification(), resume="yes")


def test_a_workdir_written_before_evaluator_settings_were_recorded_still_resumes(
    one_trial, tmp_path
):
    # What nasx stored before: the Classification's plain attributes only.
    import shutil

    workdir = tmp_path / "old"
    shutil.copytree(one_trial, workdir)
    store = TrialStore(workdir)
    store.set_meta(
        "evaluator_config", {"type": "Classification", "datamodule": None, "cuda_graphs": None}
    )
    store.close()
    _experiment(workdir, _classification(learning_rate=0.5), max_trials=2).run()
    assert [t.id for t in load_trials(workdir)] == [0, 1]
