"""Which reported metrics a scheduler ranks, and the limits that prune a trial outright.

In an experiment an evaluator reports a float or a metrics dict (``{'default': acc,
'latency_ms': 4.1}``; a :class:`~nasx.evaluator.base.CostEvaluator` adds ``params``, ``macs``,
``flops``, ``latency_ms`` to every report). A scheduler made with ``objectives=`` ranks its rungs
on those entries, in the forms :meth:`NasExperiment.pareto_front
<nasx.experiment.NasExperiment.pareto_front>` takes: ``{'accuracy': 'maximize', 'latency_ms':
'minimize'}`` or ``['accuracy', '-latency_ms']``. ``constraints=`` are limits on reported
metrics, in :class:`~nasx.experiment.filters.CostFilter`'s forms: ``{'params': (None, 1e6),
'latency_ms': 5.0}`` (``(low, high)``, a bound may be None, or an upper bound alone); a trial
is pruned at the first rung whose report breaks one.

    >>> goal = MetricGoal.parse(['accuracy', '-latency_ms'], {'params': 1000})
    >>> goal.directions
    ('maximize', 'minimize')
    >>> goal.values({'default': 0.9, 'accuracy': 0.9, 'latency_ms': 3.0, 'params': 1200})
    (0.9, 3.0)
    >>> goal.violation({'default': 0.9, 'accuracy': 0.9, 'latency_ms': 3.0, 'params': 1200})
    'params 1200 above 1000'
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from nasx.experiment.results.pareto import parse_objectives
from nasx.hardware.reward import CostRange

__all__ = ["MetricGoal"]


@dataclass(frozen=True)
class MetricGoal:
    """The metrics a scheduler ranks (``objectives``: name -> direction; None: the reported
    value itself, or a dict's ``'default'``) and the ranges they must stay in (``constraints``)."""

    objectives: dict[str, str] | None = None
    constraints: tuple[CostRange, ...] = ()

    @classmethod
    def parse(cls, objectives: Any = None, constraints: Any = None) -> MetricGoal:
        """From a scheduler's ``objectives=`` and ``constraints=`` (see the module docstring);
        bad forms are refused naming what was given and what is allowed.

        >>> MetricGoal.parse(None, {'latency_ms': (1, 'fast')})  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ValueError: constraints: the range of 'latency_ms' must be (low, high) or an upper bound, numbers...
        """
        objs = None
        if objectives is not None:
            if isinstance(objectives, str) or not isinstance(objectives, Mapping | Sequence):
                raise ValueError(
                    "objectives must be {metric: 'maximize'|'minimize'} or a list of metric names "
                    f"('-name' to minimize), e.g. ['accuracy', '-latency_ms']; got {objectives!r}"
                )
            objs = parse_objectives(objectives)
        if constraints is None:
            return cls(objs)
        if not isinstance(constraints, Mapping) or not constraints:
            raise ValueError(
                "constraints must be {metric: (low, high) or upper bound}, e.g. "
                f"{{'params': (None, 1e6), 'latency_ms': 5.0}}; got {constraints!r}"
            )
        ranges = []
        for name, bounds in constraints.items():
            parts = bounds if isinstance(bounds, tuple | list) else (bounds,)
            if not all(b is None or _is_number(b) for b in parts):
                raise ValueError(
                    f"constraints: the range of {name!r} must be (low, high) or an upper bound, "
                    f"numbers (a bound may be None); got {bounds!r}"
                )
            try:
                ranges.append(CostRange.parse(str(name), bounds))
            except ValueError as e:
                raise ValueError(f"constraints: {e}") from None
        return cls(objs, tuple(ranges))

    @property
    def directions(self) -> tuple[str, ...]:
        """One direction per objective (empty without ``objectives``)."""
        return tuple(self.objectives.values()) if self.objectives else ()

    def values(self, reported: float | Mapping[str, float]) -> float | tuple[float, ...]:
        """What the scheduler ranks, out of one report: the named objectives of a metrics dict
        (a tuple), else the value itself or its ``'default'``."""
        if not isinstance(reported, Mapping):
            if self.objectives is None or list(self.objectives) == ["default"]:
                return reported
            raise ValueError(
                f"the scheduler ranks objectives {list(self.objectives)}, but the evaluator "
                f"reported the number {reported!r}: report a dict holding them"
            )
        if self.objectives is None:
            return reported["default"]
        return tuple(self._entry(reported, name, "objective") for name in self.objectives)

    def violation(self, reported: float | Mapping[str, float]) -> str | None:
        """Why ``reported`` breaks a constraint (the first broken one), or None."""
        metrics = reported if isinstance(reported, Mapping) else {"default": reported}
        for limit in self.constraints:
            why = limit.violation(self._entry(metrics, limit.metric, "constrained"))
            if why is not None:
                return why
        return None

    @staticmethod
    def _entry(metrics: Mapping[str, float], name: str, role: str) -> float:
        if name not in metrics:
            raise ValueError(
                f"the scheduler's {role} metric {name!r} is not among the reported metrics "
                f"{sorted(metrics)}: report a dict with it (CostEvaluator adds params, macs, "
                "flops and, given latency=, latency_ms)"
            )
        return float(metrics[name])


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)
