"""Runs tutorials/hello_nas.py in its fast mode (NASX_FAST=1) and checks what it reports."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _has_fashion_mnist() -> bool:
    from nasx.datasets import DataNotFoundError, fashion_mnist

    try:
        fashion_mnist("test")
    except DataNotFoundError:
        return False
    return True


@pytest.mark.slow  # end to end: make test-slow runs it (and CI)
@pytest.mark.skipif(
    not _has_fashion_mnist(),
    reason="Fashion-MNIST is not installed (Debian package dataset-fashion-mnist)",
)
def test_hello_nas_fast_mode(tmp_path):
    env = {
        **os.environ,
        "NASX_FAST": "1",
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    out = subprocess.run(
        [sys.executable, str(ROOT / "tutorials" / "hello_nas.py")],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    text = out.stdout
    assert "data: Fashion-MNIST" in text
    assert "search: max_trials (4) reached" in text
    assert text.count("succeeded") == 4  # the trial table
    best = re.search(r"best arch: (\{.*\}) \(search accuracy ([0-9.]+)%", text)
    accuracy = float(re.search(r"test accuracy ([0-9.]+)%", text).group(1))
    assert best and 0.0 <= accuracy <= 100.0
    assert "FAST smoke run" in text  # a fast-mode number says it means nothing
    # progress from the first trial on, one line per trial when output is not a terminal
    assert out.stderr.count(" succeeded: metric ") == 4, out.stderr[-2000:]
    # the run's summary after it names the best trial (nasx.experiment.results.summary)
    workdir = re.search(r"experiment in (\S+)", text).group(1)
    assert f"4 trials in {workdir}: 4 succeeded" in out.stderr
    assert re.search(r"^best: trial \d, metric 0\.\d{4} \(maximize\), arch \{", out.stderr, re.M)
    # it ends with its chart, written to a file it names, and the commands that show the trials
    chart = re.search(r"chart of the search .*: (\S+)$", text, re.M).group(1)
    assert chart == f"{workdir}/search_history.png" and Path(chart).stat().st_size > 10_000
    last = text.strip().splitlines()[-2:]
    assert re.fullmatch(rf"  \S*nasx\S*( -m nasx\.cli)? show {re.escape(workdir)} .*", last[0])
    assert re.fullmatch(rf"  \S*nasx\S*( -m nasx\.cli)? serve {re.escape(workdir)} .*", last[1])
