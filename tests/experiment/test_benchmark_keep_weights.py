"""benchmarks/keep_weights.py runs against today's API (it had drifted: it passed a dict where
``save_in_trial`` takes a Job and a TrialResult, and nothing ran it): the small model's case,
once, and its printed figures are numbers."""

from __future__ import annotations

import re

from tests.benchmark_scripts import benchmark_module


def test_the_keep_weights_benchmark_runs(capsys):
    with benchmark_module("keep_weights.py") as module:
        module.bench("MLP 64-256-10", module.Mlp(), {"width": 256}, repeats=1)
    out = capsys.readouterr().out
    assert re.search(r"keep +[\d.]+ ms +torch.save +[\d.]+ ms +ratio [\d.]+", out), out
    assert re.search(r"load +[\d.]+ ms +freeze\+load +[\d.]+ ms +ratio [\d.]+", out), out
