"""Stage 2: top archs of a finished search retrained as a second experiment that records origins."""

from __future__ import annotations

import json

import pytest

from nasx.evaluator.cost import CostEvaluator
from nasx.experiment import NasExperiment
from nasx.experiment.results.second_stage import FixedArchs, stage2, top_archs
from nasx.strategy import GridSearch

from .helpers import SmallNet, reference_metric, width_metric


@pytest.fixture
def search(tmp_path):
    exp = NasExperiment(
        SmallNet(),
        CostEvaluator(width_metric, (4,)),
        GridSearch(shuffle=False),
        workdir=tmp_path / "search",
        progress=False,
    )
    exp.run()
    return exp


def test_stage2_from_a_workdir_records_where_each_arch_came_from(search, tmp_path):
    full = stage2(
        tmp_path / "search",
        lambda model: 2 * width_metric(model),
        top_k=3,
        seeds=2,
        model_space=SmallNet(),
        progress=False,
    )
    assert full.workdir == tmp_path / "search-stage2"
    trials = full.trials()
    best = sorted(search.trials(), key=lambda t: -t.metric)[:3]
    assert [t.arch for t in trials] == [b.arch for b in best for _ in range(2)]
    by_id = {t.id: t for t in search.trials()}
    for t in trials:
        assert t.metric == 2 * reference_metric(t.arch)
        source = by_id[int(t.metrics["source_trial"])]
        assert source.arch == t.arch
    record = json.loads((full.workdir / "stage2.json").read_text())
    assert record["source"] == str((tmp_path / "search").resolve())
    assert [(r["source_trial"], r["repeat"], r["seed"]) for r in record["trials"][:2]] == [
        (best[0].id, 0, 0),
        (best[0].id, 1, 1),
    ]


def test_rank_by_another_metric_and_by_a_pareto_front(search):
    # fewest MACs first: width 2 (two archs, act relu/tanh)
    picked = top_archs(search, 2, rank_by="macs", direction="minimize")
    assert [a["width"] for a, _, _ in picked] == [2, 2]
    front = top_archs(search, 5, pareto=["default", "-macs"])
    assert sorted((a["width"], a["act"]) for a, _, _ in front) == [(2, 1), (4, 1), (8, 1)]
    with pytest.raises(ValueError, match="no succeeded trial has the metric 'energy'"):
        top_archs(search, 2, rank_by="energy")


def test_errors_and_resume(search, tmp_path):
    with pytest.raises(ValueError, match="needs model_space="):
        stage2(tmp_path / "search", width_metric)
    with pytest.raises(ValueError, match="at least 1"):
        stage2(search, width_metric, seeds=0)
    exp = stage2(search, width_metric, top_k=1, workdir=tmp_path / "s2", run=False, progress=False)
    exp.run()
    again = stage2(
        search, width_metric, top_k=1, workdir=tmp_path / "s2", resume=True, progress=False
    )
    assert len(again.trials()) == 1  # nothing left to train
    s = FixedArchs([{"a": 1}, {"a": 2}])
    s.setup({}, trials=[object()])
    assert s.propose() == {"a": 2} and s.propose() is None
