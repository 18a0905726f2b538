"""Random search samples uniformly; without dedup it may repeat archs."""

from __future__ import annotations

from collections import Counter

from nasx.strategy import Random
from nasx.trial import arch_key


def test_uniform_without_dedup(tiny_space):
    s = Random(dedup=False, seed=0)
    s.setup(tiny_space)
    counts = Counter(arch_key(s.propose()) for _ in range(2400))
    assert len(counts) == 12
    # 200 expected per arch; a binomial sd is ~13.5, so 5 sd either side
    assert all(130 < c < 270 for c in counts.values()), counts


def test_without_dedup_archs_repeat_and_never_run_out(tiny_space):
    s = Random(dedup=False, seed=0)
    s.setup(tiny_space)
    archs = [s.propose() for _ in range(30)]
    assert len({arch_key(a) for a in archs}) <= 12 and None not in archs
