"""DDP on CPU (gloo, 2 processes): architecture parameters (DARTS and Proxyless alphas, the ENAS
controller) and model weights stay identical on every rank."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.slow
def test_ddp_two_processes_keep_identical_architecture(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PL_DISABLE_FORK": "1"}
    proc = subprocess.run(
        [sys.executable, str(Path(__file__).with_name("ddp_script.py")), str(tmp_path)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    for name in ("darts", "proxyless", "enas"):
        r0, r1 = (torch.load(tmp_path / f"{name}_rank{r}.pt", weights_only=False) for r in (0, 1))
        assert r0["steps"] == r1["steps"] == 6
        assert r0["arch"] == r1["arch"]
        for key, alpha in r0["alphas"].items():
            assert torch.equal(alpha, r1["alphas"][key]), key
        if name != "enas":  # they did move: the test is not vacuous. (Not every label need move
            # far in 6 steps: Proxyless's two-path update moves a pair and keeps the rest.)
            assert max(float(a.abs().max()) for a in r0["alphas"].values()) > 1e-2
        for key, w in r0["weights"].items():
            assert torch.equal(w, r1["weights"][key]), key
