"""The MnasNet reward (eq. 2 of the paper) and cost ranges."""

from __future__ import annotations

import math

import pytest

from nasx.hardware.reward import CostRange, MnasNetReward, mnasnet_reward


def test_soft_reward_matches_the_formula():
    assert mnasnet_reward(0.75, 80.0, 80.0) == 0.75
    assert mnasnet_reward(0.75, 40.0, 80.0) == pytest.approx(0.75 * 0.5**-0.07)
    assert mnasnet_reward(0.75, 160.0, 80.0) == pytest.approx(0.75 * 2**-0.07)
    # the paper's reading: twice the latency costs about 5% relative accuracy
    assert 1 - 2**-0.07 == pytest.approx(0.0473, abs=1e-4)


def test_hard_reward_ignores_speed_under_the_target_and_divides_above():
    assert mnasnet_reward(0.8, 10.0, 80.0, "hard") == 0.8
    assert mnasnet_reward(0.8, 160.0, 80.0, "hard") == pytest.approx(0.4)
    assert mnasnet_reward(0.8, 40.0, 80.0, alpha=-1.0, beta=-1.0) == pytest.approx(1.6)


def test_reward_refuses_bad_input():
    with pytest.raises(ValueError, match="constraint must be one of"):
        mnasnet_reward(0.5, 1.0, 1.0, "medium")
    with pytest.raises(ValueError, match="must be positive"):
        mnasnet_reward(0.5, 0.0, 1.0)
    with pytest.raises(ValueError, match="target must be positive"):
        MnasNetReward(target=0)
    with pytest.raises(KeyError, match="needs metric 'latency_ms'"):
        MnasNetReward(target=1.0)({"accuracy": 0.5})


def test_reward_over_other_cost_metric():
    r = MnasNetReward(target=300e6, cost="macs", accuracy="default")
    assert r({"default": 0.7, "macs": 600e6}) == pytest.approx(0.7 * 2**-0.07)


def test_cost_range():
    r = CostRange.parse("latency_ms", (5, 10))
    assert r.violation(7) is None
    assert r.violation(4) == "latency_ms 4 below 5"
    assert r.violation(11) == "latency_ms 11 above 10"
    assert r.violation(math.nan) == "latency_ms is NaN"
    assert CostRange.parse("macs", 100).high == 100.0
    with pytest.raises(ValueError, match="low 3 is above high 2"):
        CostRange("x", 3, 2)
    with pytest.raises(ValueError, match="must be .low, high. or an upper bound"):
        CostRange.parse("x", "big")
