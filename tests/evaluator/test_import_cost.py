"""`import nasx.evaluator` must not import pytorch_lightning until a Lightning name is used."""

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _modules_after(code):
    out = subprocess.run(
        [sys.executable, "-c", code + "\nimport sys; print(' '.join(sorted(sys.modules)))"],
        cwd=REPO,
        env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    return set(out.stdout.split())


def test_import_is_light_until_a_lightning_name_is_used():
    light = _modules_after(
        "import nasx, nasx.evaluator\nfrom nasx.evaluator import FunctionalEvaluator"
    )
    assert "pytorch_lightning" not in light and "lightning" not in light
    assert "torch" not in light
    heavy = _modules_after("from nasx.evaluator import Classification")
    assert "pytorch_lightning" in heavy


def test_lazy_names_resolve():
    import nasx.evaluator as ev
    from nasx.evaluator import lightning, supervised

    assert ev.Lightning is lightning.Lightning and ev.Regression is supervised.Regression
    assert set(ev.__all__) <= set(dir(ev))
