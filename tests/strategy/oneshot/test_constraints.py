"""Every one-shot strategy obeys the space's constraints: the paths it trains and validates on
(RandomOneShot, ENAS, Proxyless) and the archs it exports (all five) satisfy them.

The constraint forbids exactly the toy space's right answer (``op='linear'`` with ``pick=[1]``),
so an export that ignored it would return that arch."""

from __future__ import annotations

import pytest
import torch

from nasx.space import EmptySpaceError, add_constraint, search_space
from nasx.strategy import DARTS, ENAS, GumbelDARTS, Proxyless, RandomOneShot, RegularizedEvolution

from .toys import TOY_RIGHT, ToySpace, toy_evaluator


def not_the_right_answer(arch):
    return not (arch["op"] == "linear" and arch["pick"] == [1])


def constrained_space():
    space = ToySpace()
    add_constraint(space, not_the_right_answer, label="not linear + pick 1")
    return space


STRATEGIES = {
    "darts": lambda: DARTS(),
    "gumbel_darts": lambda: GumbelDARTS(),
    "enas": lambda: ENAS(ctrl_steps_aggregate=2),
    "random_oneshot": lambda: RandomOneShot(num_samples=4),
    "random_oneshot_evolution": lambda: RandomOneShot(
        search_strategy=RegularizedEvolution(population_size=2, sample_size=1, seed=0),
        num_samples=4,
    ),
    "proxyless": lambda: Proxyless(),
}


@pytest.mark.parametrize("name", sorted(STRATEGIES))
def test_paths_and_exports_satisfy_the_constraints(name):
    torch.manual_seed(0)
    space = constrained_space()
    assert search_space(space).count_valid().count == 5  # 3 ops x 2 picks, minus one
    strategy = STRATEGIES[name]()
    used = []
    build = strategy.build_supernet

    def recording_build(model_space):
        supernet = build(model_space)
        original = supernet.use_arch

        def use_arch(arch, gates=None, **kw):
            used.append(dict(arch))
            return original(arch, gates, **kw)

        supernet.use_arch = use_arch
        return supernet

    strategy.build_supernet = recording_build
    strategy.run(space, toy_evaluator(epochs=1, limit_train_batches=6, limit_val_batches=2))
    exported = strategy.export_top_models(3)
    assert exported and TOY_RIGHT not in exported
    assert all(not_the_right_answer(a) for a in exported), exported
    assert all(not_the_right_answer(a) for a in used), [a for a in used if a == TOY_RIGHT]
    if strategy.supernet_mode == "path":
        assert used  # the recording saw the sampled paths


@pytest.mark.parametrize("make", [DARTS, Proxyless], ids=["darts", "proxyless"])
def test_an_export_that_favours_a_forbidden_arch_falls_back_to_the_best_valid_one(make):
    # alphas made to favour the forbidden arch: the export is the next most probable arch
    s = make()
    s.run(constrained_space(), toy_evaluator(epochs=1, limit_train_batches=1, limit_val_batches=1))
    with torch.no_grad():
        s.supernet.alpha("op").copy_(torch.tensor([0.0, 0.0, 5.0]))  # noise, zero, linear
        s.supernet.alpha("pick").copy_(torch.tensor([0.0, 3.0]))
    assert s.supernet.export() == TOY_RIGHT
    assert s.export_top_models(2) == [{"op": "linear", "pick": [0]}, {"op": "noise", "pick": [1]}]


def test_path_sampling_from_an_empty_space_is_a_clear_error():
    space = ToySpace()
    add_constraint(space, lambda arch: False, label="nothing")
    with pytest.raises(EmptySpaceError, match="'nothing' rejected"):
        RandomOneShot(num_samples=1).run(
            space, toy_evaluator(epochs=1, limit_train_batches=1, limit_val_batches=1)
        )
