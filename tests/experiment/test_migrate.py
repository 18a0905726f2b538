"""A one-shot workdir written by the last release (no nasx.db) still reads, loads and resumes.

The fixture ``tests/fixtures/oneshot_workdir_53493d0`` was written by nasx at commit 53493d0
(see tests/fixtures/README.md): DARTS on the toy space, one epoch, exported arch
``{'op': 'linear', 'pick': [1]}``.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch

from nasx import cli
from nasx.experiment import NasExperiment, load_model
from nasx.experiment.storage.migrate import LegacyWorkdirError, is_legacy_one_shot, legacy_one_shot
from nasx.experiment.storage.readonly import ExperimentReadError, read_experiment
from nasx.experiment.storage.store import DB_NAME, ExperimentDirError
from nasx.strategy import DARTS
from tests.strategy.oneshot.toys import ToySpace, toy_evaluator

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "oneshot_workdir_53493d0"
EXPORTED = {"op": "linear", "pick": [1]}


@pytest.fixture
def old_workdir(tmp_path):
    """A copy of the fixture (the tests that resume write into it)."""
    return Path(shutil.copytree(FIXTURE, tmp_path / "old"))


def test_the_fixture_is_an_old_one_shot_workdir():
    assert is_legacy_one_shot(FIXTURE) and not (FIXTURE / DB_NAME).exists()


def test_it_reads_as_the_current_layout_stores_it():
    record = read_experiment(FIXTURE)
    assert record.kind == "one-shot"
    assert record.meta["strategy"] == "DARTS" and record.meta["space"] == "ToySpace"
    assert record.meta["migrated_from"] == "oneshot.json"
    assert [(t.id, t.arch, t.status) for t in record.trials] == [(0, EXPORTED, "succeeded")]
    assert record.best(1)[0].arch == EXPORTED


def test_show_and_export_read_it(capsys):
    assert cli.main(["show", str(FIXTURE)]) == 0
    out = capsys.readouterr().out
    assert "kind        one-shot" in out and json.dumps(EXPORTED) in out
    assert cli.main(["export", str(FIXTURE), "--format", "json"]) == 0
    assert [e["arch"] for e in json.loads(capsys.readouterr().out)] == [EXPORTED]


def test_its_subnet_loads_with_the_checkpoint_weights():
    model = load_model(FIXTURE)  # the exported arch, rebuilt from oneshot.json's reference
    state = torch.load(FIXTURE / "checkpoints" / "last.ckpt", weights_only=True)["state_dict"]
    assert torch.equal(model.op.weight, state["inner.model.model.op.linear.weight"])
    assert torch.equal(model.head.bias, state["inner.model.model.head.bias"])
    assert list(model.pick.chosen) == [1]


def test_it_reads_on_a_read_only_mount_and_is_left_unchanged(old_workdir):
    from .test_read_only_storage import _WRITES_ARE_DENIED, _run_on_read_only_mount, _snapshot

    before = _snapshot(old_workdir)
    result = _run_on_read_only_mount(
        old_workdir,
        _WRITES_ARE_DENIED
        + """
    from nasx.experiment import load_model
    from nasx.experiment.storage.readonly import read_experiment
    print([t.arch for t in read_experiment(D).trials], list(load_model(D).pick.chosen))
    """,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "[{'op': 'linear', 'pick': [1]}] [1]" in result.stdout
    assert _snapshot(old_workdir) == before


def test_a_run_without_resume_is_refused_and_changes_nothing(old_workdir):
    before = sorted(p.name for p in old_workdir.rglob("*"))
    with pytest.raises(ExperimentDirError, match="older nasx.*pass resume=True"):
        NasExperiment(ToySpace(), toy_evaluator(epochs=2), DARTS(), workdir=old_workdir).run()
    assert sorted(p.name for p in old_workdir.rglob("*")) == before


def test_a_resume_upgrades_it_and_trains_on_from_its_checkpoint(old_workdir):
    torch.manual_seed(0)
    strategy = DARTS()
    exp = NasExperiment(
        ToySpace(), toy_evaluator(epochs=2), strategy, workdir=old_workdir, resume=True
    )
    exp.run()
    assert strategy.module.current_epoch == 2  # the stored epoch, then one more
    record = read_experiment(old_workdir)
    assert record.kind == "one-shot" and record.meta["migrated_from"] == "oneshot.json"
    assert "fingerprint" in record.meta and "oneshot" in record.meta  # this run's full meta
    assert [t.arch for t in record.trials] == strategy.export_top_models(10)
    # Resumed again, it is now a store like any other: the same code checks its identity.
    with pytest.raises(ExperimentDirError, match="holds another experiment"):
        NasExperiment(
            ToySpace(), toy_evaluator(epochs=2, lr=0.5), DARTS(), workdir=old_workdir, resume=True
        ).run()


def test_a_damaged_oneshot_json_is_one_clear_error(old_workdir):
    (old_workdir / "oneshot.json").write_text("{not json")
    with pytest.raises(LegacyWorkdirError, match="oneshot.json is not readable"):
        legacy_one_shot(old_workdir)
    with pytest.raises(ExperimentReadError, match="oneshot.json is not readable"):
        read_experiment(old_workdir)
