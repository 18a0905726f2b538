"""Every public limit and count is checked, with a message naming the argument and its range."""

from __future__ import annotations

import pytest

from nasx._checks import check_int, check_number
from nasx.experiment import NasExperiment
from nasx.strategy import GridSearch, RandomOneShot, RegularizedEvolution
from nasx.strategy.tpe import TPE

from .experiment.helpers import SmallNet, width_metric


def test_check_int_names_the_argument_and_the_range():
    assert check_int("n", 3, minimum=1) == 3
    assert check_int("n", None) is None
    with pytest.raises(ValueError, match=r"n must be an integer in \[1, 4\], got 5"):
        check_int("n", 5, minimum=1, maximum=4, allow_none=False)
    with pytest.raises(TypeError, match=r"n must be an integer >= 0 .*got True \(bool\)"):
        check_int("n", True)
    with pytest.raises(TypeError, match=r"got 2.5 \(float\)"):
        check_int("n", 2.5)
    with pytest.raises(ValueError, match=r"p must be a number in \[0, 1\], got nan"):
        check_number("p", float("nan"), minimum=0, maximum=1)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (
            {"max_trials": -5},
            r"max_trials must be an integer >= 1 \(or None for no limit\), got -5",
        ),
        ({"max_trials": 0}, r"max_trials must be an integer >= 1"),
        ({"max_concurrent_trials": 0}, r"max_concurrent_trials must be an integer >= 1, got 0"),
        ({"max_failed_trials": -1}, r"max_failed_trials must be an integer >= 0"),
        ({"seed": -3}, r"seed must be an integer >= 0"),
        ({"max_duration": -1}, r"max_duration must be positive, got -1"),
        ({"trial_timeout": 0}, r"trial_timeout must be positive, got 0"),
    ],
)
def test_experiment_limits_are_checked(tmp_path, kwargs, message):
    with pytest.raises(ValueError, match=message):
        NasExperiment(SmallNet(), width_metric, GridSearch(), workdir=tmp_path, **kwargs)


def test_limits_set_through_nni_config_are_checked_when_run(tmp_path):
    exp = NasExperiment(SmallNet(), width_metric, GridSearch(), workdir=tmp_path, progress=False)
    exp.config.max_trial_number = -5
    with pytest.raises(ValueError, match="max_trials must be an integer >= 1"):
        exp.run()
    assert not (tmp_path / "nasx.db").exists()


def test_export_top_k_is_checked(tmp_path):
    exp = NasExperiment(SmallNet(), width_metric, GridSearch(), workdir=tmp_path, progress=False)
    with pytest.raises(ValueError, match="top_k must be an integer >= 1, got 0"):
        exp.export_top_models(top_k=0)


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (
            lambda: RegularizedEvolution(population_size=0),
            "population_size must be an integer >= 1",
        ),
        (
            lambda: RegularizedEvolution(population_size=4, sample_size=5),
            r"sample_size must be an integer in \[1, 4\], got 5",
        ),
        (
            lambda: RegularizedEvolution(mutation_prob=2),
            r"mutation_prob must be a number in \[0, 1\]",
        ),
        (lambda: TPE(n_startup_trials=-1), "n_startup_trials must be an integer >= 0"),
        (lambda: RandomOneShot(num_samples=-1), "num_samples must be an integer >= 1"),
        (lambda: RandomOneShot(eval_batches=0), "eval_batches must be an integer >= 1"),
        (lambda: RandomOneShot(warmup_epochs=-1), "warmup_epochs must be an integer >= 0"),
        (lambda: RandomOneShot(log_arch_every=0), "log_arch_every must be an integer >= 1"),
    ],
)
def test_strategy_counts_are_checked(make, message):
    with pytest.raises(ValueError, match=message):
        make()
