"""FunctionalEvaluator: the metric is whatever ``fn(model, **kwargs)`` returns."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from .base import Evaluator, Metric, Report

__all__ = ["FunctionalEvaluator"]


def _accepts_report(fn: Callable[..., Any]) -> bool:
    """True when ``fn`` has a parameter named ``report`` (``**kwargs`` alone does not count)."""
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):  # some builtins have no signature
        return False
    param = params.get("report")
    return param is not None and param.kind in (
        inspect.Parameter.POSITIONAL_OR_KEYWORD,
        inspect.Parameter.KEYWORD_ONLY,
    )


class FunctionalEvaluator(Evaluator):
    """Evaluate a model by calling ``fn(model, **kwargs)``; its return value is the metric.

    When ``fn`` has a ``report`` parameter it also receives ``report=`` (a callable taking one
    float, for intermediate metrics such as per-epoch accuracy; a no-op when nobody listens).
    The evaluator pickles whenever ``fn`` and ``kwargs`` do; functions defined in ``__main__`` or
    as lambdas travel by value (cloudpickle). Porting from NNI: ``nni.report_final_result(x)``
    becomes ``return x`` and ``nni.report_intermediate_result(x)`` becomes ``report(x)``.

    Example:
        >>> import torch
        >>> def evaluate(model, data, report):
        ...     for epoch in range(2):
        ...         report(float(epoch))
        ...     with torch.no_grad():
        ...         return {'default': model(data).sum().item(), 'epochs': 2}
        >>> seen = []
        >>> ev = FunctionalEvaluator(evaluate, data=torch.ones(1, 2))
        >>> model = torch.nn.Linear(2, 1)
        >>> with torch.no_grad():
        ...     _ = model.weight.fill_(1.0), model.bias.fill_(0.5)
        >>> ev.evaluate(model, report=seen.append)
        {'default': 2.5, 'epochs': 2}
        >>> seen
        [0.0, 1.0]
    """

    def __init__(self, fn: Callable[..., Any], **kwargs: Any) -> None:
        if not callable(fn):
            raise TypeError(f"FunctionalEvaluator needs a callable fn(model, **kwargs), got {fn!r}")
        if "report" in kwargs:
            raise TypeError(
                "'report' is reserved: FunctionalEvaluator passes the reporter itself when "
                "fn has a `report` parameter"
            )
        self.fn = fn
        self.kwargs = kwargs

    def evaluate(self, model: Any, report: Report | None = None) -> Metric:
        """Return ``fn(model, **kwargs)`` (plus ``report=report`` when fn accepts it)."""
        kwargs = dict(self.kwargs)
        if _accepts_report(self.fn):
            kwargs["report"] = report if report is not None else _ignore
        return self.fn(model, **kwargs)

    def __repr__(self) -> str:
        name = getattr(self.fn, "__qualname__", repr(self.fn))
        return f"FunctionalEvaluator({name}, kwargs={sorted(self.kwargs)})"


def _ignore(value: float) -> None:
    """Default reporter: intermediate metrics are dropped when nobody listens."""
