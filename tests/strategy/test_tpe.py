"""TPE (Optuna) learns per-label preferences faster than random search."""

from __future__ import annotations

from nasx.space import Categorical, SearchSpace
from nasx.strategy import TPE, Random
from nasx.trial import Trial

# 6 labels x 4 values = 4096 archs; the metric counts labels set to 3.
SPACE = SearchSpace({f"x{i}": Categorical([0, 1, 2, 3], label=f"x{i}") for i in range(6)})


def best_after(strategy, n):
    strategy.setup(SPACE)
    best = 0.0
    for i in range(n):
        arch = strategy.propose()
        score = float(sum(v == 3 for v in arch.values()))
        strategy.tell(Trial(i, arch, "succeeded", metric=score))
        best = max(best, score)
    return best


def test_tpe_beats_random_search_on_a_separable_problem():
    tpe = [best_after(TPE(n_startup_trials=10, seed=s), 40) for s in range(3)]
    rnd = [best_after(Random(seed=s), 40) for s in range(3)]
    assert sum(tpe) > sum(rnd), (tpe, rnd)
