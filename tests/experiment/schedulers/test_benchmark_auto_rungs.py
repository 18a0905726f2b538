"""benchmarks/multi_fidelity.py --auto in its fast mode: AutoASHA runs beside ASHA, and each
line of issue 44's bar says what its own paired numbers say."""

from __future__ import annotations

import re

import numpy as np
import pytest

from tests.benchmark_scripts import benchmark_module


@pytest.fixture(scope="module")
def run():
    with benchmark_module("multi_fidelity.py") as module:
        yield module


def test_fast_auto_mode_prints_a_bar_consistent_with_its_runs(run, capsys):
    found = run.main(["--fast", "--auto"])
    out = capsys.readouterr().out
    names = {name for _, name, _ in found["nasx"]}
    assert names == {"full budget", "ASHA", "AutoASHA"}
    assert "Optuna over the same table" not in out  # --auto compares nasx's rows only
    ref_epochs = 8 * 9  # --fast: 8 full trainings of 9 epochs
    half, third = ref_epochs // 2, ref_epochs // 3
    lines = [line for line in out.splitlines() if "AutoASHA + " in line and line.startswith("[")]
    assert len(lines) == 8  # 2 strategies x 2 worker counts x (reach, against ASHA)
    for (workers, name, label), data in found["nasx"].items():
        if name != "AutoASHA":
            continue
        runs = data["runs"]
        assert runs.shape == (3, ref_epochs + 1)  # 3 seeds, the anytime curve of each
        reference = found["nasx"][(workers, "full budget", "RegularizedEvolution")]["runs"]
        asha = found["nasx"][(workers, "ASHA", label)]["runs"]
        mine = [line for line in lines if f"+ {label}, {workers} worker(s)" in line]
        reach, versus = mine
        e = data["reaches"]
        assert reach.startswith("[met]") == (e is not None and e <= half), reach
        d = np.mean(runs[:, half] - reference[:, ref_epochs])
        assert f"paired: {d:+.2f}" in reach
        d = np.mean(runs[:, third] - asha[:, third])
        assert versus.startswith("[met]") == (d > 0) and f"paired: {d:+.2f}" in versus, versus
        assert sum(data["chosen"].values()) == 3  # one decision (or none) per seed
    chosen = re.findall(r"rungs chosen \(grace period/eta: seeds\): (.*)", out)
    assert len(chosen) == 4 and all(chosen)


def test_auto_names_are_accepted_by_schedulers_only_with_auto(run):
    with pytest.raises(SystemExit):
        run.parse_args(["--fast", "--schedulers", "AutoASHA"])
    args = run.parse_args(["--fast", "--auto", "--schedulers", "AutoASHA"])
    assert args.only == {"AutoASHA"}
