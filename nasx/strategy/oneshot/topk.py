"""The k most probable archs under independent per-label probabilities, best first.

The first arch is the strategy's own export (e.g. DARTS's cell rule); the next ones change the
labels whose runner-up values lose least probability. Labels are treated as independent. Archs
that break the space's constraints are skipped: the export is then the most probable valid arch.

    >>> from nasx.space import Categorical, SearchSpace
    >>> space = SearchSpace(a=Categorical([0, 1], label='a'), b=Categorical(['x', 'y'], label='b'))
    >>> top_k_archs({'a': 0, 'b': 'x'}, {'a': {0: .9, 1: .1}, 'b': {'x': .6, 'y': .4}}, space, 3)
    [{'a': 0, 'b': 'x'}, {'a': 0, 'b': 'y'}, {'a': 1, 'b': 'x'}]
"""

from __future__ import annotations

import heapq
import math
import random
from typing import Any

from nasx._checks import check_int


def _as_value(label: str, key: Any, choice: Any) -> Any:
    grid = choice.grid()
    if grid and isinstance(grid[0], list):  # input choice: probs are keyed by input index
        return [key] if not isinstance(key, tuple) else list(key)
    return key


def top_k_archs(
    best: dict[str, Any], probs: dict[str, dict[Any, float]], space: Any, k: int
) -> list[dict[str, Any]]:
    """``best`` first, then archs differing in a few labels, by decreasing joint log-probability."""
    check_int("top_k", k, minimum=1, allow_none=False)
    # For each label, the cost (log-prob loss) of switching from the best value to each other value.
    moves: list[tuple[float, str, Any]] = []
    for label, dist in probs.items():
        if label not in best or label not in space:
            continue
        best_value = space[label].validate(best[label])
        p_best = max(dist.get(prob_key(best_value), 1e-12), 1e-12)
        for key, p in dist.items():
            value = space[label].validate(_as_value(label, key, space[label]))
            if value != best_value:
                moves.append((math.log(p_best) - math.log(max(p, 1e-12)), label, value))
    moves.sort(key=lambda m: m[0])
    # Archs that break the space's constraints are skipped (nasx.space.constraints).
    satisfies = getattr(space, "satisfies", None) or (lambda arch: True)
    out = [dict(best)] if satisfies(best) else []
    seen = {repr(sorted(best.items()))}
    # Best-first over subsets of moves (at most one move per label).
    heap: list[tuple[float, tuple[int, ...]]] = [(m[0], (i,)) for i, m in enumerate(moves[:64])]
    heapq.heapify(heap)
    pops = 0
    while heap and len(out) < k and pops < 20_000:
        cost, picked = heapq.heappop(heap)
        pops += 1
        labels = [moves[i][1] for i in picked]
        if len(set(labels)) == len(labels):
            arch = dict(best)
            for i in picked:
                arch[moves[i][1]] = moves[i][2]
            key = repr(sorted(arch.items()))
            if key not in seen:
                seen.add(key)
                if satisfies(arch):
                    out.append(arch)
        last = picked[-1]
        for j in range(last + 1, min(len(moves), last + 8)):
            heapq.heappush(heap, (cost + moves[j][0], (*picked, j)))
    if len(out) < k and bool(getattr(space, "constraints", None)):
        out += _valid_by_sampling(probs, space, k - len(out), seen)
    return out


def _valid_by_sampling(
    probs: dict[str, dict[Any, float]], space: Any, k: int, seen: set[str]
) -> list[dict[str, Any]]:
    """Up to ``k`` unseen archs within the constraints, most probable first: drawn from the
    per-label distributions (and uniformly, which raises EmptySpaceError on an empty space)."""
    rng = random.Random(0)
    found: dict[str, tuple[float, dict[str, Any]]] = {}

    def log_prob(arch: dict[str, Any]) -> float:
        return sum(
            math.log(max(probs[label].get(prob_key(arch[label]), 1e-12), 1e-12))
            for label in probs
            if label in arch
        )

    def add(arch: dict[str, Any]) -> None:
        key = repr(sorted(arch.items()))
        if key not in seen and key not in found and space.satisfies(arch):
            found[key] = (log_prob(arch), arch)

    for _ in range(max(500, 50 * k)):
        arch = space.default()
        for label, dist in probs.items():
            if label in space:
                keys, weights = list(dist), list(dist.values())
                value = rng.choices(keys, weights)[0]
                arch[label] = space[label].validate(_as_value(label, value, space[label]))
        add(arch)
    for _ in range(max(50, k)):
        add(space.sample(rng))
    ranked = sorted(found.values(), key=lambda t: -t[0])
    return [arch for _, arch in ranked[:k]]


def prob_key(value: Any) -> Any:
    """The key of a choice value in a probability dict: an input choice's one-element list
    becomes its index, a longer list a tuple (lists are not hashable).

    >>> prob_key([2]), prob_key([0, 1]), prob_key('conv3')
    (2, (0, 1), 'conv3')
    """
    if isinstance(value, list):
        return value[0] if len(value) == 1 else tuple(value)
    return value
