"""The trial table of the dashboard, sorted, filtered and cut into pages on the server.

The page shows the rows in view and asks for others as it scrolls (``/api/exp/N/rows``), so a
browser never holds 20,000 trials: one page is a few dozen rows, whatever the experiment's size.
The order is the one the page had when it sorted for itself: a column's values ascending or
descending, trials without a value last either way, ties by id.

    >>> from nasx.trial import Trial
    >>> trials = [Trial(0, {'k': 1}, 'succeeded', metric=0.5), Trial(1, {'k': 2}, 'failed'),
    ...           Trial(2, {'k': 3}, 'succeeded', metric=0.9)]
    >>> [t.id for t in sort_trials(trials, 'metric', descending=True)]
    [2, 0, 1]
    >>> query = parse_query({'sort': ['metric'], 'desc': ['1'], 'offset': ['1'], 'limit': ['5']}, ['default'])
    >>> query.sort, query.descending, query.offset, query.limit
    ('metric', True, 1, 5)
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from nasx.trial import STATUSES, Trial

COLUMNS = ("id", "status", "metric", "budget", "duration", "arch", "error")
MAX_LIMIT = 1000  # rows in one answer: a screenful is about 20


@dataclass(frozen=True)
class RowsQuery:
    """What ``/api/exp/N/rows`` was asked: a column (or ``m:<metric>``), direction, status filter
    (``''``: every status) and the page (``offset``, ``limit`` rows)."""

    sort: str = "id"
    descending: bool = False
    status: str = ""
    offset: int = 0
    limit: int = 100


def parse_query(query: dict[str, list[str]], metrics: Sequence[str]) -> RowsQuery:
    """A :class:`RowsQuery` from a URL's query; ValueError naming the parameter and what is
    allowed for anything else (``metrics``: the experiment's metric names, for ``m:<name>``)."""
    one = {k: v[-1] for k, v in query.items()}
    sort = one.get("sort", "id")
    allowed = [*COLUMNS, *(f"m:{m}" for m in metrics if m != "default")]
    if sort not in allowed:
        raise ValueError(f"sort must be one of {allowed}, got {sort!r}")
    desc = one.get("desc", "0")
    if desc not in ("0", "1"):
        raise ValueError(f"desc must be 0 or 1, got {desc!r}")
    status = one.get("status", "")
    if status and status not in STATUSES:
        raise ValueError(f"status must be one of {list(STATUSES)} (or empty: all), got {status!r}")
    return RowsQuery(
        sort,
        desc == "1",
        status,
        _count(one, "offset", 0, None),
        _count(one, "limit", 100, MAX_LIMIT),
    )


def _count(one: dict[str, str], name: str, default: int, most: int | None) -> int:
    text = one.get(name)
    if text is None:
        return default
    if not (text.isascii() and text.isdigit()) or (most is not None and not 1 <= int(text) <= most):
        allowed = "an integer from 0" if most is None else f"an integer from 1 to {most}"
        raise ValueError(f"{name} must be {allowed}, got {text!r}")
    return int(text)


def arch_text(arch: dict[str, Any]) -> str:
    """The arch as the table shows it: ``label=value`` pairs, values as compact JSON.

    >>> arch_text({'op': 'conv', 'in': [0, 1]})
    'op="conv", in=[0,1]'
    """
    return ", ".join(f"{k}={json.dumps(v, separators=(',', ':'))}" for k, v in arch.items())


def value_of(column: str) -> Callable[[Trial], Any]:
    """The value of ``column`` for one trial (what the table sorts on)."""
    if column.startswith("m:"):
        name = column[2:]
        return lambda t: (t.metrics or {}).get(name)
    if column == "arch":
        return lambda t: arch_text(t.arch)
    if column == "error":
        return lambda t: (t.error or "").splitlines()[0] if t.error else None
    return lambda t: getattr(t, column)


def sort_trials(
    trials: Sequence[Trial], column: str = "id", descending: bool = False, status: str = ""
) -> list[Trial]:
    """``trials`` with ``status`` (all when empty), ordered by ``column``: values ascending (or
    descending; numbers and text each in a block of their own), trials without a value last,
    ties by id."""
    get = value_of(column)
    keyed = []
    missing = []
    for t in sorted(trials, key=lambda t: t.id):
        if status and t.status != status:
            continue
        v = get(t)
        if v is None or (isinstance(v, float) and v != v):  # None and NaN: no value
            missing.append(t)
        elif isinstance(v, (int, float)) and not isinstance(v, bool):
            keyed.append(((0, v, ""), t))
        else:
            keyed.append(((1, 0, str(v)), t))
    # sorted() is stable with reverse=True too: equal values keep their id order
    keyed.sort(key=lambda kt: kt[0], reverse=descending)
    return [t for _, t in keyed] + missing
