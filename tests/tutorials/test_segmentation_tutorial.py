"""Runs tutorials/segmentation.py in its fast mode (--fast) and checks what it reports."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow  # end to end: make test-slow runs it (and CI)
def test_segmentation_tutorial_fast_mode(tmp_path):
    # Fashion-MNIST objects when installed, else CIFAR-10, else scikit-learn's digits (a dev
    # dependency): the tutorial always has data
    env = {
        **os.environ,
        "OMP_NUM_THREADS": "1",
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    out = subprocess.run(
        [sys.executable, "-W", "error", str(ROOT / "tutorials" / "segmentation.py"), "--fast"],
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
        r"data: (Fashion-MNIST|CIFAR-10|digits) objects on 32x32 canvases, 8 training and 4 "
        r"validation images, 11 classes with the background",
        text,
    )
    floor = re.search(r"background everywhere: mIoU ([0-9.]+), pixel accuracy ([0-9.]+)", text)
    assert floor and 0 < float(floor[1]) < float(floor[2]) < 1
    assert "space: 3 choices" in text
    assert "search: max_trials (2) reached" in text
    trials = re.findall(
        r"trial \d: mIoU ([0-9.]+), pixel accuracy ([0-9.]+), ([0-9.]+) k params", text
    )
    assert len(trials) == 2 and all(
        0 <= float(m) <= 1 and 0 <= float(a) <= 1 and float(p) > 0 for m, a, p in trials
    )
    assert re.search(r"best arch: \{'width': \d+, 'block1': '\w+', 'block2': '\w+'\}", text)
    # the best trained model's masks, drawn to a file it names (matplotlib: a dev dependency)
    figure = re.search(r"figure of the best model's masks .*: (\S+\.png)$", text, re.M)
    assert figure and Path(figure[1]).stat().st_size > 10_000
