"""Trial: one arch evaluated, with its metric(s), intermediate metrics, status, timing and error.

A trial is plain data shared by strategies (which learn from finished trials), the experiment
(which runs them) and storage (which keeps one row per trial).

    >>> t = Trial(id=0, arch={'act': 1}, status='succeeded', metric=0.9, metrics={'default': 0.9})
    >>> t.finished, t.succeeded
    (True, True)
    >>> Trial.from_dict(t.to_dict()) == t
    True
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from typing import Any

WAITING = "waiting"
RUNNING = "running"
SUCCEEDED = "succeeded"
FAILED = "failed"
REJECTED = "rejected"
STATUSES = (WAITING, RUNNING, SUCCEEDED, FAILED, REJECTED)
FINISHED = (SUCCEEDED, FAILED, REJECTED)


@dataclass
class Trial:
    """One arch evaluated (or waiting to be).

    Attributes:
        id: 0, 1, 2, ... in proposal order, unique within an experiment.
        arch: ``dict[label, value]``, JSON-serialisable.
        status: ``'waiting' | 'running' | 'succeeded' | 'failed' | 'rejected'`` (rejected: a filter
            refused the arch before training).
        metric: the final ``'default'`` metric of a succeeded trial, else None.
        metrics: every final metric (``{'default': ..., ...}``).
        intermediates: the metrics reported during training (e.g. one per epoch).
        start_time, end_time: Unix timestamps (None until known).
        duration: seconds the evaluation took (None until finished).
        error: the traceback or reason of a failed or rejected trial.
    """

    id: int
    arch: dict
    status: str = WAITING
    metric: float | None = None
    metrics: dict = field(default_factory=dict)
    intermediates: list = field(default_factory=list)
    start_time: float | None = None
    end_time: float | None = None
    duration: float | None = None
    error: str | None = None

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"trial status must be one of {STATUSES}, got {self.status!r}")

    @property
    def finished(self) -> bool:
        """Whether the trial reached a final status (succeeded, failed or rejected)."""
        return self.status in FINISHED

    @property
    def succeeded(self) -> bool:
        return self.status == SUCCEEDED

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable dict of every field."""
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Trial:
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})


def arch_key(arch: dict[str, Any]) -> str:
    """A canonical string of an arch (sorted keys), for deduplication and lookups.

    >>> arch_key({'b': [0], 'a': 1}) == arch_key({'a': 1, 'b': [0]})
    True
    """
    return json.dumps(arch, sort_keys=True, separators=(",", ":"))
