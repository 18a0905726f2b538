"""Several objectives at once: the Pareto front of trials over their metrics, and its export.

A trial is on the front when no other succeeded trial is at least as good on every objective and
better on one. Objectives name entries of ``trial.metrics`` (which a
:class:`~nasx.evaluator.cost.CostEvaluator` fills with accuracy, params, MACs, FLOPs, latency)
with a direction each.

    >>> from nasx.trial import Trial
    >>> ts = [Trial(i, {'i': i}, 'succeeded', metric=a, metrics={'default': a, 'latency_ms': l})
    ...       for i, (a, l) in enumerate([(0.70, 5.0), (0.75, 9.0), (0.72, 9.5), (0.80, 20.0)])]
    >>> [t.id for t in pareto_front(ts, {'default': 'maximize', 'latency_ms': 'minimize'})]
    [0, 1, 3]
"""

from __future__ import annotations

import csv
import json
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from nasx.trial import SUCCEEDED, Trial

DIRECTIONS = ("maximize", "minimize")


def parse_objectives(objectives: Mapping[str, str] | Sequence[str]) -> dict[str, str]:
    """``{metric: direction}``; a list of names means ``'name'`` (maximize) or ``'-name'`` (minimize).

    >>> parse_objectives(['accuracy', '-latency_ms'])
    {'accuracy': 'maximize', 'latency_ms': 'minimize'}
    """
    if isinstance(objectives, Mapping):
        out = dict(objectives)
    else:
        out = {
            (n[1:] if n.startswith("-") else n): ("minimize" if n.startswith("-") else "maximize")
            for n in objectives
        }
    if len(out) < 1:
        raise ValueError("give at least one objective, e.g. {'accuracy': 'maximize'}")
    for name, d in out.items():
        if d not in DIRECTIONS:
            raise ValueError(
                f"objective {name!r}: direction must be one of {DIRECTIONS}, got {d!r}"
            )
    return out


def _vector(t: Trial, objs: dict[str, str]) -> tuple[float, ...] | None:
    """The trial's objectives as values to minimise (None when one is missing)."""
    out = []
    for name, d in objs.items():
        v = t.metrics.get(name, t.metric if name == "default" else None)
        if v is None:
            return None
        out.append(-float(v) if d == "maximize" else float(v))
    return tuple(out)


def pareto_front(
    trials: Iterable[Trial], objectives: Mapping[str, str] | Sequence[str]
) -> list[Trial]:
    """The non-dominated succeeded trials, by trial id. Trials lacking a metric are skipped;
    of trials with equal values on every objective, the lowest id stands for them.

    Raises ValueError when no succeeded trial has every objective (naming the metrics seen).
    """
    objs = parse_objectives(objectives)
    done = [t for t in trials if t.status == SUCCEEDED]
    points = [(t, v) for t in done if (v := _vector(t, objs)) is not None]
    if done and not points:
        seen = sorted({k for t in done for k in t.metrics})
        raise ValueError(f"no succeeded trial has all of {sorted(objs)}; metrics seen: {seen}")
    # sort by the vector, then a trial can only be dominated by one before it
    points.sort(key=lambda p: (p[1], p[0].id))
    front: list[tuple[Trial, tuple[float, ...]]] = []
    for t, v in points:
        if not any(_dominates(f, v) or f == v for _, f in front):
            front.append((t, v))
    return sorted((t for t, _ in front), key=lambda t: t.id)


def _dominates(a: tuple[float, ...], b: tuple[float, ...]) -> bool:
    return all(x <= y for x, y in zip(a, b)) and any(x < y for x, y in zip(a, b))


def front_rows(
    trials: Iterable[Trial], objectives: Mapping[str, str] | Sequence[str]
) -> list[dict[str, Any]]:
    """One flat dict per front trial: id, every metric, and the arch as JSON."""
    rows = []
    for t in pareto_front(trials, objectives):
        rows.append({"id": t.id, **t.metrics, "arch": json.dumps(t.arch, sort_keys=True)})
    return rows


def export_front(
    trials: Iterable[Trial],
    objectives: Mapping[str, str] | Sequence[str],
    path: str | os.PathLike[str],
) -> Path:
    """Write the front to ``path``: ``.csv`` (one row per trial) or ``.json`` (a list of trials
    with their arch as a dict). Returns the path."""
    p = Path(path)
    trials = list(trials)
    if p.suffix == ".json":
        front = [
            {"id": t.id, "metrics": t.metrics, "arch": t.arch}
            for t in pareto_front(trials, objectives)
        ]
        p.write_text(
            json.dumps({"objectives": parse_objectives(objectives), "front": front}, indent=1)
        )
    elif p.suffix == ".csv":
        rows = front_rows(trials, objectives)
        names = ["id"] + sorted({k for r in rows for k in r} - {"id", "arch"}) + ["arch"]
        with p.open("w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=names)
            w.writeheader()
            w.writerows(rows)
    else:
        raise ValueError(f"export the front as .csv or .json, got {p.name!r}")
    return p
