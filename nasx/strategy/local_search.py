"""Local search, optionally predictor-guided: the strategy that beats regularized evolution on
NAS-Bench-201 (see ``benchmarks/nb201_search.results.md``).

After ``n_init`` random archs, every proposal is a neighbour (one label changed) of the best arch
found so far that still has untried neighbours: best-first hill climbing, which moves on to the next
best arch when a neighbourhood is exhausted (a local optimum), so it never needs a restart rule.
White, Nolen, Ravi and Savani (UAI 2021, "Exploring the loss landscape in neural architecture
search") found this simple method state of the art on NAS benchmarks. With ``predictor='gp'``
(the default) the untried neighbours are not taken in random order: a Gaussian process over the
finished trials (:class:`~nasx.strategy.surrogate.HammingGP`) ranks them and the most promising is
proposed, in the spirit of BANANAS (White et al., AAAI 2021). Every decision is a function of the
trial history and the per-proposal generator, so a resumed search continues exactly.

    >>> from nasx.space import Categorical, SearchSpace
    >>> from nasx.trial import Trial
    >>> space = SearchSpace({f'x{i}': Categorical([0, 1, 2], label=f'x{i}') for i in range(5)})
    >>> s = LocalSearch(n_init=3, seed=0); s.setup(space)
    >>> for i in range(25):                       # 25 of 243 archs; the optimum is all 2s
    ...     arch = s.propose()
    ...     s.tell(Trial(i, arch, 'succeeded', metric=float(sum(arch.values()))))
    >>> max(t.metric for t in s.history)
    10.0
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from .base import Strategy


class LocalSearch(Strategy):
    """Best-first local search over one-label changes, its candidates ranked by a GP surrogate.

    When to prefer it: a query budget of tens to a few hundred trials on a space whose neighbouring
    archs score alike (cell spaces such as NAS-Bench-201: at 100 queries it finds archs about as
    good as regularized evolution finds in 300). It climbs greedily, so on a very noisy metric,
    or with thousands of trials to spend, regularized evolution explores more broadly; in spaces
    with very many labels a neighbourhood is large and the climb is slow.

    Args:
        n_init: random archs evaluated before climbing (20: fewer often starts the climb on a
            poor hill, more wastes budget; measured on NAS-Bench-201).
        predictor: ``'gp'`` to rank a neighbourhood with a Gaussian process before choosing, or
            None to take neighbours in random order (plain local search).
        lengthscale, noise: the GP's kernel ``exp(-hamming / lengthscale)`` and noise variance.
        initial_archs: archs proposed first, in order, in place of random ones (a warm start, e.g.
            the best of a random sample ranked by a zero-cost proxy,
            :func:`nasx.evaluator.zero_cost.top_archs`); random archs fill up to ``n_init``.
        seed: makes proposals reproducible, across resumes too.

    Archs are never proposed twice (dedup is part of the method); failed and rejected archs are
    not climbed from and not shown to the GP.
    """

    def __init__(
        self,
        n_init: int = 20,
        predictor: str | None = "gp",
        lengthscale: float = 1.0,
        noise: float = 0.1,
        initial_archs: Sequence[dict[str, Any]] = (),
        seed: int | None = None,
    ):
        super().__init__(dedup=True, seed=seed)
        if n_init < 1:
            raise ValueError(f"n_init must be at least 1, got {n_init}")
        if predictor not in ("gp", None):
            raise ValueError(f"predictor must be 'gp' or None, got {predictor!r}")
        self.n_init = n_init
        self.predictor = predictor
        self.lengthscale = lengthscale
        self.noise = noise
        self.initial_archs = [dict(a) for a in initial_archs]

    def reset(self) -> None:
        self._grids = {label: c.grid() for label, c in self.search_space.items()}

    def neighbours(self, arch: dict[str, Any]) -> list[dict[str, Any]]:
        """Every arch that differs from ``arch`` in exactly one label, in label and grid order."""
        out = []
        for label, grid in self._grids.items():
            for value in grid:
                if value != arch[label]:
                    out.append({**arch, label: value})
        return out

    def next_arch(self, rng: random.Random) -> dict[str, Any] | None:
        for arch in self.initial_archs:
            if self.is_new(arch):
                return arch
        succeeded = self.succeeded_trials()
        if self.num_proposed < self.n_init or not succeeded:
            return self.random_unseen_arch(rng)
        # The best arch that still has untried neighbours (ties: the earlier trial).
        for trial in sorted(succeeded, key=lambda t: (-self.score(t), t.id)):
            candidates = [a for a in self.neighbours(trial.arch) if self.is_new(a)]
            if candidates:
                break
        else:
            return self.random_unseen_arch(rng)  # every neighbourhood explored: jump elsewhere
        if self.predictor is None or len(candidates) == 1:
            return rng.choice(candidates)
        return candidates[self._rank(candidates, succeeded)]

    def _rank(self, candidates: list[dict[str, Any]], succeeded: list) -> int:
        """Index of the candidate the GP predicts best."""
        from .surrogate import HammingGP, encode

        gp = HammingGP(self.lengthscale, self.noise)
        gp.fit(encode([t.arch for t in succeeded], self._grids), [self.score(t) for t in succeeded])
        return int(gp.predict(encode(candidates, self._grids)).argmax())

    def __repr__(self) -> str:
        return f"LocalSearch(n_init={self.n_init}, predictor={self.predictor!r}, seed={self.seed})"
