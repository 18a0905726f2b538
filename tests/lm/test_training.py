"""The LM training loops: the KL against a hand computation, the sandwich rule's archs, elastic
training that improves both ends of the supernet, distillation that moves a student to its
teacher."""

from __future__ import annotations

import random

import torch

from nasx.hub.gpt import GPTSpace, largest_arch, smallest_arch
from nasx.lm import distill, evaluate_loss, kl_logits, sandwich_archs, train, train_elastic
from nasx.space import search_space
from nasx.strategy.oneshot import Supernet

SMALL = dict(
    vocab_size=16,
    block_size=8,
    search_embed_dim=(16, 32),
    search_depth=(1, 2),
    search_num_heads=(1, 2),
    search_mlp_ratio=(1.0, 2.0),
    head_dim=8,
)


def _data(seed=0, n=4):
    """A learnable sequence: token t+1 = (token t + 1) mod 16, random starts."""
    g = torch.Generator().manual_seed(seed)
    starts = torch.randint(0, 16, (n, 4, 1), generator=g)
    tokens = (starts + torch.arange(9)) % 16
    return [(t[:, :-1], t[:, 1:]) for t in tokens]


def test_kl_matches_a_hand_computation():
    s, t = torch.randn(2, 3, 5), torch.randn(2, 3, 5)
    p = t.softmax(-1)
    expected = (p * (p.log() - s.log_softmax(-1))).sum(-1).mean()
    torch.testing.assert_close(kl_logits(s, t), expected)
    p2 = (t / 2).softmax(-1)
    expected2 = (p2 * (p2.log() - (s / 2).log_softmax(-1))).sum(-1).mean() * 4
    torch.testing.assert_close(kl_logits(s, t, temperature=2.0), expected2)


def test_sandwich_archs_are_largest_smallest_then_random():
    ss = search_space(GPTSpace(**SMALL))
    archs = sandwich_archs(ss, random.Random(0), num_random=3)
    assert archs[0] == largest_arch(ss) and archs[1] == smallest_arch(ss) and len(archs) == 5
    assert all(ss.validate(a) == a for a in archs)


def test_elastic_training_improves_both_ends():
    torch.manual_seed(0)
    supernet = Supernet(GPTSpace(**SMALL), mode="path", alphas=False)
    ss = supernet.search_space
    data, val = _data(), _data(seed=1)

    def losses():
        out = []
        for arch in (largest_arch(ss), smallest_arch(ss)):
            supernet.use_arch(arch)
            out.append(evaluate_loss(supernet, val))
        return out

    before = losses()
    history = train_elastic(supernet, data, steps=60, lr=3e-3, num_random=1)
    after = losses()
    assert len(history) == 60
    assert after[0] < before[0] - 0.5 and after[1] < before[1] - 0.5, (before, after)


def test_distillation_moves_the_student_to_the_teacher():
    torch.manual_seed(0)
    space = GPTSpace(**SMALL)
    teacher = space.freeze(largest_arch(search_space(space)))
    train(teacher, _data(), steps=40, lr=3e-3)
    student = space.freeze(smallest_arch(search_space(space)))
    x, _ = _data(seed=2)[0]

    def gap():
        with torch.no_grad():
            return kl_logits(student.eval()(x), teacher.eval()(x)).item()

    before = gap()
    kls = distill(student, teacher, _data(), steps=40, lr=3e-3)
    assert kls[-1] < kls[0] and gap() < before / 2
    assert not teacher.training  # frozen in eval mode
