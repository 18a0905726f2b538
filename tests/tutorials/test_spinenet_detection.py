"""Runs tutorials/spinenet_detection.py in its fast mode (NASX_FAST=1) and checks what it reports."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow  # end to end: make test-slow runs it (and CI)
def test_spinenet_detection_fast_mode(tmp_path):
    # Fashion-MNIST objects when installed, else CIFAR-10, else scikit-learn's digits (a dev
    # dependency): the tutorial always has data
    env = {
        **os.environ,
        "NASX_FAST": "1",
        "OMP_NUM_THREADS": "1",
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    out = subprocess.run(
        [sys.executable, "-W", "error", str(ROOT / "tutorials" / "spinenet_detection.py")],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    text = out.stdout
    assert "FAST smoke run" in text
    assert re.search(
        r"data: (Fashion-MNIST|CIFAR-10|digits) objects on 64x64 canvases, 8 training", text
    )
    assert "space: 41 choices" in text
    assert "search: max_trials (2) reached" in text
    trials = re.findall(r"trial \d: mAP ([0-9.]+) mAP@50 ([0-9.]+)", text)
    assert len(trials) == 2 and all(0 <= float(a) <= float(b) <= 1 for a, b in trials)
    assert re.search(r"SpineNet-49 \(published arch\): mAP [0-9.]+, mAP@50 [0-9.]+", text)
    assert re.search(r"searched arch: mAP [0-9.]+, mAP@50 [0-9.]+, [0-9.]+ M backbone params", text)
    assert re.search(r"searched minus baseline: mAP [+-][0-9.]+", text)
    # both trained detectors' boxes, drawn to a file it names (matplotlib: a dev dependency)
    figure = re.search(r"figure of both detectors' boxes .*: (\S+\.png)$", text, re.M)
    assert figure and Path(figure[1]).stat().st_size > 10_000
