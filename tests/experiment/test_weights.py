"""keep_weights: each trial's trained weights kept in the workdir (atomically, top-k pruned), and
load_model returning them in a new process, from a read-only directory, with clear errors."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from nasx.experiment import NasExperiment, kept_weights, load_model
from nasx.experiment.execution.jobs import Job, TrialResult, WeightsSpec
from nasx.experiment.execution.runner import ModelBuilder, run_trial
from nasx.experiment.results import loading as L
from nasx.experiment.results.second_stage import stage2
from nasx.experiment.storage import weights as W
from nasx.experiment.storage.readonly import read_experiment
from nasx.strategy import GridSearch
from nasx.trial import Trial, best_trials

from .helpers import SmallNet
from .weights_helpers import TrainThenScore, val_loss

ROOT = Path(__file__).resolve().parents[2]


def _search(workdir, keep, max_trials=None, **kwargs):
    torch.manual_seed(0)
    exp = NasExperiment(
        SmallNet(),
        TrainThenScore(steps=5),
        GridSearch(shuffle=False),
        workdir=workdir,
        keep_weights=keep,
        max_trials=max_trials,
        seed=0,
        progress=False,
        **kwargs,
    )
    exp.run()
    return exp


def _files(workdir) -> list[str]:
    return sorted(p.name for p in (Path(workdir) / "weights").iterdir())


def _snapshot(root: Path) -> dict[str, tuple[int, int]]:
    # SQLite's read protocol may create its empty -wal/-shm side files (see readonly.py).
    return {
        str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns)
        for p in root.rglob("*")
        if p.is_file() and not p.name.endswith(("-wal", "-shm"))
    }


def test_the_best_model_loads_in_a_new_process_from_a_read_only_workdir_with_its_metric(tmp_path):
    exp = _search(tmp_path / "exp", keep=2)
    best = best_trials(exp.trials(), "minimize", 1)[0]
    untrained = val_loss(SmallNet().freeze(best.arch))
    paths = [tmp_path / "exp", *(tmp_path / "exp").rglob("*")]
    for p in paths:  # (root ignores these modes; the snapshot below checks nothing is written)
        p.chmod(0o555 if p.is_dir() else 0o444)
    before = _snapshot(tmp_path / "exp")
    code = (
        "import json, sys\n"
        "from nasx.experiment import load_model\n"
        "from tests.experiment.weights_helpers import val_loss\n"
        "model = load_model(sys.argv[1], 'best')\n"
        "print(json.dumps({'metric': val_loss(model), 'type': type(model).__name__}))\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), *sys.path])}
    try:
        out = subprocess.run(
            [sys.executable, "-c", code, str(tmp_path / "exp")],
            capture_output=True,
            text=True,
            env=env,
            cwd=tmp_path,
            timeout=120,
        )
        assert out.returncode == 0, out.stderr
        assert _snapshot(tmp_path / "exp") == before
    finally:
        for p in paths:
            p.chmod(0o755 if p.is_dir() else 0o644)
    loaded = json.loads(out.stdout.strip().splitlines()[-1])
    assert loaded["type"] == "SmallNet"
    assert loaded["metric"] == pytest.approx(best.metric, rel=1e-6, abs=1e-9)
    assert (
        abs(untrained - best.metric) > 1e-3
    )  # the metric is the trained model's, not a fresh one's


def test_top_k_keeps_exactly_the_k_best_trials(tmp_path, caplog):
    with caplog.at_level(logging.INFO, logger="nasx.experiment"):
        exp = _search(tmp_path, keep=2)
    best = [t.id for t in best_trials(exp.trials(), "minimize", 2)]
    assert len(exp.trials()) == 6
    assert _files(tmp_path) == sorted([f"{i}.json" for i in best] + [f"{i}.pt" for i in best])
    kept = exp.kept_weights()
    assert [w.trial for w in kept] == sorted(best)
    size = sum(w.bytes for w in kept)
    assert size == sum((tmp_path / "weights" / f"{i}.pt").stat().st_size for i in best)
    assert "weights kept (top-2): 2 trials" in caplog.text
    all_kept = _search(tmp_path / "all", keep="all")
    assert [w.trial for w in all_kept.kept_weights()] == list(range(6))
    assert "weights" in all_kept._repr_html_()


class Crash(BaseException):
    """The process dying between writing a trial's weights and pruning the ones it displaced."""


def test_a_crash_between_write_and_prune_never_loses_the_best(tmp_path, monkeypatch):
    real_discard = W.discard
    seen = []

    def crash(directory, trial):
        newest = max(int(p.stem) for p in (Path(directory) / "weights").glob("*.json"))
        seen.append((trial, newest))
        raise Crash

    monkeypatch.setattr(W, "discard", crash)
    with pytest.raises(Crash):
        _search(tmp_path, keep=1)
    (displaced, newest) = seen[0]
    # The new best was committed (weights and manifest) before anything was deleted ...
    assert newest > displaced and _files(tmp_path) == sorted(
        [f"{displaced}.json", f"{displaced}.pt", f"{newest}.json", f"{newest}.pt"]
    )
    stored = {t.id: t for t in L._meta_and_trials(tmp_path)[1]}
    assert stored[newest].status == "succeeded"  # ... and its row stored
    assert val_loss(load_model(tmp_path, "best")) == pytest.approx(stored[newest].metric)
    monkeypatch.setattr(W, "discard", real_discard)
    exp = _search(tmp_path, keep=1, resume=True)  # the next run prunes and goes on
    (best,) = best_trials(exp.trials(), "minimize", 1)
    assert _files(tmp_path) == [f"{best.id}.json", f"{best.id}.pt"]


def test_leftovers_of_a_crash_mid_write_are_cleaned_up_and_never_count(tmp_path):
    _search(tmp_path, keep="all", max_trials=2)
    folder = tmp_path / "weights"
    (folder / ".5.pt.123.tmp").write_bytes(b"half")  # killed while writing
    (folder / "1.json").unlink()  # weights written, manifest (the commit) not yet
    assert [w.trial for w in kept_weights(tmp_path)] == [0]
    with pytest.raises(W.WeightsNotKeptError, match="trial 1 of .* has no kept weights"):
        load_model(tmp_path, 1)
    _search(tmp_path, keep="all", max_trials=3, resume=True)
    assert _files(tmp_path) == ["0.json", "0.pt", "2.json", "2.pt"]


def test_errors_name_the_trial_the_option_and_the_checksum(tmp_path):
    _search(tmp_path / "none", keep="none", max_trials=2)
    with pytest.raises(W.WeightsNotKeptError, match="keep_weights='none' \\(the default\\)"):
        load_model(tmp_path / "none", "best")
    _search(tmp_path / "exp", keep=1)
    with pytest.raises(W.NoSuchTrialError, match="has no trial 17 \\(ids 0..5\\)"):
        load_model(tmp_path / "exp", 17)
    with pytest.raises(W.NoSuchTrialError, match="no nasx experiment"):
        load_model(tmp_path / "nowhere", 0)
    (kept,) = kept_weights(tmp_path / "exp")
    other = next(i for i in range(6) if i != kept.trial)
    with pytest.raises(W.WeightsNotKeptError, match="keep_weights='top-1', which keeps only"):
        load_model(tmp_path / "exp", other)
    data = bytearray(kept.path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    kept.path.write_bytes(bytes(data))
    with pytest.raises(W.CorruptWeightsError, match="is corrupt: sha256 .* its manifest says"):
        load_model(tmp_path / "exp", kept.trial)
    kept.path.write_bytes(bytes(data[:100]))  # truncated
    with pytest.raises(W.CorruptWeightsError, match="changed or truncated"):
        load_model(tmp_path / "exp", "best")


def test_a_space_defined_in_main_is_passed_back(tmp_path):
    ref = W.space_reference(type("Net", (), {"__module__": "__main__"}), (), {})
    assert ref["args"] is None
    with pytest.raises(W.WeightsError, match="pass model_space="):
        W._builder(ref, None, "trial 0")
    assert W.space_reference(SmallNet, (3,), {})["args"] == "(3,)"
    assert W.space_reference(SmallNet, (object(),), {})["args"] is None  # not a literal


def test_ray_workers_send_the_weights_back_and_the_experiment_writes_them(tmp_path):
    # What RayExecutor.submit sends: no workdir ("dir": None), since the node may not reach it.
    keeper = W.WeightKeeper(
        tmp_path, W.KeepWeights.parse("all"), "minimize", W.space_reference(SmallNet, (), {}), set()
    )
    job = Job(0, {"width": 4, "act": 0}, weights=keeper.job_spec()).remote()
    assert job.weights is not None and job.weights.directory is None
    result = run_trial(ModelBuilder.from_space(SmallNet()), TrainThenScore(steps=5), job)
    assert isinstance(result.weights_payload, bytes) and not _files(tmp_path)
    keeper.finished(Trial(0, job.arch, "succeeded", metric=result.metric), result)
    assert _files(tmp_path) == ["0.json", "0.pt"]
    model = L.read_weights(tmp_path, 0)
    assert model["arch"] == job.arch and model["metric"] == result.metric


def test_a_trial_that_cannot_enter_the_top_k_writes_nothing(tmp_path):
    job = Job(3, {"width": 4, "act": 0}, weights=WeightsSpec(str(tmp_path), 0.0, "minimize"))
    result = run_trial(ModelBuilder.from_space(SmallNet()), TrainThenScore(steps=1), job)
    assert result.status == "succeeded" and result.weights_bytes is None
    assert not (tmp_path / "weights").exists()


@pytest.mark.slow  # starts worker processes (about 5 s here); the sequential tests share the code
def test_the_process_pool_workers_write_the_weights(tmp_path):
    exp = _search(tmp_path, keep="all", max_trials=3, max_concurrent_trials=2)
    assert exp.execution == "process"
    for t in exp.trials():
        assert val_loss(load_model(tmp_path, t.id)) == pytest.approx(t.metric, rel=1e-6)


@pytest.mark.slow  # a Ray cluster of a head and two worker nodes (tests/experiment/conftest.py)
def test_ray_trials_on_other_nodes_keep_their_weights(tmp_path, ray_cluster):
    exp = _search(tmp_path, keep="all", max_trials=4, max_concurrent_trials=2, execution="ray")
    assert [w.trial for w in exp.kept_weights()] == [0, 1, 2, 3]
    for t in exp.trials():
        assert val_loss(load_model(tmp_path, t.id)) == pytest.approx(t.metric, rel=1e-6)


def test_keep_weights_is_checked(tmp_path):
    with pytest.raises(ValueError, match="keep_weights must be 'none', 'all', 'best'"):
        NasExperiment(SmallNet(), val_loss, GridSearch(), workdir=tmp_path, keep_weights="most")
    with pytest.raises(ValueError, match="build_model=False builds none"):
        NasExperiment(
            SmallNet(), val_loss, GridSearch(), workdir=tmp_path, keep_weights=1, build_model=False
        )


def test_stage2_warm_starts_from_the_search_trials_weights(tmp_path):
    search = _search(tmp_path / "search", keep=2)
    source = {t.id: t.metric for t in search.trials()}
    warm = stage2(search, val_loss, top_k=2, workdir=tmp_path / "warm", warm_start=True,
                  progress=False)  # fmt: skip
    for t in warm.trials():  # scored without training: exactly the search's trained models
        assert t.metric == pytest.approx(source[int(t.metrics["source_trial"])], rel=1e-6)
    cold = stage2(search, val_loss, top_k=2, workdir=tmp_path / "cold", progress=False)
    assert all(
        t.metric != pytest.approx(source[int(t.metrics["source_trial"])]) for t in cold.trials()
    )
    assert json.loads((tmp_path / "warm" / "stage2.json").read_text())["warm_start"] is True
    with pytest.raises(W.WeightsNotKeptError, match="picked for stage 2"):
        stage2(search, val_loss, top_k=3, workdir=tmp_path / "x", warm_start=True, progress=False)
    assert not (tmp_path / "x").exists()  # refused before anything ran


def test_cli_model_writes_a_weights_only_file_and_show_reports_the_size(tmp_path, capsys):
    from nasx.cli import main

    exp = _search(tmp_path / "exp", keep=1)
    out = tmp_path / "model.pt"
    assert main(["model", str(tmp_path / "exp"), "--trial", "best", "-o", str(out)]) == 0
    content = torch.load(out, weights_only=True)
    model = SmallNet().freeze(content["arch"])
    model.load_state_dict(content["state_dict"])
    (best,) = best_trials(exp.trials(), "minimize", 1)
    assert val_loss(model) == pytest.approx(best.metric, rel=1e-6)
    assert main(["show", str(tmp_path / "exp"), "--brief"]) == 0
    assert "weights     (top-1): 1 trial, " in capsys.readouterr().out
    other = next(t.id for t in exp.trials() if t.id != best.id)
    assert main(["model", str(tmp_path / "exp"), "--trial", str(other), "-o", str(out)]) == 1
    assert f"trial {other} of" in capsys.readouterr().err
    assert main(["model", str(tmp_path / "exp"), "--trial", "x", "-o", str(out)]) == 1
    assert "--trial must be a trial id" in capsys.readouterr().err


def test_a_one_shot_supernet_and_its_subnets_load_from_the_checkpoint(tmp_path):
    from nasx.strategy import DARTS
    from tests.strategy.oneshot.toys import ToySpace, toy_evaluator

    torch.manual_seed(0)
    strategy = DARTS()
    exp = NasExperiment(ToySpace(), toy_evaluator(epochs=1), strategy, workdir=tmp_path)
    exp.run()
    info = read_experiment(tmp_path).meta["oneshot"]  # how to rebuild the supernet, in nasx.db
    assert info["space"]["qualname"] == "ToySpace" and info["supernet"]["mode"] == "mixture"
    exported = exp.export_top_models(1)[0]
    assert exported == strategy.export_top_models(1)[0]
    x = torch.randn(5, 8)
    expected_best = strategy.subnet(exported).cpu().state_dict()
    for arch in (None, {**exported, "op": "zero"}):
        expected = strategy.subnet(arch or exported).eval()
        loaded = load_model(tmp_path, arch=arch)  # rebuilt from the stored meta, not from `exp`
        assert loaded.state_dict().keys() == expected.state_dict().keys()
        assert all(torch.equal(v, expected.state_dict()[k]) for k, v in loaded.state_dict().items())
        assert torch.equal(loaded(x), expected(x))
    supernet = L.load_supernet(tmp_path)
    assert torch.equal(supernet.alpha("op"), strategy.supernet.alpha("op").cpu())
    # The rows are the exported archs, best first: a row's id picks its subnet.
    second = strategy.export_top_models(2)[1]
    by_row, by_arch = load_model(tmp_path, 1).state_dict(), load_model(tmp_path, arch=second)
    assert by_row.keys() == by_arch.state_dict().keys()
    assert all(torch.equal(v, by_arch.state_dict()[k]) for k, v in by_row.items())
    with pytest.raises(W.NoSuchTrialError, match="one-shot run with 6 exported arch"):
        load_model(tmp_path, 99)
    from nasx.cli import main

    assert main(["model", str(tmp_path), "-o", str(tmp_path / "subnet.pt")]) == 0
    content = torch.load(tmp_path / "subnet.pt", weights_only=True)
    assert content["arch"] == exported and content["trial"] == 0
    assert all(torch.equal(v, expected_best[k]) for k, v in content["state_dict"].items())
    assert main(["model", str(tmp_path), "--trial", "1", "-o", str(tmp_path / "s1.pt")]) == 0
    assert torch.load(tmp_path / "s1.pt", weights_only=True)["arch"] == second


def test_the_docs_example_runs(tmp_path, monkeypatch, capsys):
    from tests.test_readme import python_blocks

    monkeypatch.chdir(tmp_path)
    text = (ROOT / "docs" / "trained_models.md").read_text()
    line, code = python_blocks(text)[0]
    exec(compile(code, f"docs/trained_models.md:{line}", "exec"), {"__name__": "docs_example"})
    assert len(json.loads(capsys.readouterr().out.strip().replace("(", "[").replace(")", "]"))) == 2


def score_is_lr(model, report, lr):
    return lr


def test_each_weights_file_and_manifest_carry_the_trials_hparams(tmp_path):
    from nasx.evaluator import FunctionalEvaluator
    from nasx.space import Numerical
    from nasx.strategy import Random

    evaluator = FunctionalEvaluator(score_is_lr, lr=Numerical(0.01, 0.1, label="lr"))
    exp = NasExperiment(
        SmallNet(),
        evaluator,
        Random(seed=0),
        workdir=tmp_path / "exp",
        max_trials=3,
        keep_weights="all",
        progress=False,
    )
    exp.run()
    for trial in exp.trials():
        assert set(trial.hparams) == {"lr"}
        assert L.read_weights(exp.workdir, trial.id)["hparams"] == trial.hparams
        manifest = json.loads((exp.workdir / "weights" / f"{trial.id}.json").read_text())
        assert manifest["hparams"] == trial.hparams
    # Ray's path: the payload comes back and the experiment commits it with the trial's hparams.
    keeper = W.WeightKeeper(tmp_path / "ray", W.KeepWeights.parse("all"), "maximize", None, set())
    payload = W.encode(SmallNet().freeze({"width": 4, "act": 0}), {}, None, 0, 0.5, {"lr": 0.05})
    keeper.finished(
        Trial(0, {}, "succeeded", metric=0.5, hparams={"lr": 0.05}),
        TrialResult(0, "succeeded", metric=0.5, weights_payload=payload),
    )
    manifest = json.loads((tmp_path / "ray" / "weights" / "0.json").read_text())
    assert manifest["hparams"] == L.read_weights(tmp_path / "ray", 0)["hparams"] == {"lr": 0.05}


def test_weights_written_before_hparams_were_kept_read_as_empty_hparams(tmp_path):
    import io

    buffer = io.BytesIO()  # the previous format: no 'hparams' key
    model = SmallNet().freeze({"width": 4, "act": 0})
    torch.save(
        {
            "format": W.FORMAT,
            "version": W.VERSION,
            "trial": 0,
            "metric": 1.0,
            "arch": {"width": 4, "act": 0},
            "space": None,
            "state_dict": model.state_dict(),
        },
        buffer,
    )
    W.commit(tmp_path, 0, buffer.getvalue(), {"width": 4, "act": 0}, 1.0)
    assert L.read_weights(tmp_path, 0)["hparams"] == {}
