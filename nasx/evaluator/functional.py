"""FunctionalEvaluator: the metric is whatever ``fn(model, **kwargs)`` returns."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from .base import Evaluator, Metric, Report, accepts_parameter
from .checkpoint import Checkpoint
from .hparams import searchable
from .nni_report import mock_report, reporting

__all__ = ["FunctionalEvaluator"]


class FunctionalEvaluator(Evaluator):
    """Evaluate a model by calling ``fn(model, **kwargs)``; its return value is the metric.

    When ``fn`` has a ``report`` parameter it also receives ``report=`` (a callable taking one
    float, for intermediate metrics such as per-epoch accuracy; a no-op when nobody listens).
    When ``fn`` has an ``arch`` parameter it receives ``arch=`` (the trial's arch dict, e.g.
    ``{'cell/0_1': 'conv_3x3', ...}``), so a function can look the arch up instead of reading it
    back out of the model; ``needs_model=False`` then lets the experiment skip building the model.
    With a multi-fidelity scheduler, ``fn`` receives ``budget=`` (how much to train) and
    ``checkpoint=`` (a :class:`~nasx.evaluator.checkpoint.Checkpoint`: continue a promoted
    trial from the state saved at ``checkpoint.from_budget``) when it declares them.
    The evaluator pickles whenever ``fn`` and ``kwargs`` do; functions defined in ``__main__`` or
    as lambdas travel by value (cloudpickle). Porting from NNI: ``nni.report_final_result(x)``
    is ``return x`` and ``nni.report_intermediate_result(x)`` is ``report(x)``; NNI's calls work
    too (``nasx.report_final_result``, see :mod:`nasx.evaluator.nni_report`).

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

        A function that declares ``arch`` gets the arch (here no model is needed at all):

        >>> table = {'conv': 0.9, 'pool': 0.7}
        >>> ev = FunctionalEvaluator(lambda model, arch: table[arch['op']], needs_model=False)
        >>> ev.evaluate(None, arch={'op': 'pool'})
        0.7
    """

    @searchable  # kwargs may hold choices (hyperparameters): see nasx.evaluator.hparams
    def __init__(self, fn: Callable[..., Any], *, needs_model: bool = True, **kwargs: Any) -> None:
        if not callable(fn):
            raise TypeError(f"FunctionalEvaluator needs a callable fn(model, **kwargs), got {fn!r}")
        for reserved in ("report", "arch", "budget", "checkpoint"):
            if reserved in kwargs:
                raise TypeError(
                    f"{reserved!r} is reserved: FunctionalEvaluator passes it itself when "
                    f"fn has a `{reserved}` parameter"
                )
        self.fn = fn
        self.kwargs = kwargs
        self.needs_model = needs_model

    def evaluate(
        self,
        model: Any,
        report: Report | None = None,
        arch: Mapping[str, Any] | None = None,
        budget: int | float | None = None,
        checkpoint: Checkpoint | None = None,
    ) -> Metric:
        """Return ``fn(model, **kwargs)``, plus ``report=``, ``arch=``, ``budget=`` and
        ``checkpoint=`` when fn declares them (``budget``: how much to train, None for fn's own
        full training; ``checkpoint``: a :class:`~nasx.evaluator.checkpoint.Checkpoint` to
        continue from and save to, see its module)."""
        kwargs = dict(self.kwargs)
        if accepts_parameter(self.fn, "report"):
            kwargs["report"] = report if report is not None else _ignore
        if accepts_parameter(self.fn, "arch"):
            if arch is None:
                raise TypeError(
                    f"{self!r}: fn declares an `arch` parameter but no arch was given; "
                    "call evaluate(model, arch={...}) (NasExperiment passes the trial's arch)"
                )
            kwargs["arch"] = arch
        if accepts_parameter(self.fn, "budget"):
            kwargs["budget"] = budget
        elif budget is not None:
            raise TypeError(
                f"{self!r} was given budget={budget!r} but fn declares no `budget` parameter"
            )
        if accepts_parameter(self.fn, "checkpoint"):
            kwargs["checkpoint"] = checkpoint
        elif checkpoint is not None and checkpoint.from_budget:
            raise TypeError(
                f"{self!r} was asked to continue from budget {checkpoint.from_budget} but fn "
                "declares no `checkpoint` parameter"
            )
        # NNI ports call nasx.report_intermediate_result / report_final_result inside fn
        with reporting(report) as channel:
            return channel.result(self.fn(model, **kwargs))

    @property
    def function(self) -> Callable[..., Any]:
        """NNI's name for ``fn``, the function that evaluates a model."""
        return self.fn

    @property
    def arguments(self) -> dict[str, Any]:
        """NNI's name for ``kwargs`` (the keyword arguments ``fn`` is called with)."""
        return self.kwargs

    def __repr__(self) -> str:
        name = getattr(self.fn, "__qualname__", repr(self.fn))
        return f"FunctionalEvaluator({name}, kwargs={sorted(self.kwargs)})"


def _ignore(value: float) -> None:
    """Default reporter: intermediate metrics are dropped when nobody listens (logged under
    :meth:`~nasx.evaluator.Evaluator.mock_runtime`)."""
    mock_report(value)
