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
            r"search.limits.max_trials: must be a positive integer \(1 or more\), got -1",
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


# ----------------------------------------------------------------------------- nasx run, as a user
TINY = next(p for p in EXAMPLES if p.name == "tiny_random.yaml")


def tiny_variant(tmp_path, old, new, name="pipeline.yaml"):
    """The tiny example file with one piece of text replaced: a real file, as a user edits it."""
    text = TINY.read_text()
    assert old in text, old
    path = tmp_path / name
    path.write_text(text.replace(old, new))
    return path


def run_check(path, capsys):
    """(exit code, stderr) of `nasx run PATH --check`; stderr must be one line when it fails."""
    code = main(["run", str(path), "--check"])
    err = capsys.readouterr().err
    if code:
        assert err.count("\n") == 1 and "Traceback" not in err, err
    return code, err


@pytest.mark.parametrize(
    "old, new, message",
    [
        (
            "batch_size: 8}\n  objective",
            "batch_size: 0}\n  objective",
            "search.evaluator.batch_size: must be a positive integer (1 or more), got 0",
        ),
        (
            "num_classes: 4, image_size",
            "num_classes: 0, image_size",
            "search.data.num_classes: must be a positive integer (1 or more), got 0",
        ),
        (
            "image_size: 32",
            "image_size: 0",
            "search.data.image_size: must be a positive integer (1 or more), got 0",
        ),
        (
            "batch_size: 8}\n  objective",
            "batch_size: 8, learning_rate: -0.01}\n  objective",
            "search.evaluator.learning_rate: must be a positive number, got -0.01",
        ),
        (
            "max_trials: 2",
            "max_trials: 0",
            "search.limits.max_trials: must be a positive integer (1 or more), got 0",
        ),
        (
            "macs: [null, 40000000]",
            "macs: [40000000, 1000]",
            "search.limits.macs: [low, high] with low > high (40000000 > 1000): swap them",
        ),
        (
            "macs: [null, 40000000]",
            "macs: [-5, null]",
            "search.limits.macs: bounds must be >= 0, got [-5, None]",
        ),
        (
            "limits: {",
            "limits: {max_duration: 10 minutes, ",
            "search.limits.max_duration: must be seconds or a string like '30s'",
        ),
        (
            "batch_size: 8}\n  objective",
            "batch_size: 8, limit_train_batches: 1.5}\n  objective",
            "search.evaluator.limit_train_batches: must be a number of batches (an integer >= 0) "
            "or a fraction of them (0.0 to 1.0), got 1.5",
        ),
        ("top_k: 1", "top_k: 0", "fullytrain.top_k: must be a positive integer (1 or more), got 0"),
        (
            "data: {name: random, num_samples: 16, num_classes: 4, image_size: 32}",
            "data: {name: tfrecord, train: 'shards/train-*'}",
            "search.data.val: is required for tfrecord data (a glob of shards)",
        ),
        (
            "{name: Random, args: {seed: 0}}",
            "{name: RegularizedEvolution, args: {population_size: -1}}",
            "search.strategy.args: population_size must be an integer >= 1, got -1; RegularizedEvolution takes: ",
        ),
        (
            "args: {seed: 0}",
            "args: {seed: 0, sead: 1}",
            "search.strategy.args: Random.__init__() got an unexpected keyword argument 'sead'; Random takes: ",
        ),
        (
            "args: {num_classes: 4}",
            "args: {num_clases: 4}",
            "search.space.args: MnasNet.__init__() got an unexpected keyword argument 'num_clases'; MnasNet takes: ",
        ),
        (
            "args: {num_classes: 4}",
            "args: {num_classes: 0}",
            "search.space.args.num_classes: must be a positive integer (1 or more), got 0",
        ),
    ],
    ids=[
        "batch_size-0",
        "num_classes-0",
        "image_size-0",
        "negative-lr",
        "max_trials-0",
        "reversed-range",
        "negative-bound",
        "bad-duration",
        "fraction-over-1",
        "top_k-0",
        "tfrecord-without-val",
        "population_size--1",
        "strategy-args",
        "space-args",
        "space-num_classes-0",
    ],
)
def test_check_refuses_bad_values_naming_the_key_and_what_is_allowed(
    tmp_path, capsys, old, new, message
):
    path = tiny_variant(tmp_path, old, new)
    code, err = run_check(path, capsys)
    assert code == 1
    assert err.startswith(f"nasx run: error: {path}: {message}") or message in err, err
    assert str(path) in err


def test_anchors_aliases_and_merge_keys_still_work(tmp_path, capsys):
    path = tiny_variant(
        tmp_path,
        "evaluator: {max_epochs: 1, batch_size: 8}\n  objective",
        "evaluator: &train {max_epochs: 1, batch_size: 8}\n  objective",
    )
    text = path.read_text().replace(
        "  evaluator: {max_epochs: 1, batch_size: 8}\n",
        "  evaluator: {<<: *train, max_epochs: 2}\n",
    )
    path.write_text(text)
    assert run_check(path, capsys) == (0, "")
    assert load(path)["fullytrain"]["evaluator"]["max_epochs"] == 2  # the explicit key wins


ALIAS_BOMB = """\
a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]
b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]
c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]
d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]
e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]
f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e]
g: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f]
h: &h [*g, *g, *g, *g, *g, *g, *g, *g, *g]
i: &i [*h, *h, *h, *h, *h, *h, *h, *h, *h]
pipeline: [search]
search:
  workdir: w
  space: {name: mnasnet}
  data: {name: random}
  seed: *i
"""


def test_an_alias_bomb_is_refused_at_once(tmp_path):
    """20 lines that expand to 387 million strings: refused in the time it takes to start."""
    import subprocess
    import sys
    import time

    path = tmp_path / "bomb.yaml"
    path.write_text(ALIAS_BOMB)
    root = Path(__file__).resolve().parents[1]
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "nasx.cli", "run", str(path), "--check"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**__import__("os").environ, "PYTHONPATH": str(root)},
    )
    assert time.monotonic() - started < 60
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr == (
        f"nasx run: error: {path}: line 6: aliases expand to more than 100000 values (an alias "
        "bomb?); a pipeline file holds far fewer\n"
    )


def test_a_huge_rejected_value_is_not_spelled_out():
    """What validate() rejects may be an expanded bomb built in Python: the message stays short."""
    import time

    bomb: list = ["lol"] * 9
    for _ in range(8):
        bomb = [bomb] * 9  # 9**9 strings, all shared
    started = time.monotonic()
    with pytest.raises(PipelineError, match=r"search.seed: must be a non-negative integer") as err:
        validate(base(seed=bomb))
    assert time.monotonic() - started < 5 and len(str(err.value)) < 300


def test_recursive_aliases_are_refused(tmp_path, capsys):
    path = tmp_path / "loop.yaml"
    path.write_text("pipeline: &p [search, *p]\n")
    code, err = run_check(path, capsys)
    assert code == 1 and "line 1: an alias refers to itself" in err


def test_duplicate_keys_are_refused_with_both_lines(tmp_path, capsys):
    path = tiny_variant(
        tmp_path,
        "  evaluator: {max_epochs: 1, batch_size: 8}\n  objective",
        "  evaluator: {max_epochs: 1, batch_size: 8}\n  seed: 1\n  seed: 2\n  objective",
    )
    code, err = run_check(path, capsys)
    assert code == 1
    assert f"{path}: line 11: duplicate key 'seed' (first at line 10)" in err
    nested = tiny_variant(
        tmp_path,
        "{max_epochs: 1, batch_size: 8}\n  objective",
        "{max_epochs: 1, max_epochs: 3}\n  objective",
        "nested.yaml",
    )
    code, err = run_check(nested, capsys)
    assert code == 1 and "line 9: duplicate key 'max_epochs' (first at line 9)" in err


def test_a_file_that_is_not_utf8_text_or_is_a_directory_is_one_line(tmp_path, capsys):
    binary = tmp_path / "model.yaml"
    binary.write_bytes(b"pipeline: [search]\n# caf\xe9 in Latin-1\n")
    code, err = run_check(binary, capsys)
    assert code == 1
    assert (
        err == f"nasx run: error: {binary}: not a UTF-8 text file (byte 0xe9 at offset 24); "
        "a pipeline is a YAML text file\n"
    )
    code, err = run_check(tmp_path, capsys)
    assert code == 1
    assert (
        err
        == f"nasx run: error: {tmp_path} is a directory: give the pipeline's YAML file inside it\n"
    )
    code, err = run_check(tmp_path / "absent.yaml", capsys)
    assert code == 1 and "absent.yaml: no such pipeline file" in err


def test_when_every_trial_fails_run_says_so_with_their_error(tmp_path, monkeypatch, capsys):
    """40 random classes for a 4-class model: every trial fails inside its training step."""
    monkeypatch.chdir(tmp_path)
    both = tiny_variant(
        tmp_path,
        "num_samples: 16, num_classes: 4",
        "num_samples: 8, num_classes: 40",
    )
    both.write_text(both.read_text().replace("max_trials: 2", "max_trials: 1"))
    assert main(["run", str(both), "--quiet"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert (
        err.startswith(
            "nasx run: error: search: no trial succeeded in nasx_experiments/tiny-search (1 failed): "
            "IndexError: Target "
        )
        and "out of bounds. (trial 0); fullytrain not run" in err
    )
    # the search step alone: `nasx run` has no best arch to print and says why
    alone = tmp_path / "alone.yaml"
    alone.write_text(both.read_text().replace("tiny-search", "tiny-search-2"))
    assert main(["run", str(alone), "--quiet", "--steps", "search"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "IndexError: Target " in err and "(trial 0)" in err
    assert "`nasx show nasx_experiments/tiny-search-2` has the full errors" in err

    # fullytrain alone, from that stored search: the same errors, not stage 2's bare ValueError
    assert main(["run", str(both), "--quiet", "--steps", "fullytrain"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert err.startswith(
        "nasx run: error: fullytrain: no trial succeeded in nasx_experiments/tiny-search (1 failed): "
        "IndexError: Target "
    ) and err.endswith("; nothing to train\n")
