"""Filters: reject archs before training (e.g. outside a parameter-count range).

A filter is handed to :class:`~nasx.experiment.NasExperiment` (``filter=``). A rejected arch is
stored as a trial with status ``'rejected'`` and the reason as its error, the strategy is told (so
it is not proposed again), and after ``patience`` rejections in a row the experiment stops,
because the strategy is evidently not finding archs the filter accepts.

    >>> import torch.nn as nn
    >>> f = ParamCountFilter(max_params=100)
    >>> f.check({}, lambda: nn.Linear(10, 5))     # 55 parameters: accepted
    >>> f.check({}, lambda: nn.Linear(10, 20))    # 220 parameters
    'rejected by ParamCountFilter: 220 parameters, allowed at most 100'
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch.nn as nn


class Filter:
    """Accept or reject an arch before it is trained.

    Args:
        predicate: ``predicate(arch)`` (``on='arch'``) or ``predicate(model)`` (``on='model'``,
            the model built from the arch) returning True to accept.
        on: what the predicate receives.
        patience: stop the experiment after this many rejections in a row.
        name: how rejections are described in the trial table.

    Example:
        >>> f = Filter(lambda arch: arch['width'] >= 16, name='width >= 16')
        >>> f.check({'width': 8}, model_fn=None)
        'rejected by width >= 16'
    """

    def __init__(
        self,
        predicate: Callable[[Any], bool],
        on: str = "arch",
        patience: int = 100,
        name: str | None = None,
    ):
        if on not in ("arch", "model"):
            raise ValueError(f"Filter(on=...) must be 'arch' or 'model', got {on!r}")
        if patience < 1:
            raise ValueError(f"patience must be at least 1, got {patience}")
        self.predicate = predicate
        self.on = on
        self.patience = patience
        self.name = name or getattr(predicate, "__name__", type(self).__name__)

    def check(self, arch: dict[str, Any], model_fn: Callable[[], nn.Module] | None) -> str | None:
        """None to accept ``arch``, else the reason it is rejected. ``model_fn()`` builds the model."""
        subject = _build(model_fn) if self.on == "model" else arch
        return None if self.predicate(subject) else f"rejected by {self.name}"


class ParamCountFilter(Filter):
    """Accept models whose number of parameters lies in ``[min_params, max_params]``.

    Example:
        >>> ParamCountFilter(min_params=1000).check({}, lambda: nn.Linear(2, 2))
        'rejected by ParamCountFilter: 6 parameters, allowed at least 1000'
    """

    def __init__(
        self, min_params: int | None = None, max_params: int | None = None, patience: int = 100
    ):
        if min_params is None and max_params is None:
            raise ValueError("ParamCountFilter needs min_params, max_params or both")
        if min_params is not None and max_params is not None and min_params > max_params:
            raise ValueError(f"min_params ({min_params}) is larger than max_params ({max_params})")
        super().__init__(self._accepts, on="model", patience=patience, name="ParamCountFilter")
        self.min_params = min_params
        self.max_params = max_params

    @staticmethod
    def count(model: nn.Module) -> int:
        return sum(p.numel() for p in model.parameters())

    def _accepts(self, model: nn.Module) -> bool:
        n = self.count(model)
        return (self.min_params is None or n >= self.min_params) and (
            self.max_params is None or n <= self.max_params
        )

    def check(self, arch: dict[str, Any], model_fn: Callable[[], nn.Module] | None) -> str | None:
        n = self.count(_build(model_fn))
        if self.min_params is not None and n < self.min_params:
            bound = (
                f"allowed at least {self.min_params}" if self.max_params is None else self._range()
            )
        elif self.max_params is not None and n > self.max_params:
            bound = (
                f"allowed at most {self.max_params}" if self.min_params is None else self._range()
            )
        else:
            return None
        return f"rejected by ParamCountFilter: {n} parameters, {bound}"

    def _range(self) -> str:
        return f"allowed [{self.min_params}, {self.max_params}]"


def _build(model_fn: Callable[[], nn.Module] | None) -> nn.Module:
    if model_fn is None:
        raise ValueError("this filter looks at the model: check(arch, model_fn) needs model_fn")
    return model_fn()


class CostFilter(Filter):
    """Accept archs whose parameters, MACs, FLOPs or latency lie in given ranges.

    Each range is ``(low, high)`` (a bound may be None) or a single upper bound. The model is
    built on the ``meta`` device (shapes, no memory, no initialisation), so a check costs a
    fraction of a real build; a latency range needs ``latency=`` (a
    :class:`~nasx.hardware.predictor.LatencyTable` predicts from shapes; a measuring function
    ``fn(model, input_shape) -> ms`` gets a real model built on the CPU).

    Args:
        input_shape: one sample's shape, e.g. ``(3, 224, 224)``.
        params, macs, flops, latency_ms: the allowed ranges.
        latency: the latency model for ``latency_ms``.
        patience: stop the experiment after this many rejections in a row.

    Example:
        >>> f = CostFilter((10,), params=(None, 100), macs=(20, None))
        >>> f.check({}, lambda: nn.Linear(10, 5)) is None
        True
        >>> f.check({}, lambda: nn.Linear(10, 20))
        'rejected by CostFilter: params 220 above 100'
        >>> f.check({}, lambda: nn.Linear(10, 1))
        'rejected by CostFilter: macs 10 below 20'
    """

    def __init__(
        self,
        input_shape: tuple[int, ...] | list[int],
        *,
        params: Any = None,
        macs: Any = None,
        flops: Any = None,
        latency_ms: Any = None,
        latency: Any = None,
        patience: int = 100,
    ):
        from nasx.hardware.reward import CostRange

        given = {"params": params, "macs": macs, "flops": flops, "latency_ms": latency_ms}
        self.ranges = [CostRange.parse(k, v) for k, v in given.items() if v is not None]
        if not self.ranges:
            raise ValueError("CostFilter needs at least one of params, macs, flops, latency_ms")
        if latency_ms is not None and latency is None:
            raise ValueError("CostFilter(latency_ms=...) needs latency= (a LatencyTable or fn)")
        super().__init__(lambda cost: True, on="model", patience=patience, name="CostFilter")
        self.input_shape = tuple(input_shape)
        self.latency = latency

    def cost(self, model_fn: Callable[[], nn.Module] | None) -> dict[str, float]:
        """``{'params', 'macs', 'flops'[, 'latency_ms']}`` of the model ``model_fn`` builds."""
        import torch

        from nasx.hardware.cost import model_cost

        needs_latency = any(r.metric == "latency_ms" for r in self.ranges)
        shape_only = not needs_latency or getattr(self.latency, "shape_only", False)
        with torch.device("meta" if shape_only else "cpu"):
            model = _build(model_fn)
        return model_cost(
            model, self.input_shape, self.latency if needs_latency else None
        ).to_dict()

    def check(self, arch: dict[str, Any], model_fn: Callable[[], nn.Module] | None) -> str | None:
        cost = self.cost(model_fn)
        reasons = [v for r in self.ranges if (v := r.violation(cost[r.metric])) is not None]
        return f"rejected by CostFilter: {'; '.join(reasons)}" if reasons else None


def admission(
    space: Any, arch_filter: Any, builder: Callable[[dict[str, Any]], nn.Module]
) -> Callable[[dict[str, Any]], str | None]:
    """Why an arch is rejected before it runs, or None: the space's constraints (nasx's
    strategies never break them; one written from scratch may), then ``arch_filter``.

    >>> admit = admission({}, Filter(lambda arch: arch['k'] > 1, name='k > 1'), builder=None)
    >>> admit({'k': 2}), admit({'k': 1})
    (None, 'rejected by k > 1')
    """

    def admit(arch: dict[str, Any]) -> str | None:
        broken = space.violations(arch) if getattr(space, "constraints", None) else []
        if broken:
            return f"breaks the space's constraints: {'; '.join(broken)}"
        if arch_filter is None:
            return None
        reason: str | None = arch_filter.check(arch, lambda: builder(arch))
        return reason

    return admit
