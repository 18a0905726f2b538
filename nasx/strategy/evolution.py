"""Regularized (aging) evolution, Real et al. 2019, "Regularized Evolution for Image Classifier
Architecture Search" (AAAI), the strategy NNI calls ``RegularizedEvolution``.

The population is the ``population_size`` most recently finished successful trials (aging: the
oldest member dies when a child joins). Each proposal after the random warm-up picks
``sample_size`` members at random, takes the best, and mutates it. The population is all it keeps
(not every trial), and replaying the stored trials rebuilds it, so a resumed search has exactly
the population it had when it stopped.

Mutation. A label with listed values (``Categorical``, layer and input choices) changes to
another of its values, drawn uniformly. A numerical choice (``uniform``, ``loguniform``,
``normal``, their quantised variants: hyperparameters such as a learning rate) takes a local
step instead, so a good learning rate is refined rather than forgotten:

1. its value ``x`` goes to the choice's distribution coordinate ``u = F(x)`` in ``[0, 1]``, where
   ``F`` is the choice's cumulative distribution: ``(x - low) / (high - low)`` for a uniform range,
   the same in ``log x`` for a log-uniform one, the normal CDF for ``normal`` (of ``log x`` when
   log-normal);
2. ``u' = u + N(0, numeric_mutation_scale)``, reflected at 0 and 1 back into ``[0, 1]`` (a step
   that would leave the range bounces off its end: the child stays in bounds without piling up
   on them);
3. ``x' = F^-1(u')``, then rounded to a multiple of ``quantize`` and clipped to the bounds (as
   every value of the choice is); a quantised step that rounds back to ``x`` moves to the
   neighbouring value in the step's direction, so the label does change.

So with the default ``numeric_mutation_scale=0.1`` a uniform or log-uniform child lies within
10 % of the range (in log space for log-uniform) of its parent two thirds of the time: 0.3
decades for a learning rate in ``[1e-4, 1e-1]``. On a smooth synthetic objective over such a
space, this step left 0.29x the regret of a fresh draw after 100 trials, 0.12x after 200
(``benchmarks/evolution_numeric.py``; 0.15 gave 0.44x / 0.27x, 0.3 gave 0.73x / 0.67x).
NNI's ``RegularizedEvolution`` does not do this: its mutation re-samples the label from the whole
search space (``random.choice`` over its values in NNI 2.x's strategy), so a numerical value
jumps anywhere in its range. ``numeric_mutation_scale=None`` keeps that behaviour: a fresh draw
from the choice's own distribution.

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
import math
import random
from statistics import NormalDist
from typing import Any

from nasx._checks import check_int, check_number
from nasx.space import Numerical
from nasx.trial import SUCCEEDED, Trial

from .base import Strategy


class RegularizedEvolution(Strategy):
    """Aging evolution.

    Args:
        population_size: members kept alive; also the number of random archs that start the search.
        sample_size: tournament size (members compared to choose a parent).
        mutation_prob: chance that each label of the parent is resampled (to a different value);
            at least one label always changes.
        numeric_mutation_scale: the standard deviation of a numerical choice's mutation step, as a
            fraction of its range in its distribution coordinate (see the module docstring); None
            re-draws the value from the choice's distribution (NNI's behaviour).
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
        numeric_mutation_scale: float | None = 0.1,
    ):
        super().__init__(dedup=dedup, seed=seed)
        self.crossover = bool(crossover)
        if numeric_mutation_scale is not None:
            check_number("numeric_mutation_scale", numeric_mutation_scale, minimum=0)
            if not 0 < numeric_mutation_scale <= 1:
                raise ValueError(
                    "numeric_mutation_scale must be a number in (0, 1] (a fraction of the range) "
                    f"or None to re-draw numerical values, got {numeric_mutation_scale!r}"
                )
        self.numeric_mutation_scale = numeric_mutation_scale
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

    def relearn(self, trial: Trial) -> None:
        # a living member reached a higher budget: it competes with its newer result, in the
        # place (age) it had; a member that died stays dead, and a promoted job that failed
        # leaves the lower budget's result standing
        if trial.status != SUCCEEDED:
            return
        for i, member in enumerate(self._population):
            if member.id == trial.id:
                self._population[i] = trial
                return

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

    def tournament(self, population: list[Trial], rng: random.Random) -> dict[str, Any]:
        """The arch of the best of ``sample_size`` members drawn at random."""
        contenders = rng.sample(population, min(self.sample_size, len(population)))
        best: dict[str, Any] = max(contenders, key=self.score).arch
        return best

    def mutate(self, arch: dict[str, Any], rng: random.Random) -> dict[str, Any]:
        """A copy of ``arch`` with each label resampled with probability ``mutation_prob``
        (numerical choices step from their value: see the module docstring)."""
        space = self.need_space()
        mutable = [label for label, c in space.items() if not c.finite or len(c) > 1]
        if not mutable:
            return dict(arch)
        changed = [label for label in mutable if rng.random() < self.mutation_prob]
        if not changed:
            changed = [rng.choice(mutable)]
        child = dict(arch)
        for label in changed:
            choice = space[label]
            if isinstance(choice, Numerical):
                if self.numeric_mutation_scale is None:  # NNI's way: a fresh draw
                    child[label] = choice.sample(rng)
                else:
                    child[label] = numeric_step(
                        choice, arch[label], self.numeric_mutation_scale, rng
                    )
                continue
            if not choice.finite:  # another kind of continuous choice: draw afresh
                child[label] = choice.sample(rng)
                continue
            options = [v for v in space[label].grid() if v != arch[label]]
            child[label] = rng.choice(options)
        return child


# The CDF coordinate is kept this far from 0 and 1, where a normal's inverse CDF is infinite.
_EDGE = 1e-12


def numeric_step(choice: Numerical, value: float, scale: float, rng: random.Random) -> float:
    """``value`` moved by one Gaussian step of ``scale`` in ``choice``'s distribution coordinate,
    reflected into the range, quantised and clipped (the rule is in the module docstring).

    >>> import random
    >>> lr = Numerical(1e-4, 1e-1, log_distributed=True, label='lr')
    >>> child = numeric_step(lr, 1e-3, 0.1, random.Random(0))
    >>> 1e-4 <= child <= 1e-1 and child != 1e-3
    True
    >>> numeric_step(Numerical(0, 10, quantize=5, label='q'), 5.0, 0.01, random.Random(0))
    10.0
    """
    u = _to_unit(choice, value)
    stepped = u + rng.gauss(0.0, scale)
    stepped = stepped % 2.0  # reflect at 0 and 1: a triangle wave of period 2
    if stepped > 1.0:
        stepped = 2.0 - stepped
    child = choice.qclip(_from_unit(choice, stepped))
    if child == value and choice.quantize is not None:
        # Rounded back to the parent: move to the neighbouring value in the step's direction
        # (the other way at a bound), so that the mutated label changes.
        direction = 1 if stepped >= u else -1
        values = choice.grid() if choice.finite else []
        if value in values:  # the listed values: a bound need not be a multiple of quantize
            i = values.index(value)
            for j in (i + direction, i - direction):
                if 0 <= j < len(values):
                    return float(values[j])
            return child
        for d in (direction, -direction):
            neighbour = choice.qclip(value + d * choice.quantize)
            if neighbour != value:
                return neighbour
    return child


def _to_unit(choice: Numerical, x: float) -> float:
    """``F(x)``: the choice's cumulative distribution at ``x`` (before quantisation)."""
    if choice.mu is not None and choice.sigma is not None:
        z = math.log(max(x, 1e-300)) if choice.log_distributed else x
        return NormalDist(choice.mu, choice.sigma).cdf(z)
    low, high = choice.low, choice.high
    if choice.log_distributed:
        x, low, high = math.log(x), math.log(low), math.log(high)
    return (x - low) / (high - low)


def _from_unit(choice: Numerical, u: float) -> float:
    """``F^-1(u)``, the inverse of :func:`_to_unit`."""
    if choice.mu is not None and choice.sigma is not None:
        z = NormalDist(choice.mu, choice.sigma).inv_cdf(min(max(u, _EDGE), 1.0 - _EDGE))
        return math.exp(z) if choice.log_distributed else z
    if choice.log_distributed:
        return math.exp(math.log(choice.low) + u * (math.log(choice.high) - math.log(choice.low)))
    return choice.low + u * (choice.high - choice.low)
