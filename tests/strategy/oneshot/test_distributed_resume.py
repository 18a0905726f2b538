"""A supernet search on 2 gloo ranks (Lightning DDP, CPU) whose rank 1 is SIGKILLed mid-epoch: the
job fails, and the restarted job resumes from the one-shot checkpoint (the last epoch end: its
epoch, search step and architecture parameters) and ends where an uninterrupted run ends."""

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[3]
SCRIPT = Path(__file__).with_name("ddp_resume_script.py")
EPOCHS, BATCHES = 3, 4  # as in the script


def _job(workdir: Path, out: Path, *kill: int) -> subprocess.CompletedProcess:
    """One launch of the 2-rank job (rank 0 here, rank 1 started by Lightning), in its own
    process group so that a hung rank can be cleaned up whatever happens."""
    out.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PL_DISABLE_FORK": "1", "OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen(
        [sys.executable, str(SCRIPT), str(workdir), str(out), *map(str, kill)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        stdout, stderr = proc.communicate(timeout=240)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        stdout, stderr = proc.communicate()
        pytest.fail(f"the job hung after a rank died:\n{stderr[-3000:]}")
    finally:
        try:  # a rank left behind (the killed job's rank 0 or 1) must not outlive the test
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)


def _ckpt_alphas(path: Path) -> dict[str, torch.Tensor]:
    state = torch.load(path, weights_only=False, map_location="cpu")["state_dict"]
    return {k: v for k, v in state.items() if "arch_params" in k}


@pytest.mark.slow
def test_rank_killed_mid_epoch_then_restarted_resumes_from_the_checkpoint(tmp_path):
    # Reference: the same job, never interrupted.
    straight = _job(tmp_path / "straight", tmp_path / "straight-out")
    assert straight.returncode == 0, straight.stderr[-3000:]

    # Rank 1 dies (SIGKILL) at batch 2 of epoch 1: epoch 0's checkpoint exists, epoch 1's not.
    workdir = tmp_path / "killed"
    killed = _job(workdir, tmp_path / "killed-out", 1, 1, 2)
    assert killed.returncode != 0, "the job went on with a rank dead"
    assert not list((tmp_path / "killed-out").glob("rank*.pt"))
    ckpt = workdir / "checkpoints" / "last.ckpt"
    assert ckpt.exists(), killed.stderr[-3000:]
    saved = tmp_path / "at-kill.ckpt"
    shutil.copy(ckpt, saved)  # the restarted job overwrites last.ckpt as it goes
    meta = torch.load(saved, weights_only=False, map_location="cpu")
    assert meta["epoch"] == 0  # written at the end of epoch 0; epoch 1 was under way

    # The job restarted with the same command: every rank resumes from the checkpoint.
    restarted = _job(workdir, tmp_path / "restarted-out")
    assert restarted.returncode == 0, restarted.stderr[-3000:]
    stored_alphas = _ckpt_alphas(saved)
    assert stored_alphas, "no architecture parameters in the checkpoint"
    ref = torch.load(tmp_path / "straight-out" / "rank0.pt", weights_only=False)
    ranks = [
        torch.load(tmp_path / "restarted-out" / f"rank{r}.pt", weights_only=False) for r in (0, 1)
    ]
    for r in ranks:
        assert r["start"]["epoch"] == 1
        assert r["start"]["search_steps"] == BATCHES  # one epoch of steps, not 0
        started = r["start"]["alphas"]
        assert sorted(started) == sorted(
            k.split("arch_params.")[-1].replace("__dot__", ".") for k in stored_alphas
        )
        for key, value in stored_alphas.items():
            name = key.split("arch_params.")[-1].replace("__dot__", ".")
            assert torch.equal(started[name], value), name
        assert r["end"]["search_steps"] == ref["end"]["search_steps"] == EPOCHS * BATCHES
        assert r["arch"] == ref["arch"]
        # The same steps on the same batches from the same state: the same numbers.
        for key, alpha in r["end"]["alphas"].items():
            torch.testing.assert_close(alpha, ref["end"]["alphas"][key], rtol=1e-5, atol=1e-6)
        for key, w in r["weights"].items():
            torch.testing.assert_close(w, ref["weights"][key], rtol=1e-5, atol=1e-6)
    for key, alpha in ranks[0]["end"]["alphas"].items():  # the ranks agree exactly
        assert torch.equal(alpha, ranks[1]["end"]["alphas"][key]), key
