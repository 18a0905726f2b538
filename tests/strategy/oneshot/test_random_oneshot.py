"""RandomOneShot (SPOS): uniform path training, then a search of the trained supernet."""

import pytest
import torch

from nasx.strategy import RandomOneShot

from .toys import TOY_RIGHT, ToySpace, toy_data, toy_evaluator


def test_selects_the_right_candidate_and_inherits_weights():
    torch.manual_seed(0)
    s = RandomOneShot(num_samples=6, eval_batches=None)
    s.run(ToySpace(), toy_evaluator(epochs=3))
    best = s.export_top_models(1)[0]
    assert best == TOY_RIGHT
    assert len(s.results) == 6 and s.results[0][0] >= s.results[-1][0]
    model = s.subnet(best).eval()
    x, y = toy_data(256, 0).tensors
    acc = float((model(x).argmax(1) == y).float().mean())
    assert acc == pytest.approx(s.score(best), abs=0.05)  # same weights, same data, same metric


def test_search_with_a_multi_trial_strategy():
    trial = pytest.importorskip(
        "nasx.trial", reason="multi-trial strategies (branch multitrial) not merged"
    )
    from nasx.strategy import Random

    torch.manual_seed(0)
    s = RandomOneShot(num_samples=0)
    s.run(ToySpace(), toy_evaluator(epochs=2))
    results = s.search(Random(), num_samples=6)
    assert results[0][1] == TOY_RIGHT and trial is not None
