"""Follow one trial from proposal to stored result, as a newcomer reading the code would: which
nasx modules it passes through, and how often the reading switches between files.

A one-trial ``NasExperiment`` (sequential, a plain function evaluator, no scheduler) runs under
a tracer that records every call into a nasx module (not torch's). It prints the modules of
``nasx.experiment`` and the other nasx modules the trial passes through, and the number of
switches from one file to another along the calls (issue 47's count; the goal: at most half of
what it was).

    PYTHONPATH=. python benchmarks/trial_walk.py
"""

from __future__ import annotations

import sys
import tempfile
from collections import Counter
from pathlib import Path

import torch.nn as nn

ROOT = str(Path(__file__).resolve().parents[1] / "nasx")
# what the trial's own path runs through; the facade's set-up and end-of-run summary are not
# part of one trial's walk, and neither are the space, strategy and evaluator (user code)
SKIP = ("nasx/space/", "nasx/strategy/", "nasx/evaluator/", "nasx/_", "nasx/plot/")


def walk(whole_run: bool) -> tuple[list[str], int, Counter[str]]:
    """The nasx modules one trial passes through in order of first entry, and the number of
    file switches between calls: from the first proposal to the stored result (the trial loop's
    ``run``), or for the whole ``NasExperiment.run()`` (``whole_run``: the facade opening the
    store, setting up and summing up too)."""
    from nasx.experiment import NasExperiment
    from nasx.experiment.loop import trial_loop as loop_module
    from nasx.space import ModelSpace, choice
    from nasx.strategy import Random

    class Net(ModelSpace):
        def __init__(self) -> None:
            super().__init__()
            self.fc = nn.Linear(4, choice("width", [8, 16]))

    modules: list[str] = []
    entries: Counter[str] = Counter()  # how often the reading enters each file
    switches = 0
    last: list[str | None] = [None]
    recording = [whole_run]

    def tracer(frame, event, arg):  # noqa: ANN001, ANN202 - sys.settrace's signature
        nonlocal switches
        if event != "call":
            return None
        path = frame.f_code.co_filename
        if not path.startswith(ROOT) or not recording[0]:
            return None
        rel = "nasx" + path[len(ROOT) :]
        if any(rel.startswith(s) for s in SKIP):
            return None
        if rel not in modules:
            modules.append(rel)
        if rel != last[0]:
            switches += 1
            entries[rel] += 1
            last[0] = rel
        return None

    run = loop_module.TrialLoop.run

    def traced_run(self, *args, **kwargs):  # noqa: ANN001, ANN202
        recording[0] = True
        try:
            return run(self, *args, **kwargs)
        finally:
            recording[0] = whole_run

    loop_module.TrialLoop.run = traced_run  # type: ignore[method-assign]
    exp = NasExperiment(
        Net(),
        lambda model: 1.0,
        Random(seed=0),
        workdir=tempfile.mkdtemp(),
        max_trials=1,
        progress=False,
    )
    sys.settrace(tracer)
    try:
        exp.run()
    finally:
        sys.settrace(None)
        loop_module.TrialLoop.run = run  # type: ignore[method-assign]
    return modules, switches, entries


def main() -> int:
    for whole_run, what in ((False, "the trial loop"), (True, "NasExperiment.run()")):
        modules, switches, entries = walk(whole_run)
        inside = [m for m in modules if m.startswith("nasx/experiment/")]
        print(
            f"{what}: one trial passes through {len(modules)} nasx modules ({len(inside)} of "
            f"nasx/experiment/), {switches} switches between files:"
        )
        for m in modules:
            print(f"  {m:45} entered {entries[m]:3d} times")
    return 0


if __name__ == "__main__":
    sys.exit(main())
