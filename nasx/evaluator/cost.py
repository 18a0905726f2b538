"""Score a model on accuracy and cost together: a metrics dict with params, FLOPs and latency.

:class:`CostEvaluator` wraps any evaluator (``Classification``, a ``Lightning`` evaluator, a
function) and returns ``{'default': objective, 'accuracy': ..., 'params': ..., 'macs': ...,
'flops': ..., 'latency_ms': ...}``, what Vega's ModelStatistics callback adds to a trial. Trials
then keep every metric side by side (``trial.metrics``), a Pareto front can be taken over them
(:func:`nasx.experiment.pareto.pareto_front`), and ``objective=`` picks what the search ranks by,
such as the MnasNet reward (:class:`~nasx.hardware.reward.MnasNetReward`). Any evaluator's
``with_cost(input_shape, ...)`` builds one around it: ``Classification(...).with_cost((3, 32, 32),
latency=table)``.

Why a wrapper rather than a cost inside ``Lightning.evaluate``: the cost is a property of the
model, not of its training, so one wrapper gives it to every kind of evaluator (a function,
``Lightning``, ``Classification``, a benchmark lookup) alike; it needs an input shape and a latency
model (a table for this device, or a measurement) that a training loop has no reason to know; it
is computed before training, so a trial whose training fails still records what the model
cost; and ``Lightning.evaluate`` keeps returning the one metric it was asked for, as NNI's does,
so code written against it is unchanged.

    >>> import torch.nn as nn
    >>> from nasx.hardware import MnasNetReward
    >>> ev = CostEvaluator(lambda model: 0.8, input_shape=(10,),
    ...                    latency=lambda model, shape: 20.0,
    ...                    objective=MnasNetReward(target=10.0, constraint='hard'))
    >>> ev.evaluate(nn.Linear(10, 5))
    {'default': 0.4, 'accuracy': 0.8, 'params': 55, 'macs': 50, 'flops': 100, 'latency_ms': 20.0}
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch.nn as nn

from nasx.hardware.cost import model_cost
from nasx.hardware.latency import measure_latency

from .base import Evaluator, Report, accepts_parameter, direction_of, normalize_metric


class CostEvaluator(Evaluator):
    """Evaluate with ``evaluator``, add the model's cost, rank by ``objective``.

    Args:
        evaluator: the evaluator giving the accuracy (its ``'default'`` metric); any
            :class:`~nasx.evaluator.base.ModelEvaluator` or ``fn(model)``.
        input_shape: one sample's shape, for MACs and latency (e.g. ``(3, 32, 32)``).
        latency: None (no latency), ``'measure'`` (time the model on this machine with
            :func:`~nasx.hardware.latency.measure_latency` and ``latency_options``), a
            :class:`~nasx.hardware.predictor.LatencyTable`, or ``fn(model, input_shape) -> ms``.
        objective: what ``'default'`` holds: None keeps the inner metric (accuracy); else
            ``fn(metrics) -> float`` over the dict above, e.g. ``MnasNetReward(target=...)``.
        accuracy_key: the name the inner metric is stored under.
        latency_options: keyword arguments of ``measure_latency`` for ``latency='measure'``.
    """

    def __init__(
        self,
        evaluator: Any,
        input_shape: Sequence[int],
        *,
        latency: Any = None,
        objective: Callable[[Mapping[str, Any]], float] | None = None,
        accuracy_key: str = "accuracy",
        latency_options: dict[str, Any] | None = None,
    ):
        if objective is not None and not callable(objective):
            raise TypeError(
                f"objective must be fn(metrics) -> float, got {type(objective).__name__}"
            )
        if isinstance(latency, str) and latency != "measure":
            raise ValueError(
                f"latency must be None, 'measure', a LatencyTable or a function, got {latency!r}"
            )
        self.evaluator = evaluator
        self.input_shape = tuple(int(s) for s in input_shape)
        self.latency = latency
        self.objective = objective
        self.accuracy_key = accuracy_key
        self.latency_options = dict(latency_options or {})
        self.direction = "maximize" if objective is not None else direction_of(evaluator)

    def cost(self, model: nn.Module) -> dict[str, Any]:
        """``{'params', 'macs', 'flops'[, 'latency_ms']}`` of ``model``."""
        latency: Any = self.latency
        if latency == "measure":
            opts = {"warmup": 5, "repeats": 20, **self.latency_options}
            latency = lambda m, shape: measure_latency(m, shape, **opts).median_ms  # noqa: E731
        return model_cost(model, self.input_shape, latency).to_dict()

    def evaluate(
        self, model: nn.Module, report: Report | None = None, arch: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        cost = self.cost(model)
        inner = self._inner_call(model, report, arch)
        _, inner_metrics = normalize_metric(inner)
        metrics: dict[str, Any] = {"default": inner_metrics["default"]}
        metrics[self.accuracy_key] = inner_metrics["default"]
        metrics.update({k: v for k, v in inner_metrics.items() if k != "default"})
        metrics.update(cost)
        if self.objective is not None:
            metrics["default"] = float(self.objective(metrics))
        return metrics

    def _inner_call(self, model: nn.Module, report: Report | None, arch: Any) -> Any:
        fn = getattr(self.evaluator, "evaluate", self.evaluator)
        kwargs: dict[str, Any] = {}
        if report is not None and accepts_parameter(fn, "report"):
            kwargs["report"] = report
        if arch is not None and accepts_parameter(fn, "arch"):
            kwargs["arch"] = arch
        return fn(model, **kwargs)
