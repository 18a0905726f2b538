"""Supernets across processes (gloo, 2 CPU processes under Lightning DDP): DARTS and RandomOneShot
keep the same weights and architecture parameters on both ranks, and end where one process ends
with the same global batch (the ranks' gradients are averaged, so a step sees the same samples)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[3]
SCRIPT = Path(__file__).with_name("ddp_equivalence_script.py")


def _run(out: Path, mode: str) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PL_DISABLE_FORK": "1", "OMP_NUM_THREADS": "1"}
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), str(out), mode],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]


@pytest.mark.slow
def test_two_ranks_match_each_other_and_one_process_with_the_same_global_batch(tmp_path):
    _run(tmp_path, "ddp")
    _run(tmp_path, "single")
    for name in ("darts", "random"):
        r0, r1, single = (
            torch.load(tmp_path / f"{name}_{mode}_rank{r}.pt", weights_only=False)
            for mode, r in (("ddp", 0), ("ddp", 1), ("single", 0))
        )
        assert r0["steps"] == r1["steps"] == single["steps"] == 6
        assert r0["arch"] == r1["arch"] == single["arch"]
        for key, w in r0["weights"].items():
            assert torch.equal(w, r1["weights"][key]), (name, key)  # synchronised exactly
            # one process: the same sums in another order, so equal up to rounding
            torch.testing.assert_close(w, single["weights"][key], rtol=1e-4, atol=1e-5)
        if name == "darts":  # the alphas moved: the comparison is not vacuous
            assert max(alpha.abs().max() for alpha in r0["alphas"].values()) > 1e-2
        for key, alpha in r0["alphas"].items():
            assert torch.equal(alpha, r1["alphas"][key]), (name, key)
            torch.testing.assert_close(alpha, single["alphas"][key], rtol=1e-4, atol=1e-5)
