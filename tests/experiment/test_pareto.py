"""Pareto fronts over trial metrics, their export, and a cost-aware experiment end to end."""

from __future__ import annotations

import csv
import json

import pytest

from nasx.evaluator.cost import CostEvaluator
from nasx.experiment import NasExperiment
from nasx.experiment.filters import CostFilter
from nasx.experiment.results.pareto import export_front, pareto_front, parse_objectives
from nasx.hardware.reward import MnasNetReward
from nasx.strategy import GridSearch
from nasx.trial import Trial

from .helpers import SmallNet, width_metric


def trial(i, acc, lat, status="succeeded"):
    return Trial(i, {"i": i}, status, metric=acc, metrics={"default": acc, "lat": lat})


def brute_force_front(trials, signs):
    """Reference: a trial is kept unless another is no worse everywhere and better somewhere."""
    done = [t for t in trials if t.status == "succeeded"]

    def vec(t):
        return [s * t.metrics[k] for k, s in signs.items()]

    keep = []
    for t in done:
        dominated = any(
            all(a <= b for a, b in zip(vec(o), vec(t))) and vec(o) != vec(t) for o in done
        )
        if not dominated and not any(vec(k) == vec(t) for k in keep):
            keep.append(t)
    return sorted(t.id for t in keep)


def test_front_matches_brute_force_on_random_points():
    import random

    rng = random.Random(0)
    for _ in range(20):
        ts = [trial(i, rng.randint(0, 5) / 5, rng.randint(1, 6)) for i in range(25)]
        ts.append(trial(99, 1.0, 0.5, status="failed"))
        got = [t.id for t in pareto_front(ts, {"default": "maximize", "lat": "minimize"})]
        assert got == brute_force_front(ts, {"default": -1, "lat": 1})


def test_objectives_parsing_and_errors():
    assert parse_objectives(["acc", "-lat"]) == {"acc": "maximize", "lat": "minimize"}
    with pytest.raises(ValueError, match="direction must be one of"):
        parse_objectives({"acc": "up"})
    with pytest.raises(ValueError, match="no succeeded trial has all of"):
        pareto_front([trial(0, 0.5, 1.0)], ["energy"])


def test_export_csv_and_json(tmp_path):
    ts = [trial(0, 0.7, 5.0), trial(1, 0.6, 6.0), trial(2, 0.8, 9.0)]
    export_front(ts, ["default", "-lat"], tmp_path / "front.csv")
    with (tmp_path / "front.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert [r["id"] for r in rows] == ["0", "2"]
    assert json.loads(rows[1]["arch"]) == {"i": 2} and float(rows[1]["lat"]) == 9.0
    export_front(ts, ["default", "-lat"], tmp_path / "front.json")
    data = json.loads((tmp_path / "front.json").read_text())
    assert data["objectives"] == {"default": "maximize", "lat": "minimize"}
    assert [t["id"] for t in data["front"]] == [0, 2]
    with pytest.raises(ValueError, match=r"\.csv or \.json"):
        export_front(ts, ["default"], tmp_path / "front.txt")


def test_cost_aware_experiment_reward_filter_and_front(tmp_path):
    # SmallNet: 4 -> width -> 1, MACs = 4*width + width (+ act's 0) = 5 * width
    evaluator = CostEvaluator(
        width_metric,
        input_shape=(4,),
        objective=MnasNetReward(target=20.0, cost="macs", constraint="hard"),
    )
    exp = NasExperiment(
        SmallNet(),
        evaluator,
        GridSearch(shuffle=False),
        workdir=tmp_path,
        filter=CostFilter((4,), macs=(None, 25)),  # width 8 (40 MACs) is rejected before training
        progress=False,
    )
    exp.run()
    rejected = exp.trials("rejected")
    assert {t.arch["width"] for t in rejected} == {8}
    assert rejected[0].error == "rejected by CostFilter: macs 40 above 25"
    done = exp.trials("succeeded")
    for t in done:
        w = t.arch["width"]
        acc = w + 0.5 * t.arch["act"]
        assert t.metrics["accuracy"] == acc
        assert t.metrics["macs"] == 5 * w and t.metrics["flops"] == 10 * w
        assert t.metrics["params"] == 4 * w + w + w + 1
        assert t.metric == pytest.approx(acc * (1.0 if 5 * w <= 20 else 20 / (5 * w)))
    front = exp.pareto_front(["accuracy", "-macs"])
    # acc grows with width and act; macs with width: the best act at each width
    assert sorted((t.arch["width"], t.arch["act"]) for t in front) == [(2, 1), (4, 1)]
