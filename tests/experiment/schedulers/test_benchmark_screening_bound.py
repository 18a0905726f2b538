"""benchmarks/screening_bound.py: the two-stage screen against hand-computed picks on a tiny
table, and its fast mode."""

from __future__ import annotations

import numpy as np
import pytest

from tests.benchmark_scripts import benchmark_module


@pytest.fixture(scope="module")
def bound():
    with benchmark_module("screening_bound.py") as module:
        yield module


# Four archs x 3 epochs. Arch 0 starts best and ends worst; arch 3 starts worst and ends best by
# validation but not by test (validation noise); arch 2 is the test optimum.
VAL = np.array([[60, 70, 71], [50, 70, 80], [55, 75, 82], [40, 60, 85]], dtype=float)
TEST = np.array([[60, 70, 70], [50, 70, 79], [55, 75, 84], [40, 60, 81]], dtype=float)


def test_a_screen_keeps_the_best_at_its_epoch_and_picks_by_final_validation(bound):
    # all four screened at epoch 1 (values 60, 50, 55, 40): the best two are archs 0 and 2,
    # and of those arch 2 ends better by validation (82 > 71): it tests at 84
    assert bound.screen(VAL, TEST, n=4, r=1, k=2, samples=3) == 84.0
    # kept only the epoch-1 winner, arch 0: 70
    assert bound.screen(VAL, TEST, n=4, r=1, k=1, samples=3) == 70.0
    # at epoch 2 (70, 70, 75, 60) the best is arch 2 again
    assert bound.screen(VAL, TEST, n=4, r=2, k=1, samples=3) == 84.0
    # every arch trained fully: the best final validation is arch 3's 85, which tests at 81
    assert bound.screen(VAL, TEST, n=4, r=3, k=4, samples=3) == 81.0


def test_the_best_screen_within_a_budget_is_the_best_hand_enumerated_one(bound):
    # 12 epochs = all four archs fully (81), or screen 4 at epoch 1 (4 epochs) and train
    # k <= 4 on (2 epochs each): k = 2 gives 84, the best; r = 2 with k = 1 (8 + 1 = 9) too
    mean, r, k, n = bound.best_screen(VAL, TEST, budget=12, samples=3)
    assert mean == 84.0 and (r, k, n) == (1, 2, 4)
    # 3 epochs: one arch fully (a random one, mean of the finals over draws) or screen 3 at
    # epoch 1 and keep none (k >= 1 needs 3 + 2 = 5): the full-budget pick of one arch
    mean, r, k, n = bound.best_screen(VAL, TEST, budget=3, samples=400)
    assert (r, k, n) == (3, 1, 1)
    assert mean == pytest.approx(TEST[:, -1].mean(), abs=1.5)


def test_fast_mode_prints_the_bound_and_the_noise(bound, capsys):
    bound.main(["--fast"])
    out = capsys.readouterr().out
    assert "FAST: made-up curves" in out
    assert "0.333E" in out and "screening at one epoch only" in out
    assert "validation noise" in out and "the oracle" in out
