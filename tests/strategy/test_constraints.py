"""Every multi-trial strategy obeys the space's constraints: it never proposes an arch that breaks
them, and when the valid archs run out it stops (dedup) instead of proposing a violating one."""

from __future__ import annotations

import random

import pytest

from nasx.space import Categorical, Constraint, EmptySpaceError, SearchSpace
from nasx.strategy import (
    TPE,
    GridSearch,
    LocalSearch,
    PolicyGradient,
    Random,
    RegularizedEvolution,
)
from nasx.strategy.base import Strategy
from nasx.trial import Trial

from .test_contract import FACTORIES, run


def constrained(space: SearchSpace) -> SearchSpace:
    """The tiny space (12 archs) minus act 2 with width 16 and act 0 with skip [1]: 7 archs left
    (hand count: 12 - 2 - 2 + 0 overlap... see the assertion below)."""
    return space.with_constraints(
        Constraint(lambda a: not (a["act"] == 2 and a["width"] == 16), label="no act2 + w16"),
        Constraint(lambda a: not (a["act"] == 0 and a["skip"] == [1]), label="no act0 + skip1"),
    )


ALL = {
    **FACTORIES,
    "random_no_dedup": lambda seed: Random(dedup=False, seed=seed),
    "evolution_no_dedup": lambda seed: RegularizedEvolution(
        population_size=3, sample_size=2, mutation_prob=0.5, dedup=False, seed=seed
    ),
    "tpe_no_dedup": lambda seed: TPE(n_startup_trials=2, dedup=False, seed=seed),
    "policy_no_dedup": lambda seed: PolicyGradient(learning_rate=0.1, dedup=False, seed=seed),
    "grid_in_order": lambda seed: GridSearch(shuffle=False),
}


def test_hand_count(tiny_space):
    space = constrained(tiny_space)
    # act 2 & width 16: 2 archs (skip [0]/[1]); act 0 & skip [1]: 2 archs (width 8/16): 12 - 4
    assert space.count_valid().count == 8
    assert len(list(space.grid())) == 8


@pytest.mark.parametrize("name", sorted(ALL))
def test_every_proposal_satisfies_the_constraints(name, tiny_space):
    space = constrained(tiny_space)
    trials = run(ALL[name](0), space, 20, fail_every=5)
    assert trials and all(space.satisfies(t.arch) for t in trials), name
    if getattr(ALL[name](0), "dedup", False):
        # dedup: every valid arch once, then the strategy is exhausted
        assert len(trials) <= 8
        if name != "local_search" and name != "local_search_plain":
            assert len(trials) == 8


def test_grid_counts_what_it_walks(tiny_space):
    s = GridSearch(shuffle=False)
    s.setup(constrained(tiny_space))
    assert s.valid_count().count == 8


class IgnoresConstraints(Strategy):
    """A strategy written without constraints in mind: the base class re-asks it."""

    def next_arch(self, rng: random.Random):
        return self.need_space().sample(rng, constrained=False)


def test_the_base_class_rejects_for_strategies_that_ignore_constraints(tiny_space):
    space = constrained(tiny_space)
    s = IgnoresConstraints(dedup=False, seed=0)
    s.setup(space)
    assert all(space.satisfies(s.propose()) for _ in range(50))


def test_empty_space_is_a_clear_error_for_every_strategy(tiny_space):
    space = tiny_space.with_constraints(Constraint(lambda a: a["width"] > 16, label="width > 16"))
    space.max_rejections = 20
    for name, factory in sorted(ALL.items()):
        s = factory(0)
        s.setup(space)
        with pytest.raises(EmptySpaceError, match="width > 16"):
            s.propose()
            pytest.fail(f"{name} proposed from an empty space")


def test_evolution_mutations_are_resampled_until_valid():
    # 6 binary labels; valid archs have at most two 1s: mutations of good parents break it often
    space = SearchSpace({f"x{i}": Categorical([0, 1], label=f"x{i}") for i in range(6)})
    space = space.with_constraints(Constraint(lambda a: sum(a.values()) <= 2, label="<= two 1s"))
    s = RegularizedEvolution(population_size=4, sample_size=2, mutation_prob=0.5, seed=0)
    s.setup(space)
    for i in range(22):  # 1 + 6 + 15 = 22 valid archs
        arch = s.propose()
        assert arch is not None and space.satisfies(arch)
        s.tell(Trial(i, arch, "succeeded", metric=float(sum(arch.values()))))
    assert s.propose() is None


def test_tpe_never_proposes_a_violating_arch_and_still_learns():
    space = SearchSpace(x=Categorical(list(range(20)), label="x"))
    space = space.with_constraints(Constraint(lambda a: a["x"] % 2 == 0, label="even"))
    s = TPE(n_startup_trials=3, seed=0)
    s.setup(space, direction="minimize")
    metrics = []  # TPE keeps no trial history (keep_history = False): its Optuna study learns
    for i in range(10):
        arch = s.propose()
        assert arch["x"] % 2 == 0
        metrics.append(float((arch["x"] - 13) ** 2))
        s.tell(Trial(i, arch, "succeeded", metric=metrics[-1]))
    assert min(metrics) <= 1.0  # found 12 or 14


def test_local_search_climbs_end_at_constrained_local_optima():
    space = SearchSpace({f"x{i}": Categorical([0, 1, 2], label=f"x{i}") for i in range(3)})
    space = space.with_constraints(Constraint(lambda a: a["x0"] != 2, label="x0 != 2"))
    s = LocalSearch(n_init=2, seed=0)
    s.setup(space)
    proposed = []
    for i in range(18):  # 18 valid archs; every one is proposed once, none invalid
        arch = s.propose()
        assert arch is not None and space.satisfies(arch)
        proposed.append(arch)
        s.tell(Trial(i, arch, "succeeded", metric=float(sum(arch.values()))))
    assert len({repr(sorted(a.items())) for a in proposed}) == 18 and s.propose() is None
