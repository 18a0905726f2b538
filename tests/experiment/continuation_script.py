"""An ASHA search whose evaluator continues promoted trials from their checkpoints and kills
its own process (SIGKILL) once, in the first continued job: ``python continuation_script.py
WORKDIR WHEN``, WHEN ``'training'`` (after one epoch past the checkpoint) or ``'writing'``
(halfway through writing the new state, leaving its temporary file). Each epoch trained is
appended to ``WORKDIR.epochs`` (the test counts them across processes); ``WORKDIR.died`` says
the death happened, so the next run (a resume) goes to the end.
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

from nasx.experiment import NasExperiment
from nasx.experiment.schedulers import ASHA
from tests.experiment.test_scheduled_experiment import CURVES, FromList, Net


def _die(flag: Path) -> None:
    flag.touch()
    os.kill(os.getpid(), signal.SIGKILL)


class KillsOnce:
    def __init__(self, workdir: str, when: str):
        self.workdir, self.when = workdir, when

    def evaluate(self, model, report=None, arch=None, budget=None, checkpoint=None):
        row = CURVES.row(arch)
        state = checkpoint.load()
        start = 0 if state is None else state["epoch"]
        flag = Path(f"{self.workdir}.died")
        dies = start > 0 and not flag.exists()
        for epoch in range(start, budget):
            with open(f"{self.workdir}.epochs", "a") as f:
                f.write(f"{row} {epoch + 1}\n")
            report(CURVES.val[row][epoch])
            if dies and self.when == "training":
                _die(flag)

        def half_then_die(path):
            with open(path, "wb") as f:
                f.write(b"half a state")
            _die(flag)

        if dies and self.when == "writing":
            checkpoint.write(half_then_die)
        checkpoint.save({"epoch": budget})
        return CURVES.val[row][budget - 1]


if __name__ == "__main__":
    workdir, when = sys.argv[1], sys.argv[2]
    NasExperiment(  # as test_fidelity._experiment makes it
        Net(),
        KillsOnce(workdir, when),
        FromList(20),
        workdir=workdir,
        build_model=False,
        progress=False,
        scheduler=ASHA(1, 9, eta=3),
        max_trials=20,
        resume=True,
    ).run()
    print("done", flush=True)
