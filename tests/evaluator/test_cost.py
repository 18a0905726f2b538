"""CostEvaluator: metrics dict, objective, latency modes, arch/report forwarding, pickling."""

from __future__ import annotations

import pickle

import pytest
import torch
import torch.nn as nn

from nasx.evaluator.base import Evaluator
from nasx.evaluator.cost import CostEvaluator
from nasx.hardware.predictor import LatencyTable


class WithArch(Evaluator):
    direction = "minimize"

    def evaluate(self, model, report=None, arch=None):
        if report is not None:
            report(1.0)
        return {"default": float(arch["w"]), "loss": 0.25}


def test_metrics_dict_keeps_inner_metrics_and_direction():
    reports = []
    ev = CostEvaluator(WithArch(), (3,))
    assert ev.direction == "minimize"  # no objective: the inner evaluator's
    m = ev.evaluate(nn.Linear(3, 2), report=reports.append, arch={"w": 7})
    assert m == {"default": 7.0, "accuracy": 7.0, "loss": 0.25, "params": 8, "macs": 6, "flops": 12}
    # each report carries the cost too, so a scheduler can rank or limit on it (issue 31)
    assert reports == [{"default": 1.0, "accuracy": 1.0, "params": 8, "macs": 6, "flops": 12}]


def test_measured_and_predicted_latency():
    ev = CostEvaluator(lambda m: 0.5, (4,), latency="measure", latency_options={"repeats": 2})
    m = ev.evaluate(nn.Linear(4, 4))
    assert m["latency_ms"] > 0
    table = LatencyTable(warmup=0, repeats=2)
    table.entries = {"Linear(in_features=4, out_features=4, bias=True)@1x4": 0.125}
    ev = CostEvaluator(lambda m: 0.5, (4,), latency=table, objective=lambda m: -m["latency_ms"])
    assert ev.direction == "maximize"
    assert ev.evaluate(nn.Linear(4, 4))["default"] == -0.125
    assert pickle.loads(pickle.dumps(ev)).input_shape == (4,)


def test_bad_arguments():
    with pytest.raises(ValueError, match="'measure'"):
        CostEvaluator(lambda m: 0.0, (2,), latency="predict")
    with pytest.raises(TypeError, match="objective must be"):
        CostEvaluator(lambda m: 0.0, (2,), objective=3)


def test_lightning_classification_reports_a_metrics_dict():
    import torch
    from torch.utils.data import DataLoader, TensorDataset

    from nasx.evaluator import Classification

    x = torch.randn(32, 4)
    y = (x[:, 0] > 0).long()
    data = DataLoader(TensorDataset(x, y), batch_size=16)
    inner = Classification(
        learning_rate=0.1,
        train_dataloaders=data,
        val_dataloaders=data,
        max_epochs=2,
        accelerator="cpu",
        enable_progress_bar=False,
        logger=False,
        enable_checkpointing=False,
        enable_model_summary=False,
    )
    m = CostEvaluator(inner, (4,), latency="measure", latency_options={"repeats": 3}).evaluate(
        nn.Linear(4, 2)
    )
    assert set(m) == {"default", "accuracy", "params", "macs", "flops", "latency_ms"}
    assert m["default"] == m["accuracy"] and 0.0 <= m["accuracy"] <= 1.0
    assert (m["params"], m["macs"], m["flops"]) == (10, 8, 16) and m["latency_ms"] > 0


def test_with_cost_turns_a_lightning_evaluator_into_a_metrics_dict():
    from torch.utils.data import DataLoader, TensorDataset

    from nasx.evaluator import Classification

    x = torch.randn(32, 4)
    data = DataLoader(TensorDataset(x, (x[:, 0] > 0).long()), batch_size=16)
    ev = Classification(
        train_dataloaders=data,
        val_dataloaders=data,
        max_epochs=1,
        accelerator="cpu",
        enable_progress_bar=False,
    ).with_cost((4,))
    assert isinstance(ev, CostEvaluator) and ev.direction == "maximize"
    metrics = ev.evaluate(nn.Linear(4, 2))
    assert set(metrics) == {"default", "accuracy", "params", "macs", "flops"}
    assert metrics["default"] == metrics["accuracy"] and 0 <= metrics["accuracy"] <= 1
    assert (metrics["params"], metrics["macs"], metrics["flops"]) == (10, 8, 16)
