"""Importing the one-shot strategies stays light: Lightning loads only when a search runs."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def test_strategy_names_do_not_import_lightning():
    code = (
        "import sys; from nasx.strategy import DARTS, GumbelDARTS, ENAS, RandomOneShot, Proxyless; "
        "import nasx.strategy.oneshot; print('pytorch_lightning' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(ROOT), "PATH": ""},
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"
