"""The evaluator seam: :class:`ModelEvaluator` (the contract), :class:`Evaluator` (a base class
implementing it) and ``normalize_metric``.

An evaluator turns one model into one metric, returned (never sent through a global channel).
Intermediate metrics, such as per-epoch validation accuracy, go to the ``report`` callback.
An evaluator that declares an ``arch`` parameter (``evaluate(self, model, report=None, arch=None)``,
or a plain function ``fn(model, arch)``) also receives the trial's arch dict; one that sets
``needs_model = False`` lets the experiment skip building the model (it then gets ``None``).
With a multi-fidelity scheduler, one that declares ``budget`` trains that much (epochs by
default), and one that declares ``checkpoint`` continues a promoted trial from the state it
saved (:class:`~nasx.evaluator.checkpoint.Checkpoint`) instead of starting over.
"""

from __future__ import annotations

import inspect
import math
import numbers
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from .nni_report import mock_runtime

if TYPE_CHECKING:
    import torch.nn as nn

__all__ = [
    "CostEvaluator",
    "Direction",
    "Evaluator",
    "Metric",
    "ModelEvaluator",
    "Report",
    "accepts_parameter",
    "direction_of",
    "normalize_metric",
]

Metric = float | dict[str, float]
Report = Callable[[float], None]
Direction = Literal["maximize", "minimize"]
DIRECTIONS: tuple[Direction, ...] = ("maximize", "minimize")


@runtime_checkable
class ModelEvaluator(Protocol):
    """What a multi-trial experiment needs from an evaluator: one method.

    ``evaluate(model, report=None)`` trains and/or tests ``model`` (a plain ``nn.Module`` built
    from one arch) and returns its metric: a finite float, or a dict with a ``'default'`` float
    (the one searched on) and any others. It may call ``report(value)`` for intermediate metrics.
    A class attribute ``direction`` (``'maximize'``, the default, or ``'minimize'``) tells the
    experiment and the strategies which way is better. A plain function ``fn(model)`` (or
    ``fn(model, report)``) is accepted wherever an evaluator is. Further per-trial context (such
    as the trial's ``arch``) is only ever passed as a keyword to evaluators that declare it, so
    this minimal signature stays valid. An optional ``needs_model = False`` attribute says the
    model is not used, so the experiment passes ``None`` instead of building it.

    One-shot strategies need more from their evaluator (the LightningModule, trainer settings and
    data): see :class:`nasx.strategy.oneshot.base.OneShotEvaluator`.

    A minimal implementation (no base class needed):

        >>> import torch
        >>> class Sparsity:
        ...     direction = 'minimize'
        ...     def evaluate(self, model, report=None):
        ...         return float(sum(p.numel() for p in model.parameters()))
        >>> isinstance(Sparsity(), ModelEvaluator), direction_of(Sparsity())
        (True, 'minimize')
        >>> Sparsity().evaluate(torch.nn.Linear(2, 3))
        9.0
    """

    def evaluate(self, model: Any, report: Report | None = None) -> Metric:
        """Called once per trial, in the process running it: return the model's metric."""


def direction_of(evaluator: Any) -> Direction:
    """The evaluator's ``direction`` (``'maximize'`` when it declares none, as functions don't).

    >>> direction_of(lambda model: 0.5)
    'maximize'
    """
    direction = getattr(evaluator, "direction", "maximize")
    if direction not in DIRECTIONS:
        raise ValueError(
            f"direction must be 'maximize' or 'minimize', got {direction!r} "
            f"from {type(evaluator).__name__}"
        )
    return direction


class Evaluator:
    """Base class of evaluators (implements :class:`ModelEvaluator`); adds pickling by value.

    Subclasses implement :meth:`evaluate`. ``direction`` says whether a larger metric is better
    (``'maximize'``) or a smaller one (``'minimize'``); strategies read it.

    A subclass whose ``evaluate`` declares an ``arch`` parameter receives the trial's arch dict
    (``evaluate(model, report=..., arch=...)``), for evaluators that look the arch up rather than
    train the model (a benchmark table, a cache). ``needs_model = False`` says the model is not
    used: :class:`~nasx.experiment.NasExperiment` then passes ``model=None`` and builds nothing.

    Evaluators are sent to worker processes. Their state is pickled with cloudpickle, so objects
    that live in ``__main__`` (a dataset class, a lambda transform, a training function) travel
    by value while importable ones travel by reference: plain ``pickle.dumps(evaluator)`` works too.

    Example:
        >>> class ParamCount(Evaluator):
        ...     direction = 'minimize'
        ...     def evaluate(self, model, report=None):
        ...         return float(sum(p.numel() for p in model.parameters()))
        >>> import torch
        >>> ParamCount().evaluate(torch.nn.Linear(2, 3))
        9.0
    """

    direction: Direction = "maximize"
    needs_model: bool = True

    def evaluate(self, model: Any, report: Report | None = None) -> Metric:
        """Train and/or test ``model``; return a float or a dict with a ``'default'`` float."""
        raise NotImplementedError(
            f"{type(self).__name__} must implement evaluate(model, report=None)"
        )

    def with_cost(self, input_shape: Sequence[int], **kwargs: Any) -> Any:
        """This evaluator returning a metrics dict with the model's cost beside its metric:
        ``{'default', 'accuracy', 'params', 'macs', 'flops'[, 'latency_ms']}`` (a
        :class:`~nasx.evaluator.cost.CostEvaluator` around it; ``kwargs``: its ``latency=``,
        ``objective=``, ...). ``Classification(...).with_cost((3, 32, 32), latency=table)``.

        Example:
            >>> import torch
            >>> class Fixed(Evaluator):
            ...     def evaluate(self, model, report=None):
            ...         return 0.5
            >>> Fixed().with_cost((3,)).evaluate(torch.nn.Linear(3, 2))
            {'default': 0.5, 'accuracy': 0.5, 'params': 8, 'macs': 6, 'flops': 12}
        """
        return CostEvaluator(self, input_shape, **kwargs)

    # -- NNI's testing helpers ----------------------------------------------------------------
    mock_runtime = staticmethod(mock_runtime)

    def simplify(self) -> dict[str, Any]:
        """``{label: choice}`` of the choices among this evaluator's arguments (NNI's
        ``simplify`` of a mutable evaluator; empty for an evaluator without any)."""
        from .hparams import evaluator_choices

        return dict(evaluator_choices(self))

    def freeze(self, sample: Mapping[str, Any]) -> Any:
        """This evaluator made again with the values ``sample`` gives its choices (NNI's
        ``freeze``; labels that are not the evaluator's, a model's, are ignored). NNI returns a
        ``FrozenEvaluator``, whose :meth:`get` is the evaluator; here the evaluator itself.

        >>> from nasx.evaluator import FunctionalEvaluator
        >>> from nasx.space import Categorical
        >>> ev = FunctionalEvaluator(lambda model, t, x: x, t=1, x=Categorical([1, 2], label='x'))
        >>> ev.freeze({'x': 2, 'layer': 0}).get().arguments
        {'t': 1, 'x': 2}
        """
        from .hparams import evaluator_choices, freeze_evaluator

        labels = evaluator_choices(self)
        return freeze_evaluator(self, {k: v for k, v in sample.items() if k in labels})

    def get(self) -> Any:
        """The evaluator itself (NNI's ``FrozenEvaluator.get()``: nasx's :meth:`freeze` already
        gives the evaluator)."""
        return self

    # Pickle the instance state with cloudpickle so that `__main__` objects survive any pickler.
    def __getstate__(self) -> dict[str, Any]:
        import cloudpickle

        return {"_nasx_cloudpickled_state": cloudpickle.dumps(self.__dict__)}

    def __setstate__(self, state: dict[str, Any]) -> None:
        import pickle

        if "_nasx_cloudpickled_state" in state:
            state = pickle.loads(state["_nasx_cloudpickled_state"])
        self.__dict__.update(state)


def accepts_parameter(fn: Callable[..., Any], name: str) -> bool:
    """True when ``fn`` declares a parameter called ``name`` (``**kwargs`` alone does not count).

    This is how evaluators opt in to ``report`` and ``arch``: declaring the parameter asks for it.

    Example:
        >>> accepts_parameter(lambda model, arch: 0.0, 'arch'), accepts_parameter(lambda model, **kw: 0.0, 'arch')
        (True, False)
    """
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):  # some builtins have no signature
        return False
    param = params.get(name)
    return param is not None and param.kind in (
        inspect.Parameter.POSITIONAL_OR_KEYWORD,
        inspect.Parameter.KEYWORD_ONLY,
    )


def _to_float(value: Any, what: str) -> float:
    """Convert a real number (Python, NumPy or 0-d tensor) to a finite float, or raise ValueError."""
    if hasattr(value, "item") and callable(value.item) and getattr(value, "ndim", 0) == 0:
        value = value.item()  # NumPy scalar or 0-d torch tensor
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(
            f"{what} must be a real number, got {type(value).__name__} {value!r}; "
            "return a float or a dict like {'default': 0.93, 'loss': 0.2}"
        )
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"{what} must be finite, got {value}: the training probably diverged")
    return value


def normalize_metric(value: Any) -> tuple[float, dict[str, float]]:
    """Check an evaluator's result; return ``(default_metric, all_metrics)``.

    ``value`` is a real number, or a mapping that has a ``'default'`` key; every entry must be a
    finite real number. Raises ValueError naming the problem (None, NaN, inf, a string, a dict
    without ``'default'``...).

    Example:
        >>> normalize_metric(0.9)
        (0.9, {'default': 0.9})
        >>> normalize_metric({'default': 1, 'loss': 0.5})
        (1.0, {'default': 1.0, 'loss': 0.5})
    """
    if value is None:
        raise ValueError(
            "the evaluator returned None: it must return the metric (a float, or a dict with a "
            "'default' float); did the evaluation function forget `return`? (NNI's "
            "`nni.report_final_result(x)` becomes `return x`)"
        )
    if isinstance(value, Mapping):
        if "default" not in value:
            raise ValueError(
                f"a metric dict needs a 'default' key holding the metric to optimize; "
                f"got keys {sorted(map(str, value))}"
            )
        metrics = {str(k): _to_float(v, f"metric {k!r}") for k, v in value.items()}
        return metrics["default"], metrics
    metric = _to_float(value, "the metric")
    return metric, {"default": metric}


# ----------------------------------------------------------------------------- cost beside the metric
# CostEvaluator lives beside Evaluator because Evaluator.with_cost builds it and it is an Evaluator:
# in a module of its own the two imported each other. nasx.evaluator.cost documents it (why a
# wrapper) and exports it under its usual name.
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
        # nasx.hardware loads only when a cost is asked for: this module is the light seam.
        from nasx.hardware.cost import model_cost
        from nasx.hardware.latency import measure_latency

        latency: Any = self.latency
        if latency == "measure":
            opts = {"warmup": 5, "repeats": 20, **self.latency_options}
            latency = lambda m, shape: measure_latency(m, shape, **opts).median_ms  # noqa: E731
        return model_cost(model, self.input_shape, latency).to_dict()

    def evaluate(
        self,
        model: nn.Module,
        report: Report | None = None,
        arch: dict[str, Any] | None = None,
        budget: int | float | None = None,
        checkpoint: Any = None,
    ) -> dict[str, Any]:
        cost = self.cost(model)
        if report is not None:  # each report carries the cost too: a scheduler may rank on it
            outer: Any = report  # Report's type says float; a metrics dict is a report too
            report = lambda value: outer(self._with_cost(value, cost))  # noqa: E731
        inner = self._inner_call(model, report, arch, budget, checkpoint)
        return self._with_cost(inner, cost)

    def _with_cost(self, inner: Any, cost: Mapping[str, Any]) -> dict[str, Any]:
        """The inner evaluator's result (or report) as this one's metrics dict, with ``cost``."""
        _, inner_metrics = normalize_metric(inner)
        metrics: dict[str, Any] = {"default": inner_metrics["default"]}
        metrics[self.accuracy_key] = inner_metrics["default"]
        metrics.update({k: v for k, v in inner_metrics.items() if k != "default"})
        metrics.update(cost)
        if self.objective is not None:
            metrics["default"] = float(self.objective(metrics))
        return metrics

    def _inner_call(
        self,
        model: nn.Module,
        report: Report | None,
        arch: Any,
        budget: int | float | None,
        checkpoint: Any = None,
    ) -> Any:
        fn = getattr(self.evaluator, "evaluate", self.evaluator)
        kwargs: dict[str, Any] = {}
        if report is not None and accepts_parameter(fn, "report"):
            kwargs["report"] = report
        if arch is not None and accepts_parameter(fn, "arch"):
            kwargs["arch"] = arch
        if accepts_parameter(fn, "budget"):
            kwargs["budget"] = budget
        elif budget is not None:  # the inner evaluator would train its full length
            raise TypeError(
                f"{self.evaluator!r} was given budget={budget!r} but declares no `budget` parameter"
            )
        if accepts_parameter(fn, "checkpoint"):  # a Checkpoint: the inner one continues
            kwargs["checkpoint"] = checkpoint
        elif checkpoint is not None and checkpoint.from_budget:
            raise TypeError(
                f"{self.evaluator!r} was asked to continue from budget {checkpoint.from_budget} "
                "but declares no `checkpoint` parameter"
            )
        return fn(model, **kwargs)
