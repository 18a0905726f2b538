"""A small real experiment for the CLI, plot and dashboard tests: a Cell space with NNI's labels
(``normal/op_2_0`` ...), scored by a known formula (no training), with intermediate metrics, a
second metric and a deliberate failure, so every chart and table has something to show."""

from __future__ import annotations

import sys
from pathlib import Path

import torch.nn as nn

from nasx.experiment import NasExperiment
from nasx.space import Cell, ModelSpace, choice
from nasx.strategy import Random

OPS = {
    "conv": lambda node, op, inp: nn.Conv2d(2, 2, 1),
    "skip": lambda node, op, inp: nn.Identity(),
}


class ToyCells(ModelSpace):
    def __init__(self):
        super().__init__()
        self.width = choice("width", [8, 16, 32])
        self.normal = Cell(OPS, num_nodes=2, num_ops_per_node=2, num_predecessors=2, label="normal")
        self.reduce = Cell(OPS, num_nodes=2, num_ops_per_node=2, num_predecessors=2, label="reduce")


def score(model, report):
    convs = sum(isinstance(m, nn.Conv2d) for m in model.modules())
    if model.width == 16 and convs <= 4:
        raise RuntimeError("<script>alert('boom')</script> simulated failure")
    acc = 0.5 + model.width / 100 + convs / 50
    for epoch in range(1, 4):
        report(acc * epoch / 3)
    return {"default": acc, "latency_ms": model.width * (1 + convs) / 10}


def make_experiment(
    workdir: str | Path, max_trials: int = 6, seed: int = 0, **kwargs
) -> NasExperiment:
    exp = NasExperiment(
        ToyCells(), score, Random(seed=seed), workdir=workdir, max_trials=max_trials, **kwargs
    )
    exp.run()
    return exp


if (
    __name__ == "__main__"
):  # python tests/toy_experiment.py WORKDIR N [CRASH_AT]: used by the resume test
    import os

    workdir, n = sys.argv[1], int(sys.argv[2])
    crash_file = Path(workdir + ".crash")

    def crashing(model, report):
        if crash_file.exists() and len(list(Path(workdir, "trials").iterdir())) >= 3:
            os._exit(3)  # a hard crash in the middle of trial 2
        return score(model, report)

    NasExperiment(
        ToyCells(), crashing, Random(seed=0), workdir=workdir, max_trials=n, resume=True
    ).run()
