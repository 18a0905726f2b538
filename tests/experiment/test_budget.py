"""Budgets: a Job's budget reaches evaluators that declare it, is stored with the trial, and
nasx's Lightning evaluators train exactly that many epochs."""

from __future__ import annotations

import sqlite3

import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset

from nasx.evaluator import Classification, FunctionalEvaluator
from nasx.experiment.execution.jobs import Job
from nasx.experiment.execution.runner import run_trial
from nasx.experiment.storage.store import TrialStore
from nasx.trial import Trial


def _no_model(arch):
    return None


def test_an_evaluator_declaring_budget_receives_the_jobs_budget_and_from_budget_is_carried():
    seen = []

    class Recorder:
        def evaluate(self, model, report=None, budget=None):
            seen.append(budget)
            return float(budget or 0)

    result = run_trial(_no_model, Recorder(), Job(0, {}, budget=3, from_budget=1))
    assert (result.status, result.metric, seen) == ("succeeded", 3.0, [3])
    assert Job(0, {}, budget=3, from_budget=1).from_budget == 1
    run_trial(_no_model, Recorder(), Job(1, {}))  # no budget: the evaluator's own
    assert seen == [3, None]


def test_a_plain_function_model_budget_and_a_functional_evaluator_receive_it():
    def fn(model, budget):
        return 10.0 * budget

    assert run_trial(_no_model, fn, Job(0, {}, budget=2)).metric == 20.0
    ev = FunctionalEvaluator(fn, needs_model=False)
    assert run_trial(_no_model, ev, Job(1, {}, budget=4)).metric == 40.0


def test_a_budget_for_an_evaluator_that_cannot_take_one_fails_the_trial_by_name():
    result = run_trial(_no_model, lambda model: 1.0, Job(0, {}, budget=2))
    assert result.status == "failed"
    assert "declares no `budget` parameter" in result.error
    with pytest.raises(TypeError, match="'budget' is reserved"):
        FunctionalEvaluator(lambda model, budget: 1.0, budget=3)


def _data():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(64, 2, generator=g)
    y = (x.sum(dim=1) > 0).long()
    return DataLoader(TensorDataset(x, y), batch_size=16)


@pytest.mark.parametrize("budget", [2, 2.0])
def test_classification_with_budget_trains_exactly_that_many_epochs(budget):
    data = _data()
    ev = Classification(
        train_dataloaders=data, val_dataloaders=data, accelerator="cpu", max_epochs=5
    )
    seen = []
    torch.manual_seed(0)
    ev.evaluate(torch.nn.Linear(2, 2), report=seen.append, budget=budget)
    assert len(seen) == 2  # one validation report per epoch: 2 epochs, not the trainer's 5
    seen.clear()
    ev.evaluate(torch.nn.Linear(2, 2), report=seen.append)
    assert len(seen) == 5


@pytest.mark.parametrize("bad", [0, 1.5, "2", True])
def test_a_lightning_budget_must_be_a_positive_whole_number_of_epochs(bad):
    data = _data()
    ev = Classification(train_dataloaders=data, val_dataloaders=data, accelerator="cpu")
    with pytest.raises(ValueError, match="positive whole number"):
        ev.evaluate(torch.nn.Linear(2, 2), budget=bad)


def test_the_budget_is_stored_and_read_back_eagerly_and_lazily(tmp_path):
    store = TrialStore.create(tmp_path, {})
    store.add(Trial(0, {"k": 1}, "running", budget=3))
    store.add(Trial(1, {"k": 2}, "running", budget=0.5))
    store.add(Trial(2, {"k": 3}, "running"))
    trial = Trial(0, {"k": 1}, "succeeded", metric=0.5, budget=9)
    store.update(trial)
    for lazy in (False, True):
        got = store.trials(lazy=lazy)
        assert [t.budget for t in got] == [9, 0.5, None]
        assert type(got[0].budget) is int  # epochs stay whole numbers
    store.close()


def test_a_database_written_before_budgets_gets_the_column_and_old_rows_read_none(tmp_path):
    store = TrialStore.create(tmp_path, {})
    store.add(Trial(0, {"k": 1}, "succeeded", metric=0.5))
    store.close()
    db = sqlite3.connect(tmp_path / "nasx.db")
    db.execute("ALTER TABLE trials DROP COLUMN budget")  # as an older release wrote it
    db.commit()
    db.close()
    from nasx.experiment.storage.store import load_trials

    assert [t.budget for t in load_trials(tmp_path)] == [None]  # read-only: no column needed
    store = TrialStore(tmp_path)
    store.add(Trial(1, {"k": 2}, "running", budget=1))
    assert [t.budget for t in store.trials()] == [None, 1]
    store.close()
