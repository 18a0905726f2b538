"""benchmarks/multi_fidelity.py in its fast mode: the printed figures agree with the simulator run
directly, with each other, and with the verdicts printed beside them."""

from __future__ import annotations

import re
import statistics

import numpy as np
import pytest

from nasx.experiment.schedulers import ASHA, FullBudget, LearningCurves, simulate
from nasx.strategy import Random, RegularizedEvolution
from tests.benchmark_scripts import benchmark_module


@pytest.fixture(scope="module")
def run():
    with benchmark_module("multi_fidelity.py") as module:
        yield module


def test_fast_mode_prints_consistent_figures(run, capsys):
    found = run.main(["--fast"])
    out = capsys.readouterr().out
    archs = [{"a": a, "b": b, "c": c} for a in range(4) for b in range(4) for c in range(4)]
    curves = LearningCurves.synthetic(archs, epochs=9, seed=0)  # what --fast uses
    blocks = out.split("== ")[1:]
    for workers, block in zip((1, 8), blocks):
        assert block.startswith(f"{workers} simulated worker")
        rows = {
            (line[:18].strip(), line[19:40].strip()): [float(v) for v in line[40:].split()[:7]]
            for line in block.splitlines()
            if line.startswith(("full budget ", "ASHA "))
        }
        ref = float(re.search(r"mean test ([\d.]+)", block).group(1))
        # the reference is full-budget RE's pick at E = 8 trials x 9 epochs, run directly
        direct = statistics.mean(
            simulate(
                FullBudget(9),
                RegularizedEvolution(population_size=4, sample_size=2, seed=s),
                curves,
                workers=workers,
                max_epochs=72,
            ).pick_test
            for s in range(3)
        )
        assert ref == pytest.approx(direct, abs=0.005)
        assert rows[("full budget", "RegularizedEvolution")][-1] == pytest.approx(ref)
        # ASHA + Random at E/3 (24 epochs), read off one long run, equals a run stopped there
        direct = statistics.mean(
            simulate(
                ASHA(1, 9, 3), Random(seed=s), curves, workers=workers, max_epochs=24
            ).pick_test
            for s in range(3)
        )
        assert rows[("ASHA", "Random")][3] == pytest.approx(direct, abs=0.005)
    assert "Optuna" in out
    # every verdict agrees with the numbers on its line
    for line in out.splitlines():
        reach = re.search(r"at (\d+) epochs = .* <= E/3 = (\d+)\)", line)
        if reach:
            assert line.startswith("[met]") == (int(reach.group(1)) <= int(reach.group(2))), line
        busy = re.search(r"lowest seed ([\d.]+)%", line)
        if busy:
            assert line.startswith("[met]") == (float(busy.group(1)) >= 95.0), line
        diffs = re.search(r"differences ((?:[+-][\d.]+ ?)+)", line)
        if diffs:
            met = all(float(d) >= 0 for d in diffs.group(1).split())
            assert line.startswith("[met]") == met or any(  # printed rounding: -0.00
                d == "-0.00" for d in diffs.group(1).split()
            ), line
    assert set(found["reference"]) == {1, 8}


def test_a_mean_curve_that_reaches_the_reference_and_falls_back_does_not_stay(run):
    # epochs 0..9: no pick at 0, the reference (5) first reached at 3, lost at 5, held from 6
    curve = np.array([np.nan, 1, 2, 5, 5, 3, 5, 5, 5, 5])
    assert run.reaches(curve, 5.0, 1) == 3
    assert run.stays_from(curve, 5.0, 1) == 6
    assert run.stays_from(curve, 5.0, 4) == 8  # in steps of 4 epochs
    assert run.stays_from(np.array([np.nan, 1, 6, 4]), 5.0, 1) is None  # ends below
