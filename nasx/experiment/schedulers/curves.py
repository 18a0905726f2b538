"""A learning-curve table: what training each architecture of a space once for the full budget
gave after each epoch (validation metric, test metric, seconds), read from and written to CSV;
:func:`~nasx.experiment.schedulers.simulate` replays it, one :class:`SimulatedTrial` per trial.

    >>> curves = LearningCurves.synthetic([{'w': 1}, {'w': 2}], epochs=3, seed=0)
    >>> curves.epochs, curves.row({'w': 2})
    (3, 1)
"""

from __future__ import annotations

import csv
import json
import math
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nasx.space import Categorical, SearchSpace
from nasx.trial import arch_key

__all__ = ["LearningCurves", "SimulatedTrial"]

_COLUMNS = ("arch", "epoch", "val", "test", "seconds")


@dataclass(frozen=True)
class LearningCurves:
    """Per-epoch ``val``/``test`` metric and ``seconds`` of each arch in ``archs``, trained once.

    ``val[i][e]`` is arch ``i``'s validation metric after epoch ``e + 1`` (larger is better unless
    ``direction='minimize'``). Read from and written to CSV with one row per (arch, epoch):
    ``arch`` (JSON), ``epoch`` (1-based), ``val``, ``test``, ``seconds``.
    """

    archs: list[dict[str, Any]]
    val: list[list[float]]
    test: list[list[float]]
    seconds: list[list[float]]
    direction: str = "maximize"
    _rows: dict[str, int] = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        n = len(self.archs)
        if not n:
            raise ValueError("a learning-curve table needs at least one arch")
        for name in ("val", "test", "seconds"):
            table = getattr(self, name)
            if len(table) != n or len({len(r) for r in table} | {len(self.val[0])}) != 1:
                raise ValueError(f"{name} must have one row per arch, each {len(self.val[0])} long")
        self._rows.update({arch_key(a): i for i, a in enumerate(self.archs)})
        if len(self._rows) != n:
            raise ValueError("the table lists an arch twice")

    @property
    def epochs(self) -> int:
        return len(self.val[0])

    def row(self, arch: dict[str, Any]) -> int:
        """The index of ``arch`` in the table (KeyError naming it when absent)."""
        try:
            return self._rows[arch_key(arch)]
        except KeyError:
            raise KeyError(f"arch {arch!r} is not in the learning-curve table") from None

    def search_space(self) -> SearchSpace:
        """One ``Categorical`` per label, over the values the table's archs take."""
        labels: dict[str, list[Any]] = {}
        for arch in self.archs:
            for label, value in arch.items():
                if value not in labels.setdefault(label, []):
                    labels[label].append(value)
        return SearchSpace(
            **{k: Categorical(sorted(v, key=repr), label=k) for k, v in labels.items()}
        )

    def best_test(self) -> float:
        """The best test metric any arch reaches at the full budget (the oracle's pick)."""
        finals = [row[-1] for row in self.test]
        return max(finals) if self.direction == "maximize" else min(finals)

    @classmethod
    def synthetic(cls, archs: Sequence[dict[str, Any]], epochs: int, seed: int) -> LearningCurves:
        """Made-up saturating curves with noise, for tests and examples (not a benchmark):
        ``val = q * (1 - exp(-epoch / tau)) + noise``, ``q`` and ``tau`` drawn per arch."""
        rng = random.Random(seed)
        val, test, seconds = [], [], []
        for _ in archs:
            q, tau, cost = rng.uniform(0.5, 0.95), rng.uniform(1.0, 4.0), rng.uniform(1.0, 3.0)
            curve = [q * (1 - math.exp(-(e + 1) / tau)) for e in range(epochs)]
            val.append([v + rng.gauss(0, 0.01) for v in curve])
            test.append([v + rng.gauss(0, 0.01) for v in curve])
            seconds.append([cost * rng.uniform(0.9, 1.1) for _ in range(epochs)])
        return cls([dict(a) for a in archs], val, test, seconds)

    def to_csv(self, path: str | Path) -> None:
        """Write the curves to ``path`` as a CSV table, one row per arch and epoch: columns
        ``arch`` (JSON), ``epoch`` (from 1), ``val``, ``test``, ``seconds``."""
        with open(path, "w", newline="") as f:
            out = csv.writer(f)
            out.writerow(_COLUMNS)
            for i, arch in enumerate(self.archs):
                for e in range(self.epochs):
                    row = (self.val[i][e], self.test[i][e], self.seconds[i][e])
                    out.writerow([json.dumps(arch, sort_keys=True), e + 1, *map(repr, row)])

    @classmethod
    def from_csv(cls, path: str | Path, direction: str = "maximize") -> LearningCurves:
        """Read a table written by :meth:`to_csv` (or by ``benchmarks/``'s table builder)."""
        per_arch: dict[str, dict[int, tuple[float, float, float]]] = {}
        with open(path, newline="") as f:
            reader = csv.DictReader(f)
            if tuple(reader.fieldnames or ()) != _COLUMNS:
                raise ValueError(
                    f"{path}: expected columns {list(_COLUMNS)}, got {reader.fieldnames}"
                )
            for line in reader:
                epochs = per_arch.setdefault(line["arch"], {})
                epochs[int(line["epoch"])] = (
                    float(line["val"]),
                    float(line["test"]),
                    float(line["seconds"]),
                )
        archs, val, test, seconds = [], [], [], []
        for arch_json, epochs in per_arch.items():
            if sorted(epochs) != list(range(1, len(epochs) + 1)):
                raise ValueError(f"{path}: arch {arch_json} lacks some epochs: {sorted(epochs)}")
            archs.append(json.loads(arch_json))
            val.append([epochs[e][0] for e in sorted(epochs)])
            test.append([epochs[e][1] for e in sorted(epochs)])
            seconds.append([epochs[e][2] for e in sorted(epochs)])
        return cls(archs, val, test, seconds, direction)


@dataclass
class SimulatedTrial:
    """One trial of a simulation: its arch's table row and the budget (epochs) it reached."""

    id: int
    row: int
    arch: dict[str, Any]
    budget: int = 0
    # or how its last job ended: 'pause', 'prune', 'complete'; a paused trial the scheduler
    # will never promote (Scheduler.promotable) ends 'prune', as in an experiment's store
    outcome: str = "running"
