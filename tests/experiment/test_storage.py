"""TrialStore: SQLite in WAL mode, exact round trip of every trial field, one folder per trial."""

from __future__ import annotations

import json
import sqlite3

import pytest

from nasx.experiment import ExperimentDirError, TrialStore, load_trials
from nasx.trial import Trial


def test_round_trip_of_every_field(tmp_path):
    store = TrialStore.create(
        tmp_path, {"space": "Net", "search_space": {"k": "Categorical([3, 5])"}}
    )
    t = Trial(0, {"k": 3, "skip": [0, 2], "op": "conv"}, "running", start_time=10.5)
    store.add(t)
    done = Trial(
        0,
        t.arch,
        "succeeded",
        metric=0.75,
        metrics={"default": 0.75, "loss": 0.1},
        intermediates=[0.5, 0.75],
        start_time=10.5,
        end_time=12.0,
        duration=1.5,
    )
    store.update(done)
    store.add(Trial(1, {"k": 5}, "failed", error="RuntimeError: x\nTraceback ...", end_time=13.0))
    assert store.trials() == [
        done,
        Trial(1, {"k": 5}, "failed", error="RuntimeError: x\nTraceback ...", end_time=13.0),
    ]
    assert store.meta() == {"space": "Net", "search_space": {"k": "Categorical([3, 5])"}}
    assert store.next_id() == 2
    assert json.loads((tmp_path / "trials" / "0" / "arch.json").read_text()) == t.arch
    store.close()
    assert load_trials(tmp_path) == [
        done,
        Trial(1, {"k": 5}, "failed", error="RuntimeError: x\nTraceback ...", end_time=13.0),
    ]


def test_database_uses_wal(tmp_path):
    TrialStore.create(tmp_path, {}).close()
    (mode,) = sqlite3.connect(tmp_path / "nasx.db").execute("PRAGMA journal_mode").fetchone()
    assert mode == "wal"


def test_update_of_an_unknown_trial_is_an_error(tmp_path):
    store = TrialStore.create(tmp_path, {})
    with pytest.raises(KeyError, match="trial 7"):
        store.update(Trial(7, {}, "failed"))
    store.close()


def test_create_refuses_an_existing_experiment(tmp_path):
    TrialStore.create(tmp_path, {}).close()
    with pytest.raises(ExperimentDirError, match="already holds an experiment"):
        TrialStore.create(tmp_path, {})


def test_load_trials_of_a_missing_experiment(tmp_path):
    with pytest.raises(FileNotFoundError, match="no nasx experiment"):
        load_trials(tmp_path)
