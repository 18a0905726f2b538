"""The cost of an arch without training it: parameters, MACs and (optionally) latency.

The model of an arch is built on PyTorch's ``meta`` device by default: modules get shapes but no
memory and no initialisation, and the counting forward pass computes shapes only. A predictor
(:class:`~nasx.hardware.predictor.LatencyTable`) adds a latency estimate from the same shapes, so
filters and one-shot penalties need no measurement per arch. ``benchmarks/arch_cost.py`` measures
how many archs per minute this handles.

    >>> from nasx.hub.mnasnet import MnasNet, MNASNET_A1
    >>> cost = arch_cost(MnasNet(), MNASNET_A1, (3, 224, 224))
    >>> cost.params, cost.macs      # 3.9 M and 312 M in the MnasNet paper
    (3887038, 311579072)
"""

from __future__ import annotations

import dataclasses
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn as nn

from nasx.profiler import count_parameters
from nasx.space import ModelSpace, search_space

from .shapes import ShapeTrace

METRICS = ("params", "macs", "latency_ms")


@dataclass(frozen=True)
class ArchCost:
    """Parameters, multiply-accumulates and, when a latency model was given, milliseconds."""

    params: int
    macs: int
    latency_ms: float | None = None

    @property
    def flops(self) -> int:
        """FLOPs counted as two per multiply-accumulate."""
        return 2 * self.macs

    def to_dict(self) -> dict[str, Any]:
        """``{'params', 'macs', 'flops', 'latency_ms'}`` (latency only when known)."""
        d: dict[str, Any] = {"params": self.params, "macs": self.macs, "flops": self.flops}
        if self.latency_ms is not None:
            d["latency_ms"] = self.latency_ms
        return d

    def get(self, metric: str) -> float:
        """One of ``'params'``, ``'macs'``, ``'latency_ms'`` or ``'flops'`` as a float; an error
        names what is missing."""
        if metric == "flops":
            return float(self.flops)
        if metric not in METRICS:
            raise ValueError(f"unknown cost metric {metric!r}; known: {', '.join(METRICS)}, flops")
        value = getattr(self, metric)
        if value is None:
            raise ValueError(f"{metric} is unknown: pass latency= (a LatencyTable or a function)")
        return float(value)


LatencyModel = Callable[[nn.Module, Sequence[int]], float]
"""``latency(model, input_shape) -> ms``: a :class:`LatencyTable` or any such function."""


def model_cost(
    model: nn.Module,
    input_shape: Sequence[int],
    latency: Any = None,
    trace: ShapeTrace | None = None,
) -> ArchCost:
    """The cost of a built model (on any device, ``meta`` included). MACs are counted by a
    :class:`~nasx.hardware.shapes.ShapeTrace` (``trace``: one shared across calls skips the blocks
    it has seen; default a fresh one).

    >>> model_cost(nn.Linear(10, 5), (10,))
    ArchCost(params=55, macs=50, latency_ms=None)
    """
    ms = None if latency is None else float(_latency_fn(latency)(model, tuple(input_shape)))
    macs = (trace if trace is not None else ShapeTrace()).macs(model, tuple(input_shape))
    return ArchCost(count_parameters(model), macs, ms)


_SHARED = ShapeTrace()  # arch_cost's memo of block shapes and MACs (structural keys: always valid)
_SHARED_LIMIT = 200_000


def shared_trace() -> ShapeTrace:
    """The process-wide memo :func:`arch_cost` uses by default (emptied past 200,000 blocks)."""
    if len(_SHARED) > _SHARED_LIMIT:
        _SHARED.memo.clear()
    return _SHARED


def build_on(
    space: ModelSpace, arch: dict[str, Any], device: str | torch.device = "meta"
) -> nn.Module:
    """``space.freeze(arch)`` with its modules created on ``device`` (``'meta'``: no memory)."""
    with torch.device(device):
        return space.freeze(arch)


def arch_cost(
    space: ModelSpace,
    arch: dict[str, Any],
    input_shape: Sequence[int],
    *,
    latency: Any = None,
    device: str | torch.device = "meta",
    trace: ShapeTrace | None = None,
    analytic: bool = True,
) -> ArchCost:
    """Cost of ``arch`` of ``space`` for one input of ``input_shape`` (no batch dimension).

    A space with an ``analytic_cost(arch, input_shape) -> (params, macs)`` method (the hub's
    MnasNet, ProxylessNAS and MobileNetV3Space, from :mod:`nasx.hub.layer_costs`) is priced by
    it, without building a model, when no latency is asked on ``meta``: hundreds of thousands of
    archs per CPU-minute instead of about a thousand (``benchmarks/arch_cost.py``; the tests
    check both give the same counts).

    Args:
        space: a :class:`~nasx.space.ModelSpace` instance (its construction arguments are reused).
        arch: the arch (validated against the space).
        input_shape: e.g. ``(3, 224, 224)``.
        latency: a :class:`~nasx.hardware.predictor.LatencyTable` or ``fn(model, input_shape)``
            returning milliseconds; None leaves ``latency_ms`` empty.
        device: where the model is built for counting (``'meta'``: shapes only, the fastest).
        trace: the memo of block shapes and MACs; default on ``meta``: one shared by the whole
            process (emptied past 200,000 blocks).
        analytic: use the space's ``analytic_cost`` when it has one (False: always build).
    """
    formula = getattr(space, "analytic_cost", None) if analytic else None
    if formula is not None and latency is None and torch.device(device).type == "meta":
        arch = _search_space(space).validate(arch)
        params, macs = formula(arch, tuple(int(s) for s in input_shape))
        return ArchCost(int(params), int(macs))
    if trace is None and torch.device(device).type == "meta":
        trace = shared_trace()
    return model_cost(build_on(space, arch, device), input_shape, latency, trace)


_SPACES: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()


def _search_space(space: ModelSpace) -> Any:
    """``search_space(space)``, kept per space object (walking the modules is most of a price)."""
    ss = _SPACES.get(space)
    if ss is None:
        ss = _SPACES[space] = search_space(space)
    return ss


def candidate_costs(
    space: ModelSpace,
    input_shape: Sequence[int],
    metric: str = "macs",
    *,
    base: dict[str, Any] | None = None,
    latency: Any = None,
    scale: float = 1.0,
) -> dict[str, dict[Any, float]]:
    """Per-candidate cost table ``{label: {value: cost}}`` for one-shot penalties.

    The cost of a candidate is the cost of ``base`` (default: the space's default arch) with that
    one label changed, minus the cost of ``base``: an additive model, exact when choices do not
    interact (a cell's operations) and a first-order estimate when they do (a block's width
    changes the next block's input). ``scale`` multiplies every entry (``1e-6`` for MMACs).
    Input choices keep their list value in the one-shot strategies' key form (``[2]`` -> ``2``).

    >>> import torch.nn as nn
    >>> from nasx.space import LayerChoice, ModelSpace
    >>> class Net(ModelSpace):
    ...     def __init__(self):
    ...         super().__init__()
    ...         self.op = LayerChoice({'small': nn.Linear(4, 4), 'big': nn.Sequential(
    ...             nn.Linear(4, 16), nn.Linear(16, 4))}, label='op')
    ...     def forward(self, x):
    ...         return self.op(x)
    >>> candidate_costs(Net(), (4,))
    {'op': {'small': 0.0, 'big': 112.0}}
    """
    if metric not in METRICS and metric != "flops":
        raise ValueError(f"unknown cost metric {metric!r}; known: {', '.join(METRICS)}, flops")
    ss = search_space(space)
    base = ss.validate(base if base is not None else ss.default())
    device = "cpu" if metric == "latency_ms" and not _shape_only(latency) else "meta"

    def cost(arch: dict[str, Any]) -> float:
        return arch_cost(space, arch, input_shape, latency=latency, device=device).get(metric)

    ref = cost(base)
    table: dict[str, dict[Any, float]] = {}
    for label, c in ss.items():
        table[label] = {}
        for value in c.grid():
            v = ref if value == base[label] else cost({**base, label: value})
            table[label][_key(value)] = (v - ref) * scale
    return table


def _key(value: Any) -> Any:
    if isinstance(value, list):
        return value[0] if len(value) == 1 else tuple(value)
    return value


def _latency_fn(latency: Any) -> LatencyModel:
    predict = getattr(latency, "predict", None)
    if predict is not None:
        return predict
    if callable(latency):
        return latency
    raise TypeError(
        f"latency must be a LatencyTable or fn(model, input_shape) -> ms, got {type(latency).__name__}"
    )


def _shape_only(latency: Any) -> bool:
    """Whether ``latency`` works on meta models (a table does; a measuring function does not)."""
    return bool(getattr(latency, "shape_only", False))


def fields() -> list[str]:
    """The names :meth:`ArchCost.to_dict` can return."""
    return [f.name for f in dataclasses.fields(ArchCost)] + ["flops"]
