"""Lint and format run with the tests, so `make test` (and CI) refuses code that fails them."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PATHS = ["nasx", "tests", "tutorials", "benchmarks", "docs/conf.py", "docs/_ext"]


def ruff() -> list[str]:
    exe = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")
    if exe is None:
        pytest.skip("ruff is not installed (it is in the dev extras: pip install -e '.[dev]')")
    return [exe]


def test_ruff_lint_passes():
    result = subprocess.run(ruff() + ["check", *PATHS], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout[-5000:] + result.stderr[-2000:]


def test_ruff_format_is_applied():
    result = subprocess.run(
        ruff() + ["format", "--check", *PATHS], cwd=ROOT, capture_output=True, text=True
    )
    assert result.returncode == 0, "run `make format`:\n" + result.stdout
