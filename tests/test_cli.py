"""The ``nasx`` command line, run as ``python -m nasx.cli`` (what the console script calls) and
through ``main()``; every command, its --help, and one-line errors for bad directories."""

from __future__ import annotations

import importlib
import json
import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from nasx import cli
from nasx.experiment.storage.store import TrialStore

from .conftest import REPO_ROOT
from .toy_experiment import make_experiment

COMMANDS = ["list", "show", "export", "plot", "resume", "tensorboard", "serve"]


def run_cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "MPLBACKEND": "Agg"}
    return subprocess.run(
        [sys.executable, "-m", "nasx.cli", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=120,
    )


@pytest.fixture(scope="module")
def experiment(tmp_path_factory):
    root = tmp_path_factory.mktemp("exps")
    exp = make_experiment(root / "a", max_trials=8, seed=3)
    make_experiment(root / "b", max_trials=2, seed=1)
    (root / "not-an-experiment").mkdir()
    return exp


def test_console_script_entry_resolves_to_main():
    # tomllib is Python 3.11+; the entry is one line under [project.scripts].
    text = (REPO_ROOT / "pyproject.toml").read_text()
    section = text.split("[project.scripts]\n", 1)[1].split("\n[", 1)[0]
    module, _, func = re.search(r'^nasx = "(.+)"$', section, re.M).group(1).partition(":")
    assert (module, func) == ("nasx.cli", "main")
    assert getattr(importlib.import_module(module), func) is cli.main


def test_help_on_every_command():
    result = run_cli("--help")
    assert result.returncode == 0 and all(c in result.stdout for c in COMMANDS)
    for command in COMMANDS:
        with pytest.raises(SystemExit) as info:
            cli.main([command, "--help"])
        assert info.value.code == 0


def test_list_finds_experiments_and_skips_other_folders(experiment, capsys):
    root = experiment.workdir.parent
    assert cli.main(["list", str(root)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split()[:4] == ["experiment", "kind", "strategy", "trials"]
    assert [line.split()[0] for line in out[1:]] == [str(root / "a"), str(root / "b")]
    assert out[1].split()[1:4] == ["multi-trial", "Random", "8"]


def test_show_counts_and_best(experiment, capsys):
    assert cli.main(["show", str(experiment.workdir), "--top", "2"]) == 0
    out = capsys.readouterr().out
    counts = {s: len(experiment.trials(s)) for s in ("succeeded", "failed")}
    assert f"{counts['succeeded']} succeeded, {counts['failed']} failed" in out
    best_id = max(experiment.trials("succeeded"), key=lambda t: (t.metric, -t.id)).id
    assert out.split("best 2:\n")[1].splitlines()[1].startswith(f"{best_id} ")
    assert "<script>" in out  # the terminal shows error text as it is


def test_export_json_matches_the_experiment(experiment, capsys, tmp_path):
    assert cli.main(["export", str(experiment.workdir), "--top", "3", "--format", "json"]) == 0
    exported = json.loads(capsys.readouterr().out)
    assert [e["arch"] for e in exported] == experiment.export_top_models(top_k=3)
    out = tmp_path / "top.txt"
    assert cli.main(["export", str(experiment.workdir), "-o", str(out)]) == 0
    assert out.read_text().startswith(f"#{exported[0]['id']}  ")


def test_plot_writes_charts_and_cells(experiment, tmp_path):
    result = run_cli(
        "plot", str(experiment.workdir), "-o", str(tmp_path), "--backend", "matplotlib"
    )
    assert result.returncode == 0, result.stderr
    names = sorted(Path(p).name for p in result.stdout.split())
    assert names == [
        "best_cells.png",
        "learning_curves.png",
        "metric_history.png",
        "pareto_latency_ms.png",
    ]
    for name in names:
        assert (tmp_path / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("command", ["show", "export", "plot", "resume", "tensorboard", "serve"])
def test_missing_foreign_and_corrupt_directories_are_one_line_errors(command, tmp_path, capsys):
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("hi")
    corrupt = tmp_path / "corrupt"
    corrupt.mkdir()
    (corrupt / "nasx.db").write_bytes(b"this is not sqlite" * 100)
    other_db = tmp_path / "other"
    other_db.mkdir()
    sqlite3.connect(other_db / "nasx.db").execute("CREATE TABLE t (x)").connection.close()
    cases = {
        tmp_path / "missing": "no such directory",
        foreign: "is not a nasx experiment directory",
        corrupt: "is not a readable nasx experiment database",
        other_db: "is an SQLite database but not a nasx experiment",
    }
    for path, message in cases.items():
        assert cli.main([command, str(path)]) == 1
        err = capsys.readouterr().err
        assert (
            err.count("\n") == 1 and message in err and err.startswith(f"nasx {command}: error: ")
        )


def test_errors_through_the_console_entry(tmp_path):
    result = run_cli("show", str(tmp_path))
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [
        f"nasx show: error: {tmp_path} is not a nasx experiment directory (no nasx.db, no checkpoints/last.ckpt)"
    ]
    assert run_cli("export").returncode == 2  # usage error: argparse's code


def test_reading_never_writes_the_database(experiment):
    db = experiment.workdir / "nasx.db"
    before = {p.name: p.read_bytes() for p in experiment.workdir.glob("nasx.db*")}
    for args in (
        ["show", str(experiment.workdir)],
        ["export", str(experiment.workdir), "--top", "2"],
    ):
        assert cli.main(args) == 0
    after = {p.name: p.read_bytes() for p in experiment.workdir.glob("nasx.db*")}
    assert after["nasx.db"] == before["nasx.db"]  # not a byte of the database changed
    # A read-only SQLite connection to a WAL database may create the WAL index (-shm) and an
    # empty WAL beside it (SQLite's own files, needed to read while a run writes): nothing else.
    assert set(after) - set(before) <= {"nasx.db-shm", "nasx.db-wal"}
    assert after.get("nasx.db-wal", b"") == before.get("nasx.db-wal", b"")
    assert db.exists()


def test_resume_reruns_the_script_after_a_crash(tmp_path):
    workdir = tmp_path / "crashy"
    script = REPO_ROOT / "tests" / "toy_experiment.py"
    Path(str(workdir) + ".crash").touch()
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    first = subprocess.run(
        [sys.executable, str(script), str(workdir), "5"], env=env, cwd=tmp_path, timeout=120
    )
    assert first.returncode == 3  # killed in the middle of a trial
    statuses = [t.status for t in TrialStore(workdir, lock=False).trials()]
    assert statuses[-1] == "running" and len(statuses) == 3
    Path(str(workdir) + ".crash").unlink()
    dry = run_cli("resume", str(workdir), "--dry-run", cwd=tmp_path)
    assert dry.returncode == 0 and "1 interrupted" in dry.stdout and str(script) in dry.stdout
    done = run_cli("resume", str(workdir), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    trials = TrialStore(workdir, lock=False).trials()
    assert len(trials) == 5 and all(t.status in ("succeeded", "failed") for t in trials)


def test_resume_refuses_what_it_cannot_restart(tmp_path, capsys):
    store = TrialStore.create(
        tmp_path, {"space": "Net", "launch": {"argv": ["-c"], "cwd": str(tmp_path)}}
    )
    store.close()
    assert cli.main(["resume", str(tmp_path)]) == 1
    assert "not a script file that can be run again" in capsys.readouterr().err


def test_serve_refuses_remote_addresses_without_the_flag(experiment, capsys):
    assert cli.main(["serve", str(experiment.workdir), "--host", "0.0.0.0"]) == 1
    assert "--allow-remote" in capsys.readouterr().err


def test_tensorboard_writes_one_run_per_finished_trial(experiment, capsys, tmp_path):
    pytest.importorskip("tensorboard")
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(experiment.workdir, copy)
    assert cli.main(["tensorboard", str(copy)]) == 0
    assert f"logged {len(experiment.trials())} trial(s)" in capsys.readouterr().out
    assert len(list((copy / "tensorboard").iterdir())) == len(experiment.trials())


def test_one_shot_runs_read_as_every_run_does(tmp_path, capsys):
    # issue 28: a one-shot run stores its exported archs as rows; no command branches on its kind
    import torch

    from nasx.experiment import NasExperiment
    from nasx.strategy import DARTS
    from tests.strategy.oneshot.toys import ToySpace, toy_evaluator

    torch.manual_seed(0)
    workdir = tmp_path / "darts"
    exp = NasExperiment(ToySpace(), toy_evaluator(epochs=1), DARTS(), workdir=workdir)
    exp.run()
    logs = workdir / "lightning_logs" / "version_0"  # what log_arch_every writes with a logger
    logs.mkdir(parents=True)
    (logs / "metrics.csv").write_text("arch/op/linear,arch/op/zero,step\n0.5,0.5,0\n0.9,0.1,5\n")
    best_two = exp.export_top_models(2)
    assert cli.main(["show", str(workdir)]) == 0
    out = capsys.readouterr().out
    assert "kind        one-shot" in out and "strategy    DARTS" in out
    assert json.dumps(best_two[0]) in out and "arch_probability" not in out.split("best")[0]
    assert cli.main(["export", str(workdir), "--top", "2", "--format", "json"]) == 0
    exported = json.loads(capsys.readouterr().out)
    assert [e["arch"] for e in exported] == best_two and [e["id"] for e in exported] == [0, 1]
    assert exported[0]["metrics"]["arch_probability"] >= exported[1]["metrics"]["arch_probability"]
    assert cli.main(["plot", str(workdir), "-o", str(tmp_path / "p")]) == 0
    assert [p.name for p in (tmp_path / "p").iterdir()] == ["arch_weights.png"]


def test_a_directory_with_nothing_to_plot_is_one_line(tmp_path, capsys):
    from .dashboard.test_server import _one_shot_dir

    exp = _one_shot_dir(tmp_path / "darts")  # a checkpoint alone, no arch weights logged
    (exp / "lightning_logs" / "version_0" / "metrics.csv").unlink()
    assert cli.main(["plot", str(exp), "-o", str(tmp_path / "p")]) == 1
    assert "nothing to plot" in capsys.readouterr().err


# -- hyperparameters (the evaluator's choices) beside the arch -----------------------------------


def scored_with_lr(model, report, lr):
    return model.width / 100 + lr


@pytest.fixture(scope="module")
def hparam_experiment(tmp_path_factory):
    from nasx.evaluator import FunctionalEvaluator
    from nasx.experiment import NasExperiment
    from nasx.space import Numerical
    from nasx.strategy import Random

    from .toy_experiment import ToyCells

    evaluator = FunctionalEvaluator(
        scored_with_lr, lr=Numerical(1e-3, 1e-1, log_distributed=True, label="lr")
    )
    exp = NasExperiment(
        ToyCells(),
        evaluator,
        Random(seed=0),
        workdir=tmp_path_factory.mktemp("hp") / "exp",
        max_trials=4,
        keep_weights="all",
        progress=False,
    )
    exp.run()
    return exp


def test_show_gives_the_best_trials_an_hparams_column(hparam_experiment, capsys):
    assert cli.main(["show", str(hparam_experiment.workdir), "--top", "2", "--brief"]) == 0
    lines = capsys.readouterr().out.split("best 2:\n")[1].splitlines()
    assert lines[0].split() == ["id", "metric", "arch", "hparams"]
    top = hparam_experiment.export_top_trials(2)
    for line, trial in zip(lines[1:], top, strict=True):
        assert line.startswith(f"{trial['id']} ")
        assert line.endswith(json.dumps(trial["hparams"]))  # {"lr": ...}, after the arch


def test_show_has_no_hparams_column_without_choices_in_the_evaluator(experiment, capsys):
    assert cli.main(["show", str(experiment.workdir), "--brief"]) == 0
    out = capsys.readouterr().out
    assert out.split("best 5:\n")[1].splitlines()[0].split() == ["id", "metric", "arch"]


def test_export_writes_hparams_beside_the_arch_as_export_top_trials_does(
    hparam_experiment, experiment, capsys
):
    workdir = str(hparam_experiment.workdir)
    assert cli.main(["export", workdir, "--top", "3", "--format", "json"]) == 0
    exported = json.loads(capsys.readouterr().out)
    expected = hparam_experiment.export_top_trials(3)
    assert [{k: e[k] for k in t} for e, t in zip(exported, expected, strict=True)] == expected
    assert all(set(e["hparams"]) == {"lr"} and "lr" not in e["arch"] for e in exported)
    # The arch stays NNI's dict of model labels, for readers of the old export.
    assert [e["arch"] for e in exported] == hparam_experiment.export_top_models(top_k=3)
    # Text: the arch line as before, then the trial's hyperparameters on an indented line.
    assert cli.main(["export", workdir, "--top", "2"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"#{expected[0]['id']}  {cli._fmt(expected[0]['metric'])}  " + json.dumps(
        expected[0]["arch"]
    )
    assert lines[1] == "    hparams " + json.dumps(expected[0]["hparams"])
    assert lines[2].startswith(f"#{expected[1]['id']}  ") and len(lines) == 4
    # Without choices in the evaluator: the old text lines, and "hparams": {} in JSON.
    assert cli.main(["export", str(experiment.workdir), "--top", "2"]) == 0
    assert all(line.startswith("#") for line in capsys.readouterr().out.splitlines())
    assert cli.main(["export", str(experiment.workdir), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["hparams"] == {}


def test_model_prints_and_stores_the_trials_hparams(hparam_experiment, capsys, tmp_path):
    import torch

    (best,) = hparam_experiment.export_top_trials(1)
    out = tmp_path / "model.pt"
    assert cli.main(["model", str(hparam_experiment.workdir), "-o", str(out)]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed[1] == "arch     " + json.dumps(best["arch"])
    assert printed[2] == "hparams  " + json.dumps(best["hparams"])
    content = torch.load(out, weights_only=True)
    assert content["trial"] == best["id"] and content["hparams"] == best["hparams"]


def test_reading_hparams_never_writes_the_database(hparam_experiment, tmp_path):
    workdir = hparam_experiment.workdir
    before = {p.name: p.read_bytes() for p in workdir.glob("nasx.db*")}
    for args in (
        ["show", str(workdir)],
        ["export", str(workdir), "--top", "2", "--format", "json"],
        ["model", str(workdir), "--trial", "best", "-o", str(tmp_path / "m.pt")],
    ):
        assert cli.main(args) == 0
    after = {p.name: p.read_bytes() for p in workdir.glob("nasx.db*")}
    assert after["nasx.db"] == before["nasx.db"]
    assert set(after) - set(before) <= {"nasx.db-shm", "nasx.db-wal"}
    assert after.get("nasx.db-wal", b"") == before.get("nasx.db-wal", b"")


def test_show_cuts_archs_to_the_width_asked_and_prints_them_whole_into_a_file(experiment, capsys):
    archs = [json.dumps(t.arch) for t in experiment.trials()]
    assert min(map(len, archs)) > 100  # the toy space's archs need cutting at 80 columns
    assert cli.main(["show", str(experiment.workdir), "--width", "80"]) == 0
    out = capsys.readouterr().out
    tables = out.split("best 5:\n")[1]
    assert all(len(line) <= 80 for line in tables.splitlines())
    assert tables.count('..."') == 0 and tables.count("...") >= 5 + len(archs)
    assert "--width 0 or `nasx export` prints them whole" in out
    # not a terminal (captured): no limit, every arch whole, as --width 0 gives
    for asked in ([], ["--width", "0"]):
        assert cli.main(["show", str(experiment.workdir), *asked]) == 0
        out = capsys.readouterr().out
        assert all(arch in out for arch in archs) and "cut to" not in out
    assert cli.main(["show", str(experiment.workdir), "--width", "-1"]) == 1
    assert "--width must be 0 (no limit) or a number of columns, got -1" in capsys.readouterr().err
