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


# Every numerical distribution, through every sampling strategy: within bounds, on the
# quantisation grid, and at the right scale (a log-uniform range is sampled evenly in log space).
DISTRIBUTIONS = {
    "uniform": Numerical(0.0, 10.0, label="uniform"),
    "loguniform": Numerical(1e-4, 1e-1, log_distributed=True, label="loguniform"),
    "quniform": Numerical(0.0, 10.0, quantize=2.5, label="quniform"),
    "qloguniform": Numerical(1.0, 1000.0, log_distributed=True, quantize=1.0, label="qloguniform"),
    "normal": Numerical(mu=0.0, sigma=1.0, label="normal"),
    "qnormal": Numerical(mu=0.0, sigma=1.0, quantize=0.5, label="qnormal"),
}


def proposals(strategy, n=60):
    ss = SearchSpace(DISTRIBUTIONS)
    strategy.setup(ss, direction="maximize")
    out = []
    for i in range(n):
        arch = strategy.propose()
        assert ss.validate(arch) == arch  # bounds and quantisation, by the choices' own check
        strategy.tell(Trial(i, arch, "succeeded", metric=0.0))  # a flat metric: no pull anywhere
        out.append(arch)
    return out


def fraction_below(values, x):
    return sum(v < x for v in values) / len(values)


@pytest.mark.parametrize(
    "make",
    [
        lambda: Random(seed=1),
        lambda: RegularizedEvolution(population_size=20, sample_size=5, mutation_prob=1.0, seed=1),
        lambda: TPE(n_startup_trials=60, seed=1),  # its random start-up: Optuna's own sampling
    ],
    ids=["random", "evolution", "tpe"],
)
def test_each_distribution_is_sampled_in_bounds_on_its_grid_at_its_scale(make):
    archs = proposals(make())
    values = {label: [a[label] for a in archs] for label in DISTRIBUTIONS}
    assert all(0 <= v <= 10 for v in values["uniform"])
    assert all(v % 2.5 == 0 for v in values["quniform"])
    assert all(float(v).is_integer() and 1 <= v <= 1000 for v in values["qloguniform"])
    assert all(abs(v * 2 - round(v * 2)) < 1e-9 for v in values["qnormal"])
    # Scale: half of a log-uniform sample lies below the geometric midpoint (1e-2.5), which a
    # linear-scale sampler would almost never give (0.3 % of [1e-4, 1e-1] lies below it; 3 % of
    # [1, 1000] below 10**1.5). Evolution's children share values, hence the wide band.
    assert 0.15 <= fraction_below(values["loguniform"], 10**-2.5) <= 0.85
    assert 0.15 <= fraction_below(values["qloguniform"], 10**1.5) <= 0.85
    assert 0.15 <= fraction_below(values["uniform"], 5.0) <= 0.85
    # A normal distribution is centred on mu (TPE searches mu +- 4 sigma evenly).
    assert 0.15 <= fraction_below(values["normal"], 0.0) <= 0.85
    assert all(-4.5 <= v <= 4.5 for v in values["normal"])
