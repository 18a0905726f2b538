"""Regularized (aging) evolution, Real et al. 2019, "Regularized Evolution for Image Classifier
Architecture Search" (AAAI), the strategy NNI calls ``RegularizedEvolution``.

The population is the ``population_size`` most recently finished successful trials (aging: the
oldest member dies when a child joins). Each proposal after the random warm-up picks
``sample_size`` members at random, takes the best, and mutates it. The population is all it keeps
(not every trial), and replaying the stored trials rebuilds it, so a resumed search has exactly
the population it had when it stopped.

    >>> from nasx.space import Categorical, SearchSpace
    >>> space = SearchSpace({f'x{i}': Categorical([0, 1], label=f'x{i}') for i in range(6)})
    >>> s = RegularizedEvolution(population_size=4, sample_size=2, seed=0); s.setup(space)
    >>> from nasx.trial import Trial
    >>> for i in range(20):
    ...     arch = s.propose()
    ...     s.tell(Trial(i, arch, 'succeeded', metric=sum(arch.values())))
    >>> max(t.metric for t in s.population()) >= 5
    True
"""

from __future__ import annotations

import collections
import random
from typing import Any

from nasx._checks import check_int, check_number
from nasx.trial import SUCCEEDED, Trial

from .base import Strategy


class RegularizedEvolution(Strategy):
    """Aging evolution.

    Args:
        population_size: members kept alive; also the number of random archs that start the search.
        sample_size: tournament size (members compared to choose a parent).
        mutation_prob: chance that each label of the parent is resampled (to a different value);
            at least one label always changes.
        crossover: NNI's option: the child starts from a crossover of the winners of two
            tournaments (each label taken from either with probability 1/2) before mutation.
        dedup: never propose an arch twice; a mutation that repeats one is retried, then a random
            unseen arch is used. A mutation that breaks a constraint of the space is retried the
            same way (up to 50 times, then a random arch that satisfies the constraints).
        seed: makes proposals reproducible, across resumes too.
    """

    keep_history = False  # the population is all it needs (kept by learn)

    def __init__(
        self,
        population_size: int = 100,
        sample_size: int = 25,
        mutation_prob: float = 0.05,
        dedup: bool = True,
        seed: int | None = None,
        crossover: bool = False,
    ):
        super().__init__(dedup=dedup, seed=seed)
        self.crossover = bool(crossover)
        check_int("population_size", population_size, minimum=1, allow_none=False)
        check_int("sample_size", sample_size, minimum=1, maximum=population_size, allow_none=False)
        check_number("mutation_prob", mutation_prob, minimum=0, maximum=1)
        self.population_size = population_size
        self.sample_size = sample_size
        self.mutation_prob = mutation_prob

    def reset(self) -> None:
        self._population: collections.deque[Trial] = collections.deque(maxlen=self.population_size)

    def learn(self, trial: Trial) -> None:
        if trial.status == SUCCEEDED:
            self._population.append(trial)  # the oldest member dies (deque's maxlen)

    def population(self) -> list[Trial]:
        """The living members: the last ``population_size`` succeeded trials, oldest first."""
        return list(self._population)

    def next_arch(self, rng: random.Random) -> dict[str, Any] | None:
        population = self.population()
        if self.num_proposed < self.population_size or not population:
            return self.random_unseen_arch(rng) if self.dedup else self.need_space().sample(rng)
        for _ in range(50):
            parent = self.tournament(population, rng)
            if self.crossover:  # NNI: each label from the winner of a second tournament, p=1/2
                other = self.tournament(population, rng)
                parent = {k: other[k] if rng.random() < 0.5 else v for k, v in parent.items()}
            child = self.mutate(parent, rng)
            if self.acceptable(child):  # new, and within the constraints (else re-sampled)
                return child
        return self.random_unseen_arch(rng)

    def tournament(self, population: list, rng: random.Random) -> dict[str, Any]:
        """The arch of the best of ``sample_size`` members drawn at random."""
        contenders = rng.sample(population, min(self.sample_size, len(population)))
        return max(contenders, key=self.score).arch

    def mutate(self, arch: dict[str, Any], rng: random.Random) -> dict[str, Any]:
        """A copy of ``arch`` with each label resampled with probability ``mutation_prob``."""
        space = self.need_space()
        mutable = [label for label, c in space.items() if not c.finite or len(c) > 1]
        if not mutable:
            return dict(arch)
        changed = [label for label in mutable if rng.random() < self.mutation_prob]
        if not changed:
            changed = [rng.choice(mutable)]
        child = dict(arch)
        for label in changed:
            if not space[label].finite:  # a continuous Numerical: draw afresh from its distribution
                child[label] = space[label].sample(rng)
                continue
            options = [v for v in space[label].grid() if v != arch[label]]
            child[label] = rng.choice(options)
        return child
