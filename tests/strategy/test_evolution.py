"""Regularized evolution: aging population, tournament selection and mutation, by hand."""

from __future__ import annotations

import math
import random
import statistics

import pytest

from nasx.space import Categorical, Constraint, Numerical, SearchSpace
from nasx.strategy import RegularizedEvolution
from nasx.strategy.evolution import _from_unit, numeric_step
from nasx.trial import Trial


def told(strategy, space, metrics):
    """Setup, then propose/tell with the given metrics (None: a failed trial)."""
    strategy.setup(space)
    trials = []
    for i, m in enumerate(metrics):
        arch = strategy.propose()
        t = Trial(i, arch, "failed" if m is None else "succeeded", metric=m)
        strategy.tell(t)
        trials.append(t)
    return trials


def test_population_is_the_latest_succeeded_trials(tiny_space):
    s = RegularizedEvolution(population_size=3, sample_size=2, seed=0)
    told(s, tiny_space, [1.0, 2.0, None, 3.0, 4.0])
    assert [t.id for t in s.population()] == [1, 3, 4]  # trial 0 aged out, 2 failed


def test_first_population_size_proposals_are_random_then_children_of_the_best(tiny_space):
    s = RegularizedEvolution(population_size=4, sample_size=4, mutation_prob=0.0, seed=1)
    trials = told(s, tiny_space, [0.1, 0.9, 0.2, 0.3])
    best = trials[1].arch
    child = s.propose()
    # sample_size == population_size: the tournament always picks the best; with
    # mutation_prob=0 exactly one label is changed.
    changed = [k for k in best if best[k] != child[k]]
    assert len(changed) == 1
    assert tiny_space.validate(child) == child


def test_minimize_picks_the_smallest_metric(tiny_space):
    s = RegularizedEvolution(population_size=4, sample_size=4, mutation_prob=0.0, seed=1)
    s.setup(tiny_space, direction="minimize")
    for i, m in enumerate([0.5, 0.9, 0.1, 0.3]):
        s.tell(Trial(i, s.propose(), "succeeded", metric=m))
    best = s.population()[2].arch
    child = s.propose()
    assert sum(best[k] != child[k] for k in best) == 1


def test_mutate_changes_each_label_with_its_probability(tiny_space):
    s = RegularizedEvolution(population_size=2, sample_size=1, mutation_prob=1.0, seed=0)
    s.setup(tiny_space)
    parent = {"act": 0, "width": 8, "skip": [0]}
    child = s.mutate(parent, random.Random(0))
    assert all(child[k] != parent[k] for k in parent)  # every label resampled to another value


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"population_size": 0}, "population_size"),
        ({"population_size": 4, "sample_size": 5}, "sample_size"),
        ({"mutation_prob": 1.5}, "mutation_prob"),
    ],
)
def test_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        RegularizedEvolution(**kwargs)


# -- numerical choices step from their value (hyperparameters such as a learning rate) ---------

NUMERICAL = {
    "uniform": Numerical(0.0, 10.0, label="uniform"),
    "loguniform": Numerical(1e-4, 1e-1, log_distributed=True, label="loguniform"),
    "quniform": Numerical(0.0, 10.0, quantize=0.5, label="quniform"),
    "qloguniform": Numerical(1.0, 1000.0, log_distributed=True, quantize=1.0, label="qloguniform"),
    "normal": Numerical(mu=0.0, sigma=1.0, label="normal"),
    "qnormal": Numerical(-3.0, 3.0, mu=0.0, sigma=1.0, quantize=0.5, label="qnormal"),
}


def stepped(label, parent_value, scale=0.1, n=2000, seed=0):
    rng = random.Random(seed)
    choice = NUMERICAL[label]
    return [numeric_step(choice, parent_value, scale, rng) for _ in range(n)]


def test_a_uniform_step_has_the_documented_spread():
    # Parent in the middle of [0, 10], scale 0.1 of the range: steps ~ N(0, 1.0) (reflection at
    # 5 standard deviations is negligible). A fresh draw (the old rule) has sd 10/sqrt(12) = 2.9.
    steps = [c - 5.0 for c in stepped("uniform", 5.0)]
    assert abs(statistics.fmean(steps)) < 0.1
    assert 0.9 < statistics.stdev(steps) < 1.1
    assert 0.64 < sum(abs(s) < 1.0 for s in steps) / len(steps) < 0.73  # one sd: 68 %


def test_a_loguniform_step_is_even_in_log_space():
    # [1e-4, 1e-1] spans 3 decades: scale 0.1 is 0.3 decades, up as often as down.
    decades = [math.log10(c / 1e-3) for c in stepped("loguniform", 1e-3)]
    assert abs(statistics.fmean(decades)) < 0.03
    assert 0.27 < statistics.stdev(decades) < 0.33


def test_a_normal_step_is_a_step_of_its_cdf():
    # At mu, F' = 1/sqrt(2 pi): a CDF step of sd 0.1 is about 0.1 * 2.507 = 0.25 sigma.
    steps = stepped("normal", 0.0)
    assert 0.22 < statistics.stdev(steps) < 0.28


@pytest.mark.parametrize("label", sorted(NUMERICAL))
@pytest.mark.parametrize("where", [0.0, 0.5, 1.0])  # parent at the low end, the middle, the top
def test_children_stay_in_bounds_on_the_grid_and_change(label, where):
    choice = NUMERICAL[label]
    parent = choice.validate(choice.qclip(_from_unit(choice, min(max(where, 1e-3), 1 - 1e-3))))
    children = stepped(label, parent, scale=0.3, n=300)
    for child in children:
        assert choice.validate(child) == child  # bounds and the quantisation grid
        assert child != parent  # a quantised step never rounds back to the parent
    # A step at a bound reflects: the children do not pile up on it.
    if label == "uniform" and where == 0.0:
        assert sum(c == 0.0 for c in children) == 0
        assert statistics.fmean(children) > 0.5


def test_a_coarse_quantised_step_moves_to_the_neighbour():
    q = Numerical(0.0, 10.0, quantize=2.5, label="q")
    rng = random.Random(0)
    children = {numeric_step(q, 5.0, 0.01, rng) for _ in range(50)}
    assert children == {2.5, 7.5}  # tiny steps round back to 5.0, so they take a neighbour
    # A bound that is not a multiple of quantize can be a value (NNI's clip(round(x / q) * q)):
    # the neighbours are the listed values next to it, and a bound steps inwards.
    odd = Numerical(0.2, 2.0, quantize=0.5, label="odd")
    assert odd.grid() == [0.2, 0.5, 1.0, 1.5, 2.0]
    assert {numeric_step(odd, 0.2, 0.01, rng) for _ in range(20)} == {0.5}
    assert {numeric_step(odd, 2.0, 0.01, rng) for _ in range(20)} == {1.5}


def test_evolution_refines_a_numerical_label_and_can_redraw_like_nni():
    ss = SearchSpace(NUMERICAL)
    parent = ss.default()
    far = {}
    for scale in (0.1, None):
        s = RegularizedEvolution(
            population_size=2, sample_size=1, mutation_prob=1.0, numeric_mutation_scale=scale
        )
        s.setup(ss)
        rng = random.Random(0)
        children = [s.mutate(parent, rng) for _ in range(300)]
        assert all(ss.validate(c) == c for c in children)
        far[scale] = sum(abs(c["uniform"] - parent["uniform"]) > 3 for c in children) / 300
    # A step of 0.1 of the range goes 3 units (3 sd) away 0.3 % of the time; a fresh draw
    # from [0, 10] half the time.
    assert far[0.1] < 0.03 and far[None] > 0.3


def test_numerical_mutations_still_obey_constraints():
    ss = SearchSpace(
        x=Numerical(0.0, 10.0, label="x"),
        lr=Numerical(1e-4, 1e-1, log_distributed=True, label="lr"),
        k=Categorical([1, 2, 3], label="k"),
    ).with_constraints(Constraint(lambda a: a["x"] <= 5.0 or a["k"] == 1, label="x <= 5 or k 1"))
    s = RegularizedEvolution(population_size=4, sample_size=2, mutation_prob=0.5, seed=0)
    told(s, ss, [float(i) for i in range(40)])
    children = [s.propose() for _ in range(30)]
    assert all(c["x"] <= 5.0 or c["k"] == 1 for c in children)
    assert all(ss.validate(c) == c for c in children)


@pytest.mark.parametrize("scale", [0, -0.1, 1.5])
def test_bad_numeric_mutation_scale(scale):
    with pytest.raises(ValueError, match="numeric_mutation_scale"):
        RegularizedEvolution(numeric_mutation_scale=scale)
