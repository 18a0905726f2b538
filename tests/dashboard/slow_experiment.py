"""An experiment that takes a while (python slow_experiment.py WORKDIR N DELAY), so the browser
test can watch it run. Its label and one value contain HTML, and one trial fails with an error
that contains a script tag: the page must show them as text."""

import sys
import time

import torch.nn as nn

from nasx.experiment import NasExperiment
from nasx.space import ModelSpace, choice
from nasx.strategy import GridSearch

LABEL = "<img src=x onerror=alert(1)>"


class Html(ModelSpace):
    def __init__(self):
        super().__init__()
        self.width = choice(LABEL, ["<b>8", 16, 24, 32, 40, 48, 56, 64, 72, 80, 88, 96])
        self.fc = nn.Linear(2, 2)


def evaluate(model, report):
    time.sleep(DELAY)
    width = 8 if model.width == "<b>8" else model.width
    if width == 24:
        print("<script>window.pwned = 1</script> in the log")
        raise RuntimeError("<script>window.pwned = 1</script>")
    for epoch in (1, 2, 3):
        report(width / 100 * epoch / 3)
    return {"default": width / 100, "latency_ms": width / 4}


if __name__ == "__main__":
    workdir, n, DELAY = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
    NasExperiment(Html(), evaluate, GridSearch(shuffle=False), workdir=workdir, max_trials=n).run()
