"""REINFORCE updates checked against a hand computation of Adam's first steps."""

from __future__ import annotations

import pytest
import torch

from nasx.space import Categorical, SearchSpace
from nasx.strategy import PolicyGradient
from nasx.trial import Trial


def test_first_updates_match_hand_computation():
    space = SearchSpace(op=Categorical(["a", "b", "c"], label="op"))
    lr = 0.05
    s = PolicyGradient(learning_rate=lr, baseline_decay=0.9, seed=0)
    s.setup(space)
    # First trial: the baseline becomes the reward, the advantage is 0: no change.
    s.tell(Trial(0, {"op": "b"}, "succeeded", metric=1.0))
    assert torch.equal(s.logits["0"].detach(), torch.zeros(3))
    assert s.baseline == 1.0
    # Second trial: baseline 0.9*1 + 0.1*2 = 1.1, advantage 2 - 1.1 = 0.9 > 0.
    # d loss / d logits = -adv * (onehot(c) - softmax) = -0.9 * ([0,0,1] - 1/3). Adam's second step
    # (the first had a zero gradient) moves each logit against the gradient's sign by
    # lr * (0.1 / (1 - 0.9**2)) / sqrt(0.001 / (1 - 0.999**2)): c up, a and b down.
    s.tell(Trial(1, {"op": "c"}, "succeeded", metric=2.0))
    assert s.baseline == pytest.approx(1.1)
    step = lr * (0.1 / (1 - 0.9**2)) / (0.001 / (1 - 0.999**2)) ** 0.5
    assert s.logits["0"].detach() == pytest.approx(torch.tensor([-step, -step, step]), abs=1e-6)


def test_failed_trials_do_not_update_the_controller():
    space = SearchSpace(op=Categorical(["a", "b"], label="op"))
    s = PolicyGradient(seed=0)
    s.setup(space)
    s.tell(Trial(0, {"op": "a"}, "failed", error="boom"))
    assert s.baseline is None and torch.equal(s.logits["0"].detach(), torch.zeros(2))


def test_learns_the_best_value_of_each_label(tiny_space):
    s = PolicyGradient(learning_rate=0.2, dedup=False, seed=0)
    s.setup(tiny_space)
    for i in range(80):
        arch = s.propose()
        s.tell(
            Trial(i, arch, "succeeded", metric=float(arch["act"] == 2) + float(arch["width"] == 16))
        )
    probs = s.probabilities()
    assert probs["act"][2] > 0.6 and probs["width"][16] > 0.6


@pytest.mark.parametrize("name", ["darts", "mnasnet"])
def test_many_labels_pair_each_label_with_its_own_logits(name):
    # ParameterDict sorts the keys of a plain dict ('0', '1', '10', ...): with more than 10 labels
    # label i was once paired with another label's logits (IndexError, or wrong values).
    from nasx.hub.registry import space_entry
    from nasx.space import search_space

    entry = space_entry(name)
    space = search_space(entry.cls(**entry.small))
    assert len(space) > 10
    s = PolicyGradient(learning_rate=0.5, dedup=False, seed=0)
    s.setup(space)
    for i in range(4):
        arch = s.propose()
        space.validate(arch)
        s.tell(Trial(i, arch, "succeeded", metric=float(i)))
    probs = s.probabilities()
    assert list(probs) == list(space)
    for label, choice in space.items():
        assert len(probs[label]) == len(choice.grid())


def test_samples_per_update_steps_once_per_batch_of_trials_on_their_mean_loss():
    space = SearchSpace(op=Categorical(["a", "b", "c"], label="op"))
    batched = PolicyGradient(learning_rate=0.05, samples_per_update=2, seed=0)
    batched.setup(space)
    batched.tell(Trial(0, {"op": "b"}, "succeeded", metric=1.0))  # baseline 1, advantage 0
    batched.tell(Trial(1, {"op": "c"}, "succeeded", metric=2.0))  # second of the batch: a step
    # the mean of (0, the second trial's loss): half the gradient, Adam's step is the same size
    step = 0.05  # Adam's first step moves each logit by lr against its gradient's sign
    assert batched.logits["0"].detach() == pytest.approx(
        torch.tensor([-step, -step, step]), abs=1e-6
    )
    batched.tell(Trial(2, {"op": "a"}, "succeeded", metric=0.0))  # pending: no step yet
    assert batched.logits["0"].detach() == pytest.approx(
        torch.tensor([-step, -step, step]), abs=1e-6
    )


def test_reward_for_invalid_teaches_the_controller_from_failed_trials():
    space = SearchSpace(op=Categorical(["a", "b"], label="op"))
    s = PolicyGradient(learning_rate=0.1, reward_for_invalid=-1.0, seed=0)
    s.setup(space)
    s.tell(Trial(0, {"op": "b"}, "succeeded", metric=1.0))
    s.tell(Trial(1, {"op": "a"}, "failed", error="boom"))  # reward -1 < baseline 1: 'a' down
    probs = s.probabilities()["op"]
    assert probs["b"] > probs["a"]


def test_nni_ppo_settings_are_refused_with_what_nasx_does():
    with pytest.raises(TypeError, match="REINFORCE"):
        PolicyGradient(replay_buffer_size=100)
    with pytest.raises(ValueError, match="samples_per_update"):
        PolicyGradient(samples_per_update=0)
