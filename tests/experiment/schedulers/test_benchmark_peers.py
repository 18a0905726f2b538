"""benchmarks/peers.py in its fast mode: nasx, Syne Tune and Optuna on a tiny made-up table, and
the paired statistics it prints checked against a hand computation."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from nasx.experiment.schedulers import ASHA, LearningCurves, simulate
from nasx.strategy import Random
from tests.benchmark_scripts import benchmark_module


@pytest.fixture(scope="module")
def peers():
    with benchmark_module("peers.py") as module:
        yield module


def fast_curves() -> LearningCurves:  # what --fast replays
    archs = [{"a": a, "b": b, "c": c} for a in range(4) for b in range(4) for c in range(4)]
    return LearningCurves.synthetic(archs, epochs=9, seed=0)


def test_paired_difference_by_hand(peers):
    # differences 1, 0, 2: mean 1, sample sd 1, standard error 1 / sqrt(3)
    mean, se, n = peers.paired([1.0, 2.0, 3.0], [0.0, 2.0, 1.0])
    assert (mean, n) == (1.0, 3)
    assert se == pytest.approx(1 / math.sqrt(3))
    # a seed where one side has no pick yet (NaN) is left out of the pairs
    mean, se, n = peers.paired([1.0, 2.0, math.nan, 5.0], [0.0, 2.0, 1.0, 1.0])
    assert (n, mean) == (3, pytest.approx(5 / 3))
    assert se == pytest.approx(
        math.sqrt(((1 - 5 / 3) ** 2 + (5 / 3) ** 2 + (4 - 5 / 3) ** 2) / 2 / 3)
    )
    assert peers.verdict_word(0.1, 0.2) == "tie"
    assert peers.verdict_word(-0.2, 0.2) == "tie"
    assert peers.verdict_word(0.3, 0.2) == "nasx ahead"
    assert peers.verdict_word(-0.3, 0.2) == "nasx BEHIND"
    # the noise floor: 85% on 2,000 test images has a standard error of 0.80 points
    assert peers.noise_floor(85.0, 2000, percent=True) == pytest.approx(0.7984, abs=1e-4)


def test_shared_stream_is_what_simulate_starts(peers):
    curves = fast_curves()
    for seed in range(2):
        result = simulate(ASHA(1, 9, 3), Random(seed=seed), curves, workers=4, max_epochs=72)
        stream = peers.shared_stream(curves, seed)
        assert len(stream) == len(curves.archs)  # every arch once
        assert [t.arch for t in result.trials] == stream[: len(result.trials)]


def test_optuna_replay_with_one_worker_is_multi_fidelity_s(peers):
    """The W-worker Optuna replay, with one worker and Optuna's own RandomSampler, gives
    multi_fidelity.py's one-trial-at-a-time Optuna curve epoch for epoch."""
    pytest.importorskip("optuna")
    curves = fast_curves()
    index = peers.ArchIndex(curves)
    with benchmark_module("multi_fidelity.py") as mf:
        for pruner in ("SuccessiveHalvingPruner", "HyperbandPruner"):
            for seed in range(2):
                theirs = mf.run_optuna(curves, pruner, "Random", seed, 72)
                ours = peers.run_optuna(pruner, "Random", curves, index, seed, 1, 72, None)
                mine = [ours.test_at(e) for e in range(73)]
                np.testing.assert_array_equal(theirs[1:], mine[1:])


def test_fast_mode_pairs_match_a_hand_computation(peers, capsys):
    pytest.importorskip(
        "syne_tune", reason="Syne Tune is not installed (pip install syne-tune==0.16.0)"
    )
    found = peers.main(["--fast"])
    out = capsys.readouterr().out
    assert "Syne Tune 0.1" in out and "Optuna" in out
    blocks = out.split("\n== ")[1:]
    assert [b.split(" ", 1)[0] for b in blocks] == ["1", "8"]
    for (workers, data), block in zip(sorted(found["workers"].items()), blocks):
        assert block.startswith(f"{workers} simulated worker")
        values = data["values"]
        assert {k.split(": ")[0] for k in values} == {"nasx", "Syne Tune", "Optuna"}
        for key, rows in values.items():
            assert rows.shape == (3, 4)  # 3 seeds x E/9, E/3, E/2, E
            printed = re.search(
                re.escape(key.split("|")[0])
                + r"\s+"
                + re.escape(key.split("|")[1])
                + r"((?:\s+[\d.]+){4})",
                block,
            )
            assert printed, key
            assert [float(v) for v in printed.group(1).split()] == pytest.approx(
                rows.mean(axis=0), abs=0.005
            )
        lines = [line for line in block.splitlines() if line.startswith("   E/9 ")]
        assert len(lines) == 2  # against Syne Tune's best, against Optuna's best
        for side, line in zip(("Syne Tune", "Optuna"), lines):
            printed = re.findall(r"([+-][\d.]+) \+- ([\d.]+)", line)
            for i, (mean_text, se_text) in enumerate(printed):
                a = values[data["best"]["nasx"][i]][:, i]
                b = values[data["best"][side][i]][:, i]
                d = [a[s] - b[s] for s in range(3)]  # by hand, three seeds
                mean = (d[0] + d[1] + d[2]) / 3
                se = math.sqrt(sum((x - mean) ** 2 for x in d) / 2) / math.sqrt(3)
                assert data["pairs"][side][i][:2] == pytest.approx((mean, se), abs=1e-12)
                assert float(mean_text) == pytest.approx(mean, abs=0.005)
                assert float(se_text) == pytest.approx(se, abs=0.005)
                # each library's best at a fraction has the largest mean there
                best = max(
                    v[:, i].mean()
                    for k, v in values.items()
                    if k.startswith(side) and "reference" not in k
                )
                assert b.mean() == pytest.approx(best)
        verdict = [line for line in block.splitlines() if line.startswith("[")]
        assert len(verdict) == 1
        words = [peers.verdict_word(m, s) for pairs in data["pairs"].values() for m, s, _ in pairs]
        assert verdict[0].startswith("[ties-or-beats]") == all(w != "nasx BEHIND" for w in words)


def test_saved_runs_merge_into_the_same_report(peers, tmp_path, capsys):
    pytest.importorskip(
        "syne_tune", reason="Syne Tune is not installed (pip install syne-tune==0.16.0)"
    )
    some = "nasx: ASHA|shared,Syne Tune: ASHA stopping|shared,Optuna: MedianPruner|shared"
    whole = peers.main(["--fast", "--methods", some])
    parts = []
    for first, n in ((0, 2), (2, 1)):
        path = tmp_path / f"part{first}.json"
        peers.main(
            ["--fast", "--methods", some, "--first-seed", str(first), "--seeds", str(n)]
            + ["--save", str(path)]
        )
        parts.append(str(path))
    merged = peers.main(["--merge", *parts])
    # runs of the same seeds with other methods join (the shared nasx row must agree)
    sides = []
    for other in ("Syne Tune: ASHA stopping|shared", "Optuna: MedianPruner|shared"):
        path = tmp_path / f"{other[:6]}.json"
        peers.main(["--fast", "--methods", f"nasx: ASHA|shared,{other}", "--save", str(path)])
        sides.append(str(path))
    joined = peers.main(["--merge", *sides])
    capsys.readouterr()
    for found in (merged, joined):
        assert found["seeds"] == [0, 1, 2]
        for w in (1, 8):
            assert set(found["workers"][w]["values"]) == set(whole["workers"][w]["values"])
            for key, rows in whole["workers"][w]["values"].items():
                np.testing.assert_array_equal(found["workers"][w]["values"][key], rows)
            assert found["workers"][w]["pairs"] == whole["workers"][w]["pairs"]
