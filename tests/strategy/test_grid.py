"""GridSearch walks SearchSpace.grid() (the reference order), or a seeded permutation of it."""

from __future__ import annotations

import nasx.strategy.grid as grid_module
from nasx.strategy import GridSearch
from nasx.trial import arch_key


def walk(strategy, space):
    strategy.setup(space)
    out = []
    while (arch := strategy.propose()) is not None:
        out.append(arch)
    return out


def test_order_is_the_search_space_grid(tiny_space):
    assert walk(GridSearch(shuffle=False), tiny_space) == list(tiny_space.grid())


def test_default_is_shuffled_like_nni(tiny_space):
    assert GridSearch().shuffle and walk(GridSearch(seed=0), tiny_space) != list(tiny_space.grid())


def test_shuffle_is_a_seeded_permutation(tiny_space):
    a = walk(GridSearch(shuffle=True, seed=0), tiny_space)
    assert sorted(map(arch_key, a)) == sorted(map(arch_key, tiny_space.grid()))
    assert a != list(tiny_space.grid())
    assert a == walk(GridSearch(shuffle=True, seed=0), tiny_space)
    assert a != walk(GridSearch(shuffle=True, seed=1), tiny_space)


def test_large_grids_are_shuffled_without_materialising(tiny_space, monkeypatch):
    monkeypatch.setattr(grid_module, "_PERMUTATION_LIMIT", 5)
    s = GridSearch(shuffle=True, seed=3)
    archs = walk(s, tiny_space)
    assert s._order is None and s._affine is not None
    assert sorted(map(arch_key, archs)) == sorted(map(arch_key, tiny_space.grid()))
