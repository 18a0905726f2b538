"""Numerical choices through the multi-trial strategies: sampled natively where the strategy
samples (Random, RegularizedEvolution, TPE), a clear error naming the label where a strategy
needs a list of values, and quantised ranges walked as their list of values."""

import pytest

from nasx.space import Categorical, Numerical, SearchSpace
from nasx.strategy import TPE, GridSearch, PolicyGradient, Random, RegularizedEvolution
from nasx.trial import Trial


def space():
    return SearchSpace(
        x=Numerical(0, 10, label="x"),
        lr=Numerical(1e-4, 1e-1, log_distributed=True, label="lr"),
        k=Categorical([1, 2, 3], label="k"),
    )


def run(strategy, n=30):
    ss = space()
    strategy.setup(ss, direction="minimize")
    archs = []
    for i in range(n):
        arch = strategy.propose()
        assert ss.validate(arch) == arch
        strategy.tell(Trial(i, arch, "succeeded", metric=(arch["x"] - 7.0) ** 2))
        archs.append(arch)
    return archs


@pytest.mark.parametrize(
    "make",
    [
        lambda: Random(seed=0),
        lambda: RegularizedEvolution(population_size=6, sample_size=3, seed=0),
        lambda: TPE(n_startup_trials=8, seed=0),
    ],
    ids=["random", "evolution", "tpe"],
)
def test_sampling_strategies_draw_floats_from_the_ranges(make):
    archs = run(make())
    xs = [a["x"] for a in archs]
    # Drawn from the range, not from a few grid points (evolution's children keep some values).
    assert len(set(xs)) >= 15 and all(0 <= x <= 10 for x in xs)
    assert all(isinstance(a["lr"], float) and 1e-4 <= a["lr"] <= 1e-1 for a in archs)


def test_tpe_learns_over_a_numerical_choice():
    # After its random start-up, TPE's proposals move towards the optimum x = 7.
    archs = run(TPE(n_startup_trials=8, seed=0), n=40)
    start = sum(abs(a["x"] - 7) for a in archs[:8]) / 8
    late = sum(abs(a["x"] - 7) for a in archs[-10:]) / 10
    assert late < start / 2


def test_tpe_resumes_from_stored_numerical_trials():
    trials = [
        Trial(i, a, "succeeded", metric=(a["x"] - 7.0) ** 2)
        for i, a in enumerate(run(Random(seed=1), 5))
    ]
    tpe = TPE(n_startup_trials=2, seed=0)
    tpe.setup(space(), trials, direction="minimize")
    assert space().validate(tpe.propose())


@pytest.mark.parametrize(
    "make", [GridSearch, lambda: PolicyGradient(seed=0)], ids=["grid", "policy"]
)
def test_strategies_that_need_a_list_of_values_name_the_continuous_label(make):
    with pytest.raises(ValueError, match="'x' is continuous"):
        make().setup(space())
        make().propose()


def test_grid_search_walks_a_quantised_range():
    grid = GridSearch()
    grid.setup(SearchSpace(q=Numerical(0, 1, quantize=0.25, label="q")))
    proposed = []
    while (arch := grid.propose()) is not None:
        proposed.append(arch["q"])
        grid.tell(Trial(len(proposed), arch, "succeeded", metric=0.0))
    assert sorted(proposed) == [0.0, 0.25, 0.5, 0.75, 1.0]  # every quantised value, once
