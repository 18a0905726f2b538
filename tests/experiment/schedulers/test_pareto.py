"""nasx.experiment.schedulers.pareto against brute-force definitions and hand-computed values."""

from __future__ import annotations

import itertools
import math
import random

import pytest

from nasx.experiment.schedulers.pareto import (
    best_first,
    crowding_distances,
    dominates,
    nondominated_fronts,
    to_score,
)


def _brute_force_fronts(scores):
    """Peel fronts by definition: the points no remaining point dominates."""
    left, fronts = dict(scores), []
    while left:
        front = sorted(k for k in left if not any(dominates(left[j], left[k]) for j in left))
        fronts.append(front)
        for k in front:
            del left[k]
    return fronts


@pytest.mark.parametrize("seed", range(20))
def test_fronts_equal_the_definition(seed):
    rng = random.Random(seed)
    # few distinct values, so that ties and duplicates occur
    scores = {k: (rng.randint(0, 5), rng.randint(0, 5), rng.randint(0, 3)) for k in range(30)}
    assert nondominated_fronts(scores) == _brute_force_fronts(scores)


def test_crowding_by_hand():
    scores = {0: (0.0, 4.0), 1: (1.0, 3.0), 2: (3.0, 1.0), 3: (4.0, 0.0)}
    d = crowding_distances([0, 1, 2, 3], scores)
    # point 1: neighbours 0 and 2: (3 - 0) / 4 on the first objective, (4 - 1) / 4 on the second
    assert d[1] == pytest.approx(1.5) and d[2] == pytest.approx(1.5)
    assert math.isinf(d[0]) and math.isinf(d[3])


def test_best_first_one_objective_breaks_ties_by_key():
    assert best_first({5: (0.5,), 2: (0.9,), 7: (0.5,), 1: (0.1,)}) == [2, 5, 7, 1]


def test_best_first_several_objectives_puts_fronts_in_order():
    # accuracy up, latency down (negated): 3 dominates 0; 1 and 3 trade off; 2 is dominated by all
    scores = {0: (0.8, -10.0), 1: (0.7, -2.0), 2: (0.6, -11.0), 3: (0.9, -9.0)}
    ranked = best_first(scores)
    assert set(ranked[:2]) == {1, 3} and ranked[2:] == [0, 2]


def test_to_score_refuses_what_does_not_fit():
    with pytest.raises(ValueError, match="2 objective value"):
        to_score([1.0, 2.0], ["maximize"])
    with pytest.raises(ValueError, match="'maximize' or 'minimize'"):
        to_score(1.0, ["max"])
    with pytest.raises(ValueError, match="nan"):
        to_score(float("nan"), ["maximize"])


def test_every_key_appears_once():
    scores = {
        k: (float(a), float(b)) for k, (a, b) in enumerate(itertools.product(range(4), repeat=2))
    }
    ranked = best_first(scores)
    assert sorted(ranked) == sorted(scores) and ranked[0] == 15  # (3, 3) dominates all
