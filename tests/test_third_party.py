"""Lightning's INFO lines never reach a user of nasx's evaluators and one-shot strategies unless
asked for (issue 32): run as a script would, in a child process, reading what it prints."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from .conftest import REPO_ROOT

# One process, two phases: quiet (the default), then with Lightning's logger asked for DEBUG.
SEARCH = """
    import logging, sys, torch
    from nasx.experiment import NasExperiment
    from nasx.strategy import DARTS
    from tests.strategy.oneshot.toys import ToySpace, toy_evaluator
    torch.manual_seed(0)
    for phase in ("quiet", "asked"):
        if phase == "asked":  # after Lightning's import, which sets its own level
            logging.getLogger("pytorch_lightning").setLevel(logging.DEBUG)
        print(f"--- {{phase}}", file=sys.stderr, flush=True)
        evaluator = toy_evaluator(epochs=1, enable_progress_bar=False)
        NasExperiment(ToySpace(), evaluator, DARTS(), workdir={workdir!r} + phase,
                      progress=False).run()
        evaluator.fit(ToySpace().freeze({{"op": "linear", "pick": [0]}}))  # NNI's evaluator.fit
    print("done", file=sys.stderr, flush=True)
"""


def test_lightning_info_lines_are_quiet_unless_asked_for(tmp_path):
    code = textwrap.dedent(SEARCH.format(workdir=str(tmp_path / "w")))
    result = subprocess.run(
        [sys.executable, "-c", code],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,  # one stream: the phases' lines stay in order
        text=True,
        cwd=REPO_ROOT,
        env={"PYTHONPATH": str(REPO_ROOT), "PATH": "/usr/bin:/bin", "OMP_NUM_THREADS": "1"},
        timeout=600,
    )
    assert result.returncode == 0, result.stdout[-3000:]
    quiet, asked = result.stdout.split("--- quiet")[1].split("--- asked")
    assert "done" in asked
    assert "`Trainer.fit` stopped" not in quiet and "GPU available" not in quiet, quiet[-2000:]
    assert "`Trainer.fit` stopped" in asked
