"""ArchState: what the mixed modules of one supernet read at forward time.

A supernet runs in one of two ways, set by its strategy before each forward:

- mixture (DARTS, GumbelDARTS): ``weights[key]`` is a 1-D tensor of candidate weights for the
  alpha ``key`` (a label, or ``'<cell>/edge_<i>_<j>'``); every candidate runs and is weighted.
- path (ENAS, RandomOneShot, Proxyless): ``arch`` is a full arch dict; only the chosen candidate of
  every choice runs. ``gates[label]`` (Proxyless) is a probability vector over the label's
  ``grid()`` values through which the chosen path passes a binary-gate gradient.
  ``gate_paths[label]`` (Proxyless's two-path update) names the grid indices scored in backward,
  the chosen one first (its output is reused); a gated label without it scores every index.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch


class ArchState:
    """Shared, mutable forward-time state of a supernet (plain object, not a module)."""

    def __init__(self) -> None:
        self.weights: dict[str, torch.Tensor] = {}
        self.arch: dict[str, Any] | None = None
        self.gates: dict[str, torch.Tensor] = {}
        self.gate_paths: dict[str, tuple[int, ...]] = {}
        # Recompute mixed candidates in backward instead of storing their activations.
        self.checkpoint: bool = False

    @property
    def path_mode(self) -> bool:
        return self.arch is not None

    def weight(self, key: str) -> torch.Tensor:
        try:
            return self.weights[key]
        except KeyError:
            raise RuntimeError(
                f"no mixture weights for {key!r}: the supernet ran in mixture mode without weights "
                "for this choice (call Supernet.use_mixture or Supernet.use_arch first)"
            ) from None

    def value(self, label: str) -> Any:
        if self.arch is None or label not in self.arch:
            raise RuntimeError(
                f"path mode needs a value for label {label!r}; arch is {self.arch!r}"
            )
        return self.arch[label]


class _GateGrad(torch.autograd.Function):
    """Zero output whose backward gives ``d loss / d gate_k = <grad_out, out_k>`` for the scored k.

    ProxylessNAS's binary-gate estimator: the forward computed only the chosen path; the backward
    recomputes the alternatives' outputs without grad (one at a time, so memory stays that of one
    path) to score them against the incoming gradient. ``paths=None`` scores every alternative,
    recomputing each (the chosen one too); ``paths=(chosen, *others)`` scores only those, the
    chosen one from the output already computed, so two paths cost one extra forward.
    """

    @staticmethod
    def forward(
        ctx: Any,
        probs: torch.Tensor,
        out: torch.Tensor,
        alternatives: Callable[[int], torch.Tensor],
        paths: tuple[int, ...] | None,
    ) -> torch.Tensor:
        ctx.alternatives = alternatives
        ctx.n = probs.numel()
        ctx.probs_meta = (probs.dtype, probs.device)
        ctx.paths = paths
        # A plain attribute, not save_for_backward: an identity candidate's output is its input,
        # and the version check would refuse it if a later layer changed that input in place
        # (the thunks of the alternatives hold their inputs the same way).
        ctx.out = out if paths is not None else None
        return torch.zeros_like(out)

    @staticmethod
    def backward(ctx: Any, grad_out: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        dtype, device = ctx.probs_meta
        grads = torch.zeros(ctx.n, dtype=dtype, device=device)
        with torch.no_grad():
            if ctx.paths is None:
                for k in range(ctx.n):
                    alt = ctx.alternatives(k)
                    if alt is not None:
                        grads[k] = (grad_out * alt).sum().to(dtype)
            else:
                for i, k in enumerate(ctx.paths):
                    alt = ctx.out if i == 0 else ctx.alternatives(k)
                    if alt is not None:
                        grads[k] = (grad_out * alt).sum().to(dtype)
        return grads, None, None, None


def gated(
    out: torch.Tensor, state: ArchState, label: str, alternatives: Callable[[int], Any]
) -> torch.Tensor:
    """``out`` plus (in Proxyless's arch step) a zero term carrying the binary-gate gradient.

    ``alternatives(k)`` returns the output the k-th grid value would have produced (or None when
    that value cannot apply, e.g. a shape mismatch). Only the indices in
    ``state.gate_paths[label]`` are scored when it is set (``out`` standing for the first).
    """
    probs = state.gates.get(label)
    if probs is None or not torch.is_tensor(out) or not torch.is_grad_enabled():
        return out
    paths = state.gate_paths.get(label)
    gate: torch.Tensor = _GateGrad.apply(probs, out.detach(), alternatives, paths)
    return out + gate
