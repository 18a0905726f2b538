"""Random search: uniform samples from the search space, by default never the same arch twice.

>>> from nasx.space import Categorical, SearchSpace
>>> space = SearchSpace(a=Categorical([1, 2], label='a'), b=Categorical(['x', 'y'], label='b'))
>>> s = Random(seed=0); s.setup(space)
>>> archs = [s.propose() for _ in range(4)]
>>> len({(a['a'], a['b']) for a in archs}), s.propose()
(4, None)
"""

from __future__ import annotations

import random
from typing import Any

from .base import Strategy


class Random(Strategy):
    """Uniform random search (NNI's ``Random``).

    Args:
        dedup: skip archs already proposed; the strategy is exhausted once every arch was tried.
        seed: makes the sequence of proposals reproducible, across resumes too.
    """

    keep_history = False  # learns nothing from old trials: a long search keeps none in memory

    def __init__(self, dedup: bool = True, seed: int | None = None):
        super().__init__(dedup=dedup, seed=seed)

    def next_arch(self, rng: random.Random) -> dict[str, Any] | None:
        if not self.dedup:
            return self.need_space().sample(rng)
        return self.random_unseen_arch(rng)
