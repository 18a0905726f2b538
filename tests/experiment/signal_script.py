"""A sequential (or process-pool) experiment of ``N`` trials for the tests that send real signals
(SIGKILL, SIGTERM) to its process:
``python signal_script.py WORKDIR N SLEEP [EXECUTION [PROPOSE_SLEEP]]``.

Each trial prints ``evaluating <width>`` when its evaluation begins and sleeps ``SLEEP`` seconds;
the metric is the width, so every arch has a known result. The strategy takes ``PROPOSE_SLEEP``
seconds per proposal (the driver's own work between trials). It always resumes.
"""

from __future__ import annotations

import sys
import time

import torch.nn as nn

from nasx.experiment import NasExperiment
from nasx.space import ModelSpace, choice
from nasx.strategy import GridSearch


class Widths(ModelSpace):
    def __init__(self, n: int = 60):
        super().__init__()
        self.fc = nn.Linear(1, choice("width", list(range(1, n + 1))))


def slow_width(model) -> float:
    print(f"evaluating {model.fc.out_features}", flush=True)
    time.sleep(SLEEP)
    return float(model.fc.out_features)


class SlowGrid(GridSearch):
    def __init__(self, seconds: float):
        super().__init__(shuffle=False)
        self.seconds = seconds

    def propose(self):
        time.sleep(self.seconds)
        return super().propose()


if __name__ == "__main__":
    workdir, n, SLEEP = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
    execution = sys.argv[4] if len(sys.argv) > 4 else "sequential"
    propose_sleep = float(sys.argv[5]) if len(sys.argv) > 5 else 0.0
    space = Widths(n)
    space.freeze({"width": 1})  # torch's first-call costs before the run, not in a trial
    print("ready", flush=True)
    NasExperiment(
        space,
        slow_width,
        SlowGrid(propose_sleep),
        workdir=workdir,
        resume=True,
        progress=False,
        execution=execution,
    ).run()
    print("done", flush=True)
