"""YAML pipelines: the repository's example files, `nasx run`, and refusals that name the key."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nasx.cli import main
from nasx.pipeline import PipelineError, load, validate

EXAMPLES = sorted((Path(__file__).resolve().parents[1] / "tutorials" / "pipelines").glob("*.yaml"))


def test_there_are_example_files():
    assert {p.name for p in EXAMPLES} >= {"mnasnet_cifar10.yaml", "tiny_random.yaml"}


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_every_example_file_is_valid(path):
    cfg = load(path)
    assert cfg["pipeline"] and all(step in cfg for step in cfg["pipeline"])
    assert main(["run", str(path), "--check"]) == 0


def test_the_tiny_pipeline_runs_end_to_end(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    path = next(p for p in EXAMPLES if p.name == "tiny_random.yaml")
    assert main(["run", str(path), "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "search: 2 trials" in out and "fullytrain: 1 trials" in out
    record = json.loads((tmp_path / "nasx_experiments/tiny-full/stage2.json").read_text())
    assert record["source"] == str((tmp_path / "nasx_experiments/tiny-search").resolve())
    assert record["warm_start"] is True  # from the search's kept weights (keep_weights: best)
    assert len(list((tmp_path / "nasx_experiments/tiny-search/weights").glob("*.pt"))) == 1
    # fullytrain alone, from the stored search
    assert main(["run", str(path), "--quiet", "--steps", "fullytrain"]) == 1  # workdir exists
    assert "already" in capsys.readouterr().err


def base(**search):
    cfg = {
        "workdir": "w",
        "space": {"name": "mnasnet"},
        "data": {"name": "random"},
    }
    cfg.update(search)
    return {"pipeline": ["search"], "search": cfg}


@pytest.mark.parametrize(
    "config, message",
    [
        (base(spaec={}), "search.spaec: unknown key; allowed: data, evaluator"),
        (
            base(space={"name": "mobilenet"}),
            "search.space.name: 'mobilenet' is not allowed; allowed: ",
        ),
        (
            base(strategy={"name": "DARTS"}),
            "search.strategy.name: 'DARTS' is not allowed; allowed: Random",
        ),
        (base(limits={"flops": [1, 2, 3]}), r"search.limits.flops: must be \[low, high\]"),
        (
            base(limits={"max_trials": -1}),
            "search.limits.max_trials: must be a non-negative integer",
        ),
        (base(objective={"type": "mnasnet_reward"}), "search.objective.target: is required"),
        (
            base(objective={"type": "mnasnet_reward", "target": 5.0}),
            "search.latency: a latency_ms objective needs latency: measure",
        ),
        ({"pipeline": ["search", "deploy"]}, r"pipeline\[1\]: 'deploy' is not a step"),
        (
            {"pipeline": ["fullytrain"]},
            "fullytrain: the pipeline runs 'fullytrain' but the file has no",
        ),
        ({"pipeline": ["search"], "extra": 1}, "extra: unknown key; allowed: pipeline, search"),
        ({"search": {}}, "pipeline: is required"),
        (base(keep_weights="most"), "search.keep_weights: keep_weights must be 'none', 'all'"),
        (
            {
                "pipeline": ["search", "fullytrain"],
                "search": base(keep_weights=1)["search"],
                "fullytrain": {"workdir": "f", "top_k": 2, "warm_start": True},
            },
            "fullytrain.warm_start: starts from the search's weights of the top_k .2. archs, but "
            "search.keep_weights is 'top-1'",
        ),
    ],
)
def test_bad_configurations_name_the_key_and_the_allowed_values(config, message):
    with pytest.raises(PipelineError, match=message):
        validate(config)


def test_tags_are_refused_by_the_safe_loader(tmp_path):
    path = tmp_path / "evil.yaml"
    path.write_text("pipeline: !!python/object/apply:os.system ['echo hi']\n")
    with pytest.raises(PipelineError, match="not valid YAML .or uses tags"):
        load(path)
    assert main(["run", str(path), "--check"]) == 1


def test_cli_refuses_unknown_steps(tmp_path):
    path = next(p for p in EXAMPLES if p.name == "tiny_random.yaml")
    assert main(["run", str(path), "--steps", "deploy", "--check"]) == 1
