"""Regularized evolution: aging population, tournament selection and mutation, by hand."""

from __future__ import annotations

import random

import pytest

from nasx.strategy import RegularizedEvolution
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
