"""benchmarks/keep_weights.py runs against today's API (it had drifted: it passed a dict where
``save_in_trial`` takes a Job and a TrialResult, and nothing ran it): the small model's case,
once, and its printed figures are numbers."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "keep_weights.py"


def test_the_keep_weights_benchmark_runs(capsys):
    spec = importlib.util.spec_from_file_location("keep_weights_bench", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.bench("MLP 64-256-10", module.Mlp(), {"width": 256}, repeats=1)
    out = capsys.readouterr().out
    assert re.search(r"keep +[\d.]+ ms +torch.save +[\d.]+ ms +ratio [\d.]+", out), out
    assert re.search(r"load +[\d.]+ ms +freeze\+load +[\d.]+ ms +ratio [\d.]+", out), out
