"""Hardware-aware one-shot search: a differentiable expected-cost penalty and an arch cost range.

The expected cost of the architecture distribution is ``base + sum_label sum_v p(label=v) c(v)``
with a per-candidate cost table ``c`` (latency in ms from a
:class:`~nasx.hardware.predictor.LatencyTable`, MACs, parameters: see
:func:`nasx.hardware.cost.candidate_costs`); it is differentiable in the architecture weights,
so DARTS, GumbelDARTS (``cost_penalty=``) and Proxyless (``cost_fn=``) add it to the
architecture loss, as ProxylessNAS and FBNet add expected latency.

    >>> import torch
    >>> penalty = CostPenalty({'op': {'conv': 4.0, 'skip': 0.0}}, weight=0.5, grids={'op': ['conv', 'skip']})
    >>> alpha = torch.zeros(2, requires_grad=True)
    >>> loss = penalty({'op': alpha.softmax(-1)})           # 0.5 * (0.5 * 4 + 0.5 * 0)
    >>> loss.item(), penalty.expected({'op': alpha.softmax(-1)}).item()
    (1.0, 2.0)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import torch

from nasx.hardware.cost import arch_cost, candidate_costs
from nasx.hardware.reward import CostRange
from nasx.space import ModelSpace, search_space

from .topk import prob_key

MODES = ("linear", "hinge")


class CostPenalty:
    """``weight * f(expected cost)``, a term for the architecture loss.

    Args:
        table: ``{label: {value: cost}}`` (values in the one-shot strategies' key form: an input
            choice's index).
        weight: the penalty's weight.
        target: divide the expected cost by it (a dimensionless term); needed by ``'hinge'``.
        mode: ``'linear'`` (``weight * E[cost] / target``) or ``'hinge'``
            (``weight * max(0, E[cost] / target - 1)``: no pull once under the target).
        base: the cost that does not depend on any choice (added to the expectation).
        grids: ``{label: [values in alpha order]}``; default the search space given at call time.
    """

    def __init__(
        self,
        table: Mapping[str, Mapping[Any, float]],
        weight: float = 1.0,
        *,
        target: float | None = None,
        mode: str = "linear",
        base: float = 0.0,
        grids: Mapping[str, Sequence[Any]] | None = None,
    ):
        if mode not in MODES:
            raise ValueError(f"CostPenalty mode must be one of {MODES}, got {mode!r}")
        if mode == "hinge" and target is None:
            raise ValueError("CostPenalty(mode='hinge') needs a target")
        if target is not None and not target > 0:
            raise ValueError(f"target must be positive, got {target}")
        self.table = {label: dict(costs) for label, costs in table.items()}
        self.weight, self.target, self.mode, self.base = weight, target, mode, base
        self.grids = {k: list(v) for k, v in grids.items()} if grids is not None else None
        self._vectors: dict[tuple[Any, ...], torch.Tensor] = {}

    @classmethod
    def from_space(
        cls,
        space: ModelSpace,
        input_shape: Sequence[int],
        metric: str = "macs",
        *,
        latency: Any = None,
        scale: float = 1.0,
        **kwargs: Any,
    ) -> CostPenalty:
        """A penalty over ``space`` with costs from :func:`~nasx.hardware.cost.candidate_costs`
        (the default arch's cost as ``base``); ``scale`` multiplies costs (``1e-6``: MMACs)."""
        table = candidate_costs(space, input_shape, metric, latency=latency, scale=scale)
        ss = search_space(space)
        base = arch_cost(space, ss.default(), input_shape, latency=latency).get(metric) * scale
        grids = {label: c.grid() for label, c in ss.items()}
        return cls(table, base=base, grids=grids, **kwargs)

    def expected(
        self, probs: Mapping[str, torch.Tensor], search_space: Mapping[str, Any] | None = None
    ) -> torch.Tensor:
        """``base + sum_label probs[label] . costs[label]``, differentiable in ``probs``."""
        total: torch.Tensor | None = None
        for label, costs in self.table.items():
            if label not in probs:
                raise KeyError(
                    f"the cost table has label {label!r}, the architecture weights do not; "
                    f"they have {sorted(probs)}"
                )
            p = probs[label]
            key = (label, len(p), p.dtype, p.device)
            vec = self._vectors.get(key)
            if vec is None:  # built once per label and device: no host copy per step
                values = self._values(label, len(p), search_space)
                vec = torch.tensor(
                    [_lookup(costs, label, v) for v in values], dtype=p.dtype, device=p.device
                )
                self._vectors[key] = vec
            term = (p * vec).sum()
            total = term if total is None else total + term
        if total is None:
            raise ValueError("the cost table is empty")
        return total + self.base

    def __call__(
        self, probs: Mapping[str, torch.Tensor], search_space: Mapping[str, Any] | None = None
    ) -> torch.Tensor:
        cost = self.expected(probs, search_space)
        if self.target is not None:
            cost = cost / self.target
        if self.mode == "hinge":
            cost = torch.relu(cost - 1.0)
        return self.weight * cost

    def _values(self, label: str, n: int, search_space: Mapping[str, Any] | None) -> list[Any]:
        grid: list[Any] | None = None
        if self.grids is not None and label in self.grids:
            grid = self.grids[label]
        elif search_space is not None and label in search_space:
            grid = list(search_space[label].grid())
        if grid is None:
            raise ValueError(
                f"CostPenalty does not know the order of label {label!r}'s values: build it "
                "with from_space(...) or grids=, or call it with the search space"
            )
        # an input choice's weights are per input (its mixture), not per combination
        return [prob_key(v) for v in grid] if len(grid) == n else list(range(n))


def add_penalty_gradient(penalty: Any, supernet: Any) -> torch.Tensor:
    """Add the gradient of ``penalty(softmax(alphas), search_space)`` to the alphas' ``.grad``
    (the architecture loss's gradient is already there); returns the penalty's value."""
    alphas = supernet.alphas()
    probs = {k: a.softmax(-1) for k, a in alphas.items()}
    value = penalty(probs, supernet.search_space)
    params = list(alphas.values())
    grads = torch.autograd.grad(value, params, allow_unused=True)
    for a, g in zip(params, grads, strict=True):
        if g is not None:
            a.grad = g if a.grad is None else a.grad + g
    detached: torch.Tensor = value.detach()
    return detached


def _lookup(costs: Mapping[Any, float], label: str, value: Any) -> float:
    if value not in costs:
        raise KeyError(
            f"the cost table of label {label!r} has no entry for {value!r}; it has {list(costs)}"
        )
    return float(costs[value])


class ArchCostRange:
    """``f(arch) -> bool``: whether an arch's cost lies in the given ranges (computed on the meta
    device, latency from a :class:`~nasx.hardware.predictor.LatencyTable`). For RandomOneShot's
    ``filter`` (sampling while training and the search of the trained supernet).

    Example:
        >>> from nasx.hub.mnasnet import MnasNet, MNASNET_A1
        >>> ArchCostRange(MnasNet(), (3, 224, 224), macs=(None, 320e6))(MNASNET_A1)
        True
    """

    def __init__(
        self,
        space: ModelSpace,
        input_shape: Sequence[int],
        *,
        params: Any = None,
        macs: Any = None,
        flops: Any = None,
        latency_ms: Any = None,
        latency: Any = None,
    ):
        given = {"params": params, "macs": macs, "flops": flops, "latency_ms": latency_ms}
        self.ranges = [CostRange.parse(k, v) for k, v in given.items() if v is not None]
        if not self.ranges:
            raise ValueError("ArchCostRange needs at least one of params, macs, flops, latency_ms")
        if latency_ms is not None and latency is None:
            raise ValueError("ArchCostRange(latency_ms=...) needs latency= (a LatencyTable)")
        self.space, self.input_shape, self.latency = space, tuple(input_shape), latency

    def violations(self, arch: dict[str, Any]) -> list[str]:
        """Why ``arch`` is out of range (empty when it is in)."""
        needs_latency = any(r.metric == "latency_ms" for r in self.ranges)
        cost = arch_cost(
            self.space, arch, self.input_shape, latency=self.latency if needs_latency else None
        )
        return [v for r in self.ranges if (v := r.violation(cost.get(r.metric))) is not None]

    def __call__(self, arch: dict[str, Any]) -> bool:
        return not self.violations(arch)
