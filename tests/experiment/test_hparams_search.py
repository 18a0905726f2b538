"""Hyperparameters searched with the architecture: one joint space for the strategy, ``arch`` and
``hparams`` kept apart in the trial record, storage and export, and a trial reproduced from them."""

import json
import sqlite3

import pytest
import torch
from torch.utils.data import TensorDataset

from nasx.evaluator import Classification, DataLoader, FunctionalEvaluator
from nasx.evaluator.hparams import freeze_evaluator
from nasx.experiment import NasExperiment
from nasx.experiment.execution.runner import seed_everything
from nasx.experiment.storage.store import ExperimentDirError, TrialStore, load_trials
from nasx.space import Categorical, LabelConflictError, Numerical, model_context
from nasx.strategy import TPE, GridSearch, Random
from nasx.trial import Trial

from .helpers import SmallNet


class TwoClass(SmallNet):
    """SmallNet with two logits (for Classification)."""

    def forward(self, x):
        out = super().forward(x)
        return torch.cat([-out, out], 1)


def score(model, lr, bs):
    """Best at width 8, lr near 0.01 and batch size 32: depends on arch and hparams."""
    import math

    return model.fc1.out_features / 8 - abs(math.log10(lr) + 2) - (bs != 32) * 0.5


def joint_evaluator():
    return FunctionalEvaluator(
        score,
        lr=Numerical(1e-4, 1e-1, log_distributed=True, label="lr"),
        bs=Categorical([16, 32, 64], label="bs"),
    )


def test_one_strategy_searches_arch_and_hparams_and_the_record_keeps_them_apart(tmp_path):
    exp = NasExperiment(
        SmallNet(), joint_evaluator(), TPE(n_startup_trials=5, seed=0), workdir=tmp_path,
        max_trials=25, progress=False,
    )  # fmt: skip
    exp.run()
    trials = exp.trials()
    assert len(trials) == 25
    for t in trials:
        assert set(t.arch) == {"width", "act"} and set(t.hparams) == {"lr", "bs"}
        assert 1e-4 <= t.hparams["lr"] <= 1e-1
        with model_context(t.arch):  # NNI's arch format: the model's labels only
            SmallNet()
        on_disk = tmp_path / "trials" / str(t.id)
        assert json.loads((on_disk / "arch.json").read_text()) == t.arch
        assert json.loads((on_disk / "hparams.json").read_text()) == t.hparams
    assert load_trials(tmp_path) == trials  # storage round trip
    # the strategy learnt over the joint space: late proposals are better than the random start
    late = sorted(t.metric for t in trials[-10:])[5]
    early = sorted(t.metric for t in trials[:5])[2]
    assert late > early
    (arch,) = exp.export_top_models(top_k=1)
    (top,) = exp.export_top_trials(top_k=1)
    assert arch == top["arch"] and set(top["hparams"]) == {"lr", "bs"}
    assert top["metric"] == max(t.metric for t in trials)
    json.dumps(top)
    assert "hparams" in str(exp.trial_table()).splitlines()[0]


def test_a_rebuilt_model_plus_its_hparams_reproduce_the_trial(tmp_path):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(48, 4, generator=g)
    data = TensorDataset(x, (x[:, 0] + x[:, 1] > 0).long())
    ev = Classification(
        learning_rate=Numerical(1e-3, 3e-1, log_distributed=True, label="lr"),
        train_dataloaders=DataLoader(
            data, batch_size=Categorical([8, 16], label="bs"), shuffle=True
        ),
        val_dataloaders=DataLoader(data, batch_size=48),
        max_epochs=1,
        accelerator="cpu",
    )
    exp = NasExperiment(
        TwoClass(), ev, Random(seed=0), workdir=tmp_path, max_trials=2, seed=3, progress=False
    )
    exp.run()
    (top,) = exp.export_top_trials(1)
    # by hand: seed as the experiment did, rebuild the model, make the evaluator again, evaluate
    seed_everything(3 + top["id"])
    with model_context(top["arch"]):  # (space.freeze would first build the search form)
        model = TwoClass()
    assert freeze_evaluator(ev, top["hparams"]).evaluate(model) == top["metric"]
    assert exp.rerun_trial(top["id"])["default"] == top["metric"]  # the same in one call


def test_a_label_shared_by_model_and_evaluator_is_one_decision_a_clash_is_refused(tmp_path):
    shared = FunctionalEvaluator(
        lambda model, width: float(model.fc1.out_features == width),
        width=Categorical([2, 4, 8], label="width"),  # the model's own 'width' decision
    )
    exp = NasExperiment(SmallNet(), shared, GridSearch(), workdir=tmp_path / "a", progress=False)
    exp.run()
    trials = exp.trials()
    assert len(trials) == 6 and all(t.metric == 1.0 for t in trials)
    assert all(t.hparams == {"width": t.arch["width"]} for t in trials)

    clash = FunctionalEvaluator(lambda model, w: 0.0, w=Categorical([1, 2], label="width"))
    exp = NasExperiment(SmallNet(), clash, Random(), workdir=tmp_path / "b", progress=False)
    with pytest.raises(LabelConflictError, match="'width' names a model choice"):
        exp.run()


def test_grid_search_walks_quantised_hparams_and_names_a_continuous_one(tmp_path):
    ev = FunctionalEvaluator(lambda model, lr: lr, lr=Numerical(0.1, 0.3, quantize=0.1, label="lr"))
    exp = NasExperiment(SmallNet(), ev, GridSearch(), workdir=tmp_path / "q", progress=False)
    exp.run()
    assert len(exp.trials()) == 6 * 3
    ev = FunctionalEvaluator(lambda model, lr: lr, lr=Numerical(0.1, 0.3, label="lr"))
    exp = NasExperiment(SmallNet(), ev, GridSearch(), workdir=tmp_path / "c", progress=False)
    with pytest.raises(ValueError, match="'lr' is continuous.*quniform"):
        exp.run()


def test_resume_with_other_evaluator_choices_is_refused(tmp_path):
    exp = NasExperiment(
        SmallNet(), joint_evaluator(), Random(seed=0), workdir=tmp_path, max_trials=2,
        progress=False,
    )  # fmt: skip
    exp.run()
    other = FunctionalEvaluator(
        score,
        lr=Numerical(1e-5, 1e-1, log_distributed=True, label="lr"),
        bs=Categorical([16, 32, 64], label="bs"),
    )
    again = NasExperiment(
        SmallNet(), other, Random(seed=0), workdir=tmp_path, max_trials=4, resume=True,
        progress=False,
    )  # fmt: skip
    with pytest.raises(ExperimentDirError, match="evaluator label 'lr'"):
        again.run()
    same = NasExperiment(
        SmallNet(), joint_evaluator(), Random(seed=0), workdir=tmp_path, max_trials=4,
        resume=True, progress=False,
    )  # fmt: skip
    same.run()
    assert len(same.trials()) == 4


def test_one_shot_strategies_refuse_evaluator_choices(tmp_path):
    from nasx.strategy import DARTS

    ev = Classification(learning_rate=Numerical(1e-3, 1e-1, label="lr"), max_epochs=1)
    exp = NasExperiment(SmallNet(), ev, DARTS(), workdir=tmp_path, progress=False)
    with pytest.raises(ValueError, match="one-shot strategy.*freeze_evaluator"):
        exp.run()


def test_a_database_from_before_hparams_reads_and_opens(tmp_path):
    # The trials table as nasx wrote it before the hparams column existed.
    tmp_path.mkdir(exist_ok=True)
    db = sqlite3.connect(tmp_path / "nasx.db")
    db.executescript(
        "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);"
        "CREATE TABLE trials (id INTEGER PRIMARY KEY, arch TEXT NOT NULL, status TEXT NOT NULL,"
        " metric REAL, metrics TEXT NOT NULL DEFAULT '{}', intermediates TEXT NOT NULL DEFAULT"
        " '[]', start_time REAL, end_time REAL, duration REAL, error TEXT);"
        "INSERT INTO trials VALUES (0, '{\"k\": 3}', 'succeeded', 0.5, '{}', '[]', 1, 2, 1, NULL);"
    )
    db.commit()
    db.close()
    from nasx.experiment.storage.readonly import read_experiment

    assert read_experiment(tmp_path).trials[0].hparams == {}
    assert load_trials(tmp_path) == [
        Trial(0, {"k": 3}, "succeeded", 0.5, {}, [], 1.0, 2.0, 1.0, None)
    ]
    store = TrialStore(tmp_path)  # opened for writing: the column is added
    store.add(Trial(1, {"k": 5}, "running", hparams={"lr": 0.1}))
    assert [t.hparams for t in store.trials()] == [{}, {"lr": 0.1}]
    store.close()


@pytest.mark.slow
def test_hparams_reach_trials_in_worker_processes(tmp_path):
    exp = NasExperiment(
        SmallNet(), joint_evaluator(), Random(seed=0), workdir=tmp_path, max_trials=3,
        execution="process", progress=False,
    )  # fmt: skip
    exp.run()
    trials = exp.trials()
    assert [t.status for t in trials] == ["succeeded"] * 3
    for t in trials:  # the metric is the one of this arch with these hparams
        with model_context(t.arch):
            model = SmallNet()
        assert t.metric == score(model, **t.hparams)


@pytest.mark.parametrize("make", [lambda: Random(seed=0), lambda: TPE(n_startup_trials=3, seed=0)])
def test_the_space_constraints_hold_in_a_joint_search(tmp_path, make):
    from nasx.experiment.filters import CostFilter
    from nasx.space import add_constraint

    net = SmallNet()
    add_constraint(net, lambda arch: arch["width"] != 8, label="not 8")
    # a rule that builds the model (on the meta device): width 2 has 13 parameters
    add_constraint(net, CostFilter((4,), params=(20, None)), label="params >= 20")
    exp = NasExperiment(
        net, joint_evaluator(), make(), workdir=tmp_path, max_trials=6, progress=False
    )
    exp.run()
    trials = exp.trials()
    assert len(trials) == 6 and all(t.status == "succeeded" for t in trials)
    assert all(t.arch["width"] == 4 and set(t.hparams) == {"lr", "bs"} for t in trials)
