"""ENAS: controller sampling and search behaviour on the toy problem."""

import pytest
import torch

from nasx.space import search_space
from nasx.strategy import ENAS
from nasx.strategy.oneshot.enas import Controller

from .toys import TOY_RIGHT, ToySpace, toy_evaluator


def test_controller_samples_valid_archs_and_scores_them():
    space = search_space(ToySpace())
    c = Controller(space, hidden=8)
    arch, log_prob, entropy = c.sample(torch.Generator().manual_seed(0))
    space.validate(arch)
    _, forced_lp, _ = c.sample(forced=arch)
    torch.testing.assert_close(log_prob, forced_lp)
    # the same generator seed gives the same arch (what keeps DDP ranks in step)
    assert (
        c.sample(torch.Generator().manual_seed(5))[0]
        == c.sample(torch.Generator().manual_seed(5))[0]
    )


def test_selects_the_right_candidate():
    torch.manual_seed(0)
    s = ENAS(arc_learning_rate=3e-2)
    s.run(ToySpace(), toy_evaluator(epochs=3))
    top = s.export_top_models(2)
    assert top[0] == TOY_RIGHT and len(top) == 2 and top[1] != top[0]


@pytest.mark.slow
def test_selects_the_right_candidate_on_most_seeds():
    """The behaviour over seeds, not one lucky seed: REINFORCE on 48 noisy one-batch rewards
    finds the right candidate on 5 of these 6 seeds (measured); at least 4 must."""
    right = 0
    for seed in range(6):
        torch.manual_seed(seed)
        s = ENAS(arc_learning_rate=3e-2, seed=seed)
        s.run(ToySpace(), toy_evaluator(epochs=3))
        right += s.export_top_models(1)[0] == TOY_RIGHT
    assert right >= 4
