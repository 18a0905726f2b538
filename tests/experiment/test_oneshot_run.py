"""A one-shot run is stored as every run is (issue 28): nasx.db's meta, one row per exported
arch, and the resume identity checked by the same code as a multi-trial run's."""

from __future__ import annotations

import pytest
import torch

from nasx.experiment import NasExperiment
from nasx.experiment.loop.one_shot import EXPORTED_ARCHS
from nasx.experiment.storage.readonly import read_experiment
from nasx.experiment.storage.store import ExperimentDirError
from nasx.strategy import DARTS, RandomOneShot
from tests.strategy.oneshot.toys import ToySpace, toy_evaluator


def _run(workdir, strategy=None, **options):
    torch.manual_seed(0)
    strategy = strategy or DARTS()
    epochs = options.pop("epochs", 1)
    lr = options.pop("lr", 1e-2)
    exp = NasExperiment(
        ToySpace(), toy_evaluator(epochs=epochs, lr=lr), strategy, workdir=workdir, **options
    )
    exp.run()
    return exp, strategy


def test_the_store_holds_the_meta_and_the_exported_archs_best_first(tmp_path):
    exp, strategy = _run(tmp_path)
    record = read_experiment(tmp_path)
    assert record.kind == "one-shot" and record.meta["strategy"] == "DARTS"
    assert set(record.meta["search_space"]) == {"op", "pick"}  # the labels, as multi-trial stores
    assert record.meta["oneshot"]["space"]["qualname"] == "ToySpace"
    exported = strategy.export_top_models(EXPORTED_ARCHS)
    assert [t.arch for t in record.trials] == exported == exp.export_top_models(EXPORTED_ARCHS)
    assert [t.id for t in record.trials] == list(range(len(exported)))
    # each row's probability is the product of the chosen values' probabilities
    probs = strategy.export_probs()
    for row in record.trials:
        expected = probs["op"][row.arch["op"]] * probs["pick"][row.arch["pick"][0]]
        assert row.metrics["arch_probability"] == pytest.approx(expected)
        assert row.status == "succeeded" and row.metric is None and row.duration > 0
    chances = [t.metrics["arch_probability"] for t in record.trials]
    assert chances == sorted(chances, reverse=True)
    assert exp.export_top_trials(1)[0]["arch"] == exported[0]


def test_random_one_shot_rows_carry_the_supernet_score(tmp_path):
    _, strategy = _run(tmp_path, RandomOneShot(num_samples=4, seed=0))
    rows = read_experiment(tmp_path).trials
    assert [(t.arch, t.metrics["supernet_score"]) for t in rows] == [
        (arch, metric) for metric, arch in strategy.results
    ]


def test_a_second_run_into_the_workdir_needs_resume_as_a_multi_trial_one_does(tmp_path):
    _run(tmp_path)
    with pytest.raises(ExperimentDirError, match="pass resume=True"):
        _run(tmp_path, epochs=2)
    _, strategy = _run(tmp_path, epochs=2, resume=True)
    assert strategy.module.current_epoch == 2  # trained on: max_epochs may change on resume


def test_other_settings_are_refused_naming_them_unless_forced(tmp_path):
    _run(tmp_path)
    with pytest.raises(ExperimentDirError, match="learning_rate.*was 0.01, now 0.5.*force"):
        _run(tmp_path, epochs=2, lr=0.5, resume=True)
    _, strategy = _run(tmp_path, epochs=2, lr=0.5, resume="force")
    assert strategy.module.current_epoch == 2  # the checkpoint's own check followed the force
    assert read_experiment(tmp_path).meta["evaluator_config"]["learning_rate"] == 0.5


def test_another_space_is_refused_even_forced(tmp_path):
    _run(tmp_path)
    torch.manual_seed(0)
    other = ToySpace(label_prefix="x")
    with pytest.raises(ExperimentDirError, match="holds another experiment"):
        NasExperiment(
            other, toy_evaluator(epochs=2), DARTS(), workdir=tmp_path, resume="force"
        ).run()


def test_in_a_notebook_the_search_shows_refreshing_html_progress(tmp_path, monkeypatch, capsys):
    """Issue 32: a one-shot run printed Lightning's text bar where multi-trial runs show HTML."""
    from nasx.experiment.display import notebook
    from nasx.experiment.display import one_shot as oneshot_progress

    shown: list[str] = []
    monkeypatch.setattr(notebook, "in_notebook", lambda: True)
    monkeypatch.setattr(notebook, "_ipython_display", lambda first: shown.append)
    torch.manual_seed(0)
    strategy = DARTS()
    evaluator = toy_evaluator(epochs=2, enable_progress_bar=True)  # Lightning's bar: replaced
    NasExperiment(ToySpace(), evaluator, strategy, workdir=tmp_path).run()
    assert isinstance(strategy.display_callback, oneshot_progress.NotebookSearchProgress)
    assert len(shown) >= 2
    last = shown[-1]
    assert "epoch 2/2" in last and "stopped: the one-shot strategy finished" in last
    assert "<progress" in last and "val_acc" in last and "left" not in last
    leader = max(strategy.export_probs()["op"].items(), key=lambda kv: kv[1])[0]
    assert f"op={leader}" in last
    assert "Epoch" not in capsys.readouterr().err  # Lightning's text bar was off


def test_outside_a_notebook_lightnings_own_bar_is_left_as_configured(tmp_path):
    strategy = DARTS()
    _run(tmp_path, strategy)
    assert strategy.display_callback is None
