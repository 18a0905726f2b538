"""Importing the experiment and strategy packages stays light: no Lightning, Optuna or Ray."""

from __future__ import annotations

import subprocess
import sys


def test_experiment_import_is_light():
    code = (
        "import sys; from nasx.experiment import NasExperiment; from nasx.strategy import Random, "
        "RegularizedEvolution, GridSearch, PolicyGradient; import nasx; "
        "heavy = [m for m in ('pytorch_lightning', 'lightning', 'optuna', 'ray') if m in sys.modules]; "
        "print(heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
