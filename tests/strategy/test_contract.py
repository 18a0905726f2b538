"""The contract every multi-trial strategy passes: valid proposals, reproducible seeds, exact
resume from stored trials, and deduplication (including exhaustion of a small space)."""

from __future__ import annotations

import json

import pytest

from nasx.strategy import (
    TPE,
    GridSearch,
    LocalSearch,
    PolicyGradient,
    Random,
    RegularizedEvolution,
)
from nasx.trial import Trial, arch_key

from .conftest import fake_metric

FACTORIES = {
    "random": lambda seed: Random(seed=seed),
    "grid": lambda seed: GridSearch(shuffle=True, seed=seed),
    "evolution": lambda seed: RegularizedEvolution(
        population_size=4, sample_size=2, mutation_prob=0.3, seed=seed
    ),
    "policy_gradient": lambda seed: PolicyGradient(learning_rate=0.1, seed=seed),
    "tpe": lambda seed: TPE(n_startup_trials=3, seed=seed),
    "local_search": lambda seed: LocalSearch(n_init=2, seed=seed),
    "local_search_plain": lambda seed: LocalSearch(n_init=2, predictor=None, seed=seed),
}


def run(strategy, space, n, trials=(), direction="maximize", fail_every=0):
    """Setup on ``trials``, then propose/evaluate/tell ``n`` times; returns every trial."""
    trials = list(trials)
    strategy.setup(space, trials, direction=direction)
    for _ in range(n):
        arch = strategy.propose()
        if arch is None:
            break
        i = len(trials)
        if fail_every and i % fail_every == fail_every - 1:
            t = Trial(i, arch, "failed", error="boom", end_time=float(i))
        else:
            m = fake_metric(arch)
            t = Trial(i, arch, "succeeded", metric=m, metrics={"default": m}, end_time=float(i))
        # Stored trials come back from JSON: replay them in that form.
        t = Trial.from_dict(json.loads(json.dumps(t.to_dict())))
        strategy.tell(t)
        trials.append(t)
    return trials


@pytest.fixture(params=sorted(FACTORIES))
def factory(request):
    return FACTORIES[request.param]


def test_proposals_are_valid_and_canonical(factory, tiny_space):
    trials = run(factory(0), tiny_space, 8)
    assert len(trials) == 8
    for t in trials:
        assert tiny_space.validate(t.arch) == t.arch


def test_same_seed_same_proposals(factory, tiny_space):
    a = [t.arch for t in run(factory(3), tiny_space, 8, fail_every=3)]
    b = [t.arch for t in run(factory(3), tiny_space, 8, fail_every=3)]
    assert a == b


@pytest.mark.parametrize("direction", ["maximize", "minimize"])
def test_resume_continues_numbering_and_state(factory, tiny_space, direction):
    straight = run(factory(5), tiny_space, 10, direction=direction, fail_every=4)
    first_half = run(factory(5), tiny_space, 5, direction=direction, fail_every=4)
    resumed_strategy = factory(5)
    both = run(
        resumed_strategy, tiny_space, 5, trials=first_half, direction=direction, fail_every=4
    )
    assert [t.arch for t in both] == [t.arch for t in straight]
    assert resumed_strategy.num_proposed == 10


def test_resume_counts_unfinished_trials_as_proposed(factory, tiny_space):
    trials = run(factory(1), tiny_space, 4)
    trials[-1] = Trial(trials[-1].id, trials[-1].arch, "running")
    s = factory(1)
    s.setup(tiny_space, trials)
    assert s.num_proposed == 4
    assert s.was_proposed(trials[-1].arch)
    assert s.propose() != trials[-1].arch


def test_dedup_exhausts_small_space(factory, tiny_space):
    trials = run(factory(2), tiny_space, 20, fail_every=5)
    keys = [arch_key(t.arch) for t in trials]
    assert len(keys) == len(set(keys)) == tiny_space.size == 12


@pytest.mark.parametrize("name", ["random", "grid", "evolution", "policy_gradient", "tpe"])
def test_strategies_that_need_no_history_keep_none(name, tiny_space):
    # A long search must not hold every trial: these keep what they learn from, not the trials.
    s = FACTORIES[name](0)
    trials = run(s, tiny_space, 6)
    assert s.num_told == 6 and s.num_proposed == 6
    assert not s._history
    with pytest.raises(AttributeError, match="keeps no trial history .*exp.trials()"):
        s.history  # noqa: B018 - the property raises
    assert all(s.was_proposed(t.arch) for t in trials)
    assert all(isinstance(key, int) for key in s.seen)  # 64-bit digests, not key strings


def test_evolution_keeps_only_its_population(tiny_space):
    s = FACTORIES["evolution"](0)  # population_size 4
    trials = run(s, tiny_space, 10)
    succeeded = [t for t in trials if t.status == "succeeded"]
    assert s.population() == succeeded[-4:]
    resumed = FACTORIES["evolution"](0)
    resumed.setup(tiny_space, trials)
    assert resumed.population() == succeeded[-4:]  # rebuilt from the stored trials
