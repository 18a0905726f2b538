"""NNI's names and classArgs map onto nasx's schedulers; what has no equivalent is refused."""

from __future__ import annotations

import pytest

from nasx.experiment.schedulers import (
    BOHB,
    CurveFitting,
    Hyperband,
    Medianstop,
    MedianStopping,
    from_nni,
)


def test_hyperband_takes_nnis_R_and_eta():
    hb = from_nni("Hyperband", {"R": 27, "eta": 3, "optimize_mode": "minimize"})
    assert isinstance(hb, Hyperband) and hb.budgets == [1, 3, 9, 27]
    assert hb.directions == ("minimize",)
    # NNI: s_max = floor(log_3 10) = 2, smallest budget 10 / 9 -> 1 epoch
    assert from_nni("Hyperband", {"R": 10}).budgets == [1, 3, 9, 10]
    assert from_nni("Hyperband", {"R": 16, "eta": 2, "exec_mode": "serial"}).budgets[0] == 1


def test_bohb_takes_nnis_arguments():
    args = {
        "optimize_mode": "maximize",
        "min_budget": 1,
        "max_budget": 9,
        "eta": 3,
        "min_points_in_model": 5,
        "top_n_percent": 20,
        "num_samples": 32,
        "random_fraction": 0.25,
        "bandwidth_factor": 2,
        "min_bandwidth": 0.01,
        "seed": 4,
    }
    b = from_nni("BOHB", args)
    assert isinstance(b, BOHB) and b.budgets == [1, 3, 9] and b.seed == 4
    assert (b.min_points_in_model, b.top_n_percent, b.num_samples) == (5, 20, 32)
    assert (b.random_fraction, b.bandwidth_factor, b.min_bandwidth) == (0.25, 2.0, 0.01)
    assert from_nni("BOHB").budgets == [1, 3]  # NNI's defaults: min_budget 1, max_budget 3


def test_medianstop():
    m = from_nni("Medianstop", {"optimize_mode": "maximize", "start_step": 3}, max_budget=9)
    assert isinstance(m, MedianStopping) and (m.min_budget, m.max_budget) == (3, 9)
    assert Medianstop(max_budget=9).min_budget == 1  # start_step 0: judged from the first report
    m.started(0, m.assign())
    m.started(1, m.assign())
    assert m.report(0, 3, 0.5) == "continue"  # no other trial at step 3 yet
    assert m.report(1, 3, 0.4) == "prune"  # below the median (0.5) of the one other trial


def test_curvefitting_takes_nnis_arguments():
    cf = from_nni("Curvefitting", {"epoch_num": 20, "start_step": 4, "threshold": 0.9, "gap": 2})
    assert isinstance(cf, CurveFitting) and cf.max_budget == 20
    assert (cf.start_step, cf.threshold, cf.gap) == (4, 0.9, 2)
    assert from_nni("Curvefitting", {"epoch_num": 9}).start_step == 6  # NNI's default


def test_bad_names_and_arguments_are_refused():
    with pytest.raises(ValueError, match="needs classArgs 'epoch_num'"):
        from_nni("Curvefitting", {"start_step": 3})
    with pytest.raises(ValueError, match="unknown NNI name 'TPE'"):
        from_nni("TPE")
    with pytest.raises(ValueError, match="needs classArgs 'R'"):
        from_nni("Hyperband", {})
    with pytest.raises(ValueError, match=r"classArgs \['parallel'\] have no nasx equivalent"):
        from_nni("Hyperband", {"R": 9, "parallel": 2})
    with pytest.raises(ValueError, match="optimize_mode must be 'maximize' or 'minimize'"):
        from_nni("BOHB", {"optimize_mode": "max"})
    with pytest.raises(ValueError, match="exec_mode must be"):
        from_nni("Hyperband", {"R": 9, "exec_mode": "fast"})
    with pytest.raises(ValueError, match="eta must be an integer >= 2"):
        from_nni("Hyperband", {"R": 9, "eta": 1})
    with pytest.raises(ValueError, match="give from_nni\\(..., max_budget=\\)"):
        from_nni("Medianstop")
    with pytest.raises(ValueError, match="start_step must be an integer >= 0"):
        Medianstop(start_step=-1, max_budget=9)
