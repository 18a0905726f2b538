"""The hub depends only on nasx.space: importing it loads no strategy, evaluator or Lightning."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_hub_imports_only_space():
    code = (
        "import sys, nasx.hub; "
        "bad = sorted(m for m in sys.modules if m.startswith(('nasx.strategy', 'nasx.evaluator', "
        "'nasx.experiment', 'pytorch_lightning', 'lightning', 'optuna'))); print(bad)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(ROOT), "PATH": ""},
        check=True,
    )
    assert out.stdout.strip() == "[]"
