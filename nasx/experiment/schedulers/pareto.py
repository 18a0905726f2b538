"""Order results best first, for one objective or several (NSGA-II's fronts, then crowding).

A rung of a multi-fidelity scheduler keeps its best ``1/eta``. With one objective "best" is the
largest score. With several (accuracy and latency, say) no single order exists; MO-ASHA
(Schmucker et al., 2021) keeps the non-dominated fronts first, and within the last front that
fits, the points farthest from their neighbours (NSGA-II's crowding distance, Deb et al., 2002).

Scores here are tuples in which larger is better in every position: :func:`to_score` turns a
metric value and its directions into one.

    >>> ranked = best_first({0: (0.9, -5.0), 1: (0.8, -2.0), 2: (0.7, -6.0), 3: (0.95, -9.0)})
    >>> ranked  # 0, 1, 3 form the first front (the ends 1 and 3 first); 2 is dominated by 0 and 1
    [1, 3, 0, 2]
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

__all__ = ["best_first", "crowding_distances", "dominates", "nondominated_fronts", "to_score"]

Score = tuple[float, ...]


def to_score(value: float | Sequence[float], directions: Sequence[str]) -> Score:
    """``value`` (one number, or one per objective) as a tuple where larger is better.

    >>> to_score(0.3, ['minimize']), to_score([0.9, 12.0], ['maximize', 'minimize'])
    ((-0.3,), (0.9, -12.0))
    """
    values = [value] if isinstance(value, int | float) else list(value)
    if len(values) != len(directions):
        raise ValueError(
            f"got {len(values)} objective value(s) {values!r} for {len(directions)} "
            f"direction(s) {list(directions)!r}"
        )
    score = []
    for v, direction in zip(values, directions):
        if direction not in ("maximize", "minimize"):
            raise ValueError(f"direction must be 'maximize' or 'minimize', got {direction!r}")
        v = float(v)
        if math.isnan(v):
            raise ValueError(f"objective values must be numbers, got nan in {values!r}")
        score.append(v if direction == "maximize" else -v)
    return tuple(score)


def dominates(a: Score, b: Score) -> bool:
    """``a`` is at least as good as ``b`` everywhere and better somewhere (larger is better)."""
    return all(x >= y for x, y in zip(a, b)) and any(x > y for x, y in zip(a, b))


def nondominated_fronts(scores: Mapping[int, Score]) -> list[list[int]]:
    """The keys of ``scores`` in fronts: the first front dominates the rest, and so on.

    Fast non-dominated sorting (Deb et al., 2002), O(M N^2): rungs hold hundreds of points, not
    millions. Keys within a front keep ascending order.

    >>> nondominated_fronts({0: (1.0, 1.0), 1: (2.0, 0.0), 2: (0.0, 0.0), 3: (0.5, 0.5)})
    [[0, 1], [3], [2]]
    """
    keys = sorted(scores)
    beaten_by: dict[int, int] = dict.fromkeys(keys, 0)  # how many points dominate each key
    beats: dict[int, list[int]] = {k: [] for k in keys}
    for i, a in enumerate(keys):
        for b in keys[i + 1 :]:
            if dominates(scores[a], scores[b]):
                beats[a].append(b)
                beaten_by[b] += 1
            elif dominates(scores[b], scores[a]):
                beats[b].append(a)
                beaten_by[a] += 1
    fronts: list[list[int]] = []
    current = [k for k in keys if beaten_by[k] == 0]
    while current:
        fronts.append(current)
        following = []
        for a in current:
            for b in beats[a]:
                beaten_by[b] -= 1
                if beaten_by[b] == 0:
                    following.append(b)
        current = sorted(following)
    return fronts


def crowding_distances(front: Sequence[int], scores: Mapping[int, Score]) -> dict[int, float]:
    """NSGA-II's crowding distance of each key of ``front``: boundary points get infinity.

    >>> d = crowding_distances([0, 1, 2], {0: (0.0, 2.0), 1: (1.0, 1.0), 2: (2.0, 0.0)})
    >>> d[0], d[1], d[2]
    (inf, 2.0, inf)
    """
    distance = dict.fromkeys(front, 0.0)
    if len(front) <= 2:
        return dict.fromkeys(front, math.inf)
    for m in range(len(scores[front[0]])):
        ordered = sorted(front, key=lambda k: (scores[k][m], k))
        low, high = scores[ordered[0]][m], scores[ordered[-1]][m]
        distance[ordered[0]] = distance[ordered[-1]] = math.inf
        if high == low:
            continue
        for prev, key, nxt in zip(ordered, ordered[1:], ordered[2:]):
            distance[key] += (scores[nxt][m] - scores[prev][m]) / (high - low)
    return distance


def best_first(scores: Mapping[int, Score]) -> list[int]:
    """The keys of ``scores`` from best to worst.

    One objective: by score, descending. Several: by non-dominated front, then by crowding
    distance (larger first) within a front. Ties go to the smaller key (the earlier trial), so
    the order is a function of the scores alone: a resumed run ranks exactly as before.
    """
    if not scores:
        return []
    if len(next(iter(scores.values()))) == 1:
        return sorted(scores, key=lambda k: (-scores[k][0], k))
    ranked: list[int] = []
    for front in nondominated_fronts(scores):
        crowd = crowding_distances(front, scores)
        ranked.extend(sorted(front, key=lambda k: (-crowd[k], k)))
    return ranked
