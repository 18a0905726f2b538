"""Grid search: every arch of the search space once, in order or in a seeded shuffled order.

>>> from nasx.space import Categorical, SearchSpace
>>> space = SearchSpace(a=Categorical([1, 2], label='a'), b=Categorical(['x', 'y'], label='b'))
>>> s = GridSearch(shuffle=False); s.setup(space)
>>> [s.propose() for _ in range(5)]
[{'a': 1, 'b': 'x'}, {'a': 1, 'b': 'y'}, {'a': 2, 'b': 'x'}, {'a': 2, 'b': 'y'}, None]
"""

from __future__ import annotations

import math
import random
from typing import Any

from .base import Strategy

# Up to this many archs a shuffle is an explicit permutation; above, an affine bijection
# i -> (a*i + b) mod size (a coprime to size) visits every index once without the memory.
_PERMUTATION_LIMIT = 1_000_000


class GridSearch(Strategy):
    """Walk the grid of every arch (the last label varying fastest, like ``SearchSpace.grid()``).

    Args:
        shuffle: visit the grid in a random order fixed by ``seed`` (the default, as in NNI);
            ``shuffle=False`` walks it in order.
        seed: the shuffle's seed.
        dedup: NNI's switch. ``True`` (the default): a resumed search walks the same order and
            skips every arch already proposed, even ones stored from another order or strategy.
            ``False``: no check against proposed archs; a resumed search goes on from the
            position of its last proposal, so a resume with the same seed repeats nothing, and
            one with another order may repeat archs (NNI: "might result in duplications").

    A grid never proposes an arch twice within one run (nasx refuses continuous choices here,
    so there is no NNI-style refinement of ranges that could meet an arch again). With
    constraints (:mod:`nasx.space.constraints`) it skips the archs that break them too;
    :meth:`valid_count` says how many archs it walks.
    """

    keep_history = False  # learns nothing from old trials: a long search keeps none in memory

    def __init__(self, shuffle: bool = True, seed: int | None = None, dedup: bool = True):
        super().__init__(dedup=dedup, seed=seed)
        self.shuffle = shuffle

    def reset(self) -> None:
        self._labels = list(self.need_space())
        self._values = [self.need_space()[label].grid() for label in self._labels]
        self._size = math.prod(len(v) for v in self._values)
        self._order = None
        self._affine = None
        self._cursor = 0
        if self.shuffle:
            rng = random.Random(f"GridSearch:{self.seed}")
            if self._size <= _PERMUTATION_LIMIT:
                self._order = list(range(self._size))
                rng.shuffle(self._order)
            else:
                a = rng.randrange(1, self._size)
                while math.gcd(a, self._size) != 1:
                    a = rng.randrange(1, self._size)
                self._affine = (a, rng.randrange(self._size))

    def __repr__(self) -> str:
        return f"GridSearch(shuffle={self.shuffle}, seed={self.seed}, dedup={self.dedup})"

    def next_arch(self, rng: random.Random) -> dict[str, Any] | None:
        # Walk the order from the start, skipping archs already proposed: a resumed search (even
        # one whose stored trials came from another order) never repeats an arch. Without dedup
        # the walk resumes at the position of the last proposal instead, checking nothing.
        if not self.dedup:
            self._cursor = max(self._cursor, self.num_proposed)
        while self._cursor < self._size:
            n = self._cursor
            self._cursor += 1
            if self._order is not None:
                n = self._order[n]
            elif self._affine is not None:
                a, b = self._affine
                n = (a * n + b) % self._size
            arch = self.arch_at(n)
            if self.acceptable(arch):  # new, and within the constraints
                return arch
        space = self.need_space()
        if self.num_proposed == 0 and space.constraints:
            from nasx.space import EmptySpaceError

            count = space.count_valid()
            rejected = ", ".join(f"{k!r} rejected {n}" for k, n in count.rejected.items())
            raise EmptySpaceError(
                "GridSearch walked the whole grid and found no arch that satisfies the "
                f"constraints: {count} ({rejected}). Relax a constraint or widen the space"
            )
        return None

    def valid_count(self) -> Any:
        """How many archs the grid walks (those within the constraints): a
        :class:`~nasx.space.ValidCount`, exact when the space is small enough to enumerate."""
        return self.need_space().count_valid()

    def arch_at(self, index: int) -> dict[str, Any]:
        """The ``index``-th arch of the grid (mixed-radix decoding, last label fastest)."""
        arch = {}
        for label, values in zip(reversed(self._labels), reversed(self._values), strict=True):
            index, i = divmod(index, len(values))
            arch[label] = values[i]
        return {label: arch[label] for label in self._labels}
