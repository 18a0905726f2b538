"""LocalSearch and its GP surrogate: hand-computed predictions, the climb, and bad arguments."""

from __future__ import annotations

import numpy as np
import pytest

from nasx.space import Categorical, SearchSpace
from nasx.strategy import LocalSearch
from nasx.strategy.surrogate import HammingGP, encode
from nasx.trial import Trial


def test_gp_matches_the_closed_form():
    # Two archs at Hamming distance 2, lengthscale 1: k = e^-2. Standardised targets are -1, +1,
    # so alpha = (K + noise I)^-1 [-1, 1] = [-1, 1] / (1 + noise - e^-2), and the prediction at a
    # point at distance 1 from both is mean + std * (e^-1 * (-a) + e^-1 * a) = mean.
    gp = HammingGP(lengthscale=1.0, noise=0.5)
    gp.fit([[0, 0], [1, 1]], [2.0, 4.0])
    a = 1 / (1 + 0.5 - np.exp(-2))
    expected_at_first = 3.0 + 1.0 * (1 * -a + np.exp(-2) * a)
    np.testing.assert_allclose(gp.predict([[0, 0], [0, 1]]), [expected_at_first, 3.0])
    with pytest.raises(ValueError, match="positive"):
        HammingGP(lengthscale=0)


def test_encode_uses_grid_indices_of_every_value_kind():
    grids = {"op": ["a", "b"], "skip": [[0], [1]]}
    assert encode([{"op": "b", "skip": [0]}, {"op": "a", "skip": [1]}], grids).tolist() == [
        [1, 0],
        [0, 1],
    ]


def _space(labels=6, values=4):
    return SearchSpace(
        {f"x{i}": Categorical(list(range(values)), label=f"x{i}") for i in range(labels)}
    )


def test_climbs_from_the_best_arch_and_ranks_neighbours_with_the_gp():
    space = _space()
    s = LocalSearch(n_init=5, predictor="gp", seed=1)
    s.setup(space)
    for i in range(5):
        arch = s.propose()
        s.tell(Trial(i, arch, "succeeded", metric=float(sum(arch.values()))))
    best = max(s.history, key=lambda t: t.metric)
    grids = {label: c.grid() for label, c in space.items()}
    gp = HammingGP()
    gp.fit(encode([t.arch for t in s.history], grids), [t.metric for t in s.history])
    candidates = s.neighbours(best.arch)
    assert len(candidates) == 6 * 3
    child = s.propose()
    # one label of the best arch changed: the neighbour the GP predicts best
    assert sum(child[k] != best.arch[k] for k in child) == 1
    assert child == candidates[int(gp.predict(encode(candidates, grids)).argmax())]


def test_finds_the_optimum_of_a_separable_metric_quickly():
    # 4**6 = 4096 archs; hill climbing needs at most 6 * 3 moves per improvement.
    space = _space()
    for predictor in ("gp", None):
        s = LocalSearch(n_init=5, predictor=predictor, seed=0)
        s.setup(space, direction="minimize")
        for i in range(120):
            arch = s.propose()
            s.tell(Trial(i, arch, "succeeded", metric=float(sum(arch.values()))))
        assert min(t.metric for t in s.history) == 0.0, predictor


def test_bad_arguments():
    with pytest.raises(ValueError, match="n_init"):
        LocalSearch(n_init=0)
    with pytest.raises(ValueError, match="predictor must be 'gp' or None"):
        LocalSearch(predictor="mlp")


def test_initial_archs_are_proposed_first_then_random_up_to_n_init():
    space = _space(labels=3, values=3)
    start = [{"x0": 2, "x1": 2, "x2": 1}, {"x0": 0, "x1": 0, "x2": 0}]
    s = LocalSearch(n_init=3, initial_archs=start, seed=0)
    s.setup(space)
    proposed = []
    for i in range(4):
        arch = s.propose()
        proposed.append(arch)
        s.tell(Trial(i, arch, "succeeded", metric=float(sum(arch.values()))))
    assert proposed[:2] == start and proposed[2] not in start
    # the 4th proposal climbs from the best so far
    best = max(s.history[:3], key=lambda t: t.metric).arch
    assert sum(proposed[3][k] != best[k] for k in best) == 1


def test_restarts_from_random_archs_at_a_local_optimum():
    # 2 labels x 3 values; the metric has a local optimum at (0, 0) (neighbours score lower) and
    # the global one at (2, 2). Starting from (0, 0) alone, the climb tries its 4 neighbours, finds
    # it is a local optimum, and the next proposal is a fresh random arch, not a neighbour.
    space = _space(labels=2, values=3)
    metric = {(0, 0): 5.0, (2, 2): 9.0}
    s = LocalSearch(n_init=1, initial_archs=[{"x0": 0, "x1": 0}], seed=0)
    s.setup(space)
    proposed = []
    for i in range(6):
        arch = s.propose()
        proposed.append(arch)
        s.tell(Trial(i, arch, "succeeded", metric=metric.get((arch["x0"], arch["x1"]), 1.0)))
    assert all(sum(a[k] != 0 for k in a) == 1 for a in proposed[1:5])  # the 4 neighbours
    assert s._climb_start == 5 and s._climb_best is not None and s._climb_best.id == 5
    assert sum(proposed[5][k] != 0 for k in proposed[5]) == 2  # jumped away
