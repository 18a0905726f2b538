"""Lightning's INFO lines never reach a user of nasx's evaluators and one-shot strategies unless
asked for (issue 32): run as a script would, in a child process, reading what it prints."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from .conftest import REPO_ROOT

SEARCH = """
    import logging, torch
    from nasx.experiment import NasExperiment
    from nasx.strategy import DARTS
    from tests.strategy.oneshot.toys import ToySpace, toy_evaluator
    {ask}  # after Lightning's import, which sets its own level
    torch.manual_seed(0)
    evaluator = toy_evaluator(epochs=1, enable_progress_bar=True)
    NasExperiment(ToySpace(), evaluator, DARTS(), workdir={workdir!r}, progress=False).run()
    evaluator.fit(ToySpace().freeze({{"op": "linear", "pick": [0]}}))  # NNI's evaluator.fit
    print("done")
"""


def _run(tmp_path, ask: str = "") -> str:
    code = textwrap.dedent(SEARCH.format(ask=ask, workdir=str(tmp_path / "w")))
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        env={"PYTHONPATH": str(REPO_ROOT), "PATH": "/usr/bin:/bin"},
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout + result.stderr


def test_lightning_info_lines_are_quiet_unless_asked_for(tmp_path):
    quiet = _run(tmp_path)
    assert "done" in quiet
    assert "`Trainer.fit` stopped" not in quiet and "GPU available" not in quiet
    asked = _run(
        tmp_path / "asked", 'logging.getLogger("pytorch_lightning").setLevel(logging.DEBUG)'
    )
    assert "`Trainer.fit` stopped" in asked
