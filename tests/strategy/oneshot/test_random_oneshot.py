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
    s = RandomOneShot(num_samples=1)
    s.run(ToySpace(), toy_evaluator(epochs=2))
    results = s.search(Random(), num_samples=6)
    assert results[0][1] == TOY_RIGHT and trial is not None


def test_filter_keeps_refused_paths_out_of_training_and_scoring():
    # NNI's RandomOneShot(filter=...): archs the filter refuses are never trained or scored
    used = []
    s = RandomOneShot(num_samples=5, filter=lambda arch: arch["op"] != "noise")
    s.run(ToySpace(), toy_evaluator(epochs=1, limit_train_batches=4, limit_val_batches=1))
    supernet = s._need_supernet()
    original = supernet.use_arch
    supernet.use_arch = lambda arch, gates=None, **kw: (
        used.append(arch),
        original(arch, gates, **kw),
    )[1]
    s.search(num_samples=5)
    assert used and all(a["op"] != "noise" for a in used)
    assert all(a["op"] != "noise" for _, a in s.results)
    with pytest.raises(TypeError, match="filter"):
        RandomOneShot(filter=3)


def test_scoring_no_arch_is_refused_naming_num_samples():
    # issue 29: num_samples=0 trained a supernet and then had no arch to export
    with pytest.raises(ValueError, match="num_samples must be an integer >= 1, got 0"):
        RandomOneShot(num_samples=0)


def test_default_reward_reads_class_scores_first_or_last():
    """Token accuracy for a language model's [B, T, V] logits, pixel accuracy for [B, C, H, W]
    (hand-counted), and a clear error where neither layout fits the labels."""
    from nasx.strategy.oneshot.sampling import batch_reward

    tokens = torch.tensor([[[0.0, 9.0, 0.0], [9.0, 0.0, 0.0]], [[0.0, 0.0, 9.0], [0.0, 9.0, 0.0]]])
    # predicted tokens (argmax over V): [[1, 0], [2, 1]]; 3 of 4 match
    assert batch_reward(tokens, torch.tensor([[1, 0], [2, 0]])) == 0.75
    pixels = torch.zeros(2, 3, 1, 2)  # [B, C, H, W]
    pixels[:, 2] = 1.0  # class 2 everywhere
    assert batch_reward(pixels, torch.tensor([[[2, 0]], [[2, 2]]])) == 0.75
    with pytest.raises(ValueError, match=r"got scores \[2, 2, 3\] and labels \[2, 5\]"):
        batch_reward(tokens, torch.zeros(2, 5, dtype=torch.long))
