"""Mixed modules that stand in for LayerChoice, InputChoice and Repeat inside a supernet.

Each keeps the candidates of the choice it replaces under the same child names (``'0'``, ``'1'``
or the dict keys; blocks ``'0'``, ``'1'``, ... for Repeat), so a supernet state-dict key
``name.<value>.w`` maps to ``name.w`` in the fixed model. At forward time each reads the shared
:class:`~nasx.strategy.oneshot.supernet.state.ArchState`: mixture weights (every candidate runs) or an arch
(only the chosen candidate runs).
"""

from __future__ import annotations

from typing import Any, cast

import torch
import torch.nn as nn
from torch.utils.checkpoint import checkpoint

from nasx.space.input_choice import reduce_inputs

from .state import ArchState, gated

NONE_OPS = ("none",)


def submodule(module: nn.Module, name: str) -> nn.Module:
    """A child registered by add_module (``_modules`` is typed ``Module | None``; ours never are)."""
    return cast(nn.Module, module._modules[name])


def thunk(module: nn.Module, *args: Any, **kwargs: Any) -> Any:
    """A thunk running ``module(*args, **kwargs)`` later."""
    return lambda: module(*args, **kwargs)


def weighted_sum(
    weights: torch.Tensor, run: list[tuple[int, Any]], state: ArchState
) -> torch.Tensor:
    """``sum_k weights[k] * run_k()`` over ``run = [(k, thunk)]``, optionally checkpointed."""

    def mix(w: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor | None = None
        for k, run_k in run:
            term = w[k] * run_k()
            out = term if out is None else out + term
        if out is None:
            raise ValueError("weighted_sum needs at least one candidate to run, got none")
        return out

    if state.checkpoint and torch.is_grad_enabled():
        return checkpoint(mix, weights, use_reentrant=False)
    return mix(weights)


class MixedLayer(nn.Module):
    """Replaces a LayerChoice: weighted sum of candidates, or the chosen candidate only."""

    _state: ArchState  # the supernet's shared forward-time state (a plain object)

    def __init__(
        self,
        label: str,
        candidates: list[tuple[Any, nn.Module]],
        state: ArchState,
        none_ops: tuple[str, ...] = NONE_OPS,
    ):
        super().__init__()
        self.label = label
        self.values = [v for v, _ in candidates]
        for value, module in candidates:
            self.add_module(str(value), module)
        self.__dict__["_state"] = state
        # 'none' candidates output zeros: skipping them leaves the weighted sum unchanged.
        self._skip = [isinstance(v, str) and v in none_ops for v in self.values]

    def candidate(self, value: Any) -> nn.Module:
        return submodule(self, str(value))

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        st: ArchState = self._state
        if st.path_mode:
            out = self.candidate(st.value(self.label))(*args, **kwargs)
            return gated(
                out, st, self.label, lambda k: self.candidate(self.values[k])(*args, **kwargs)
            )
        run = [
            (k, thunk(self.candidate(v), *args, **kwargs))
            for k, v in enumerate(self.values)
            if not self._skip[k]
        ]
        if not run:  # every candidate is 'none'
            return self.candidate(self.values[0])(*args, **kwargs)
        return weighted_sum(st.weight(self.label), run, st)

    def alpha_size(self) -> int:
        return len(self.values)

    def export(self, probs: torch.Tensor) -> dict[str, Any]:
        return {self.label: self.values[int(probs.argmax())]}

    def export_probs(self, probs: torch.Tensor) -> dict[str, dict[Any, float]]:
        return {self.label: {v: float(p) for v, p in zip(self.values, probs, strict=False)}}

    def extra_repr(self) -> str:
        return f"label={self.label!r}"


class MixedInput(nn.Module):
    """Replaces an InputChoice: weighted sum of the inputs, or the chosen inputs reduced."""

    _state: ArchState  # the supernet's shared forward-time state (a plain object)

    def __init__(
        self,
        label: str,
        n_candidates: int,
        n_chosen: int | None,
        reduction: str,
        grid: list[list[int]],
        state: ArchState,
    ):
        super().__init__()
        self.label, self.n_candidates, self.n_chosen, self.reduction = (
            label,
            n_candidates,
            n_chosen,
            reduction,
        )
        self.grid = grid
        self.__dict__["_state"] = state

    def forward(self, candidate_inputs: list[torch.Tensor]) -> Any:
        st: ArchState = self._state
        if st.path_mode:
            out = reduce_inputs([candidate_inputs[i] for i in st.value(self.label)], self.reduction)
            return gated(
                out,
                st,
                self.label,
                lambda k: reduce_inputs(
                    [candidate_inputs[i] for i in self.grid[k]], self.reduction
                ),
            )
        if self.reduction not in ("sum", "mean"):
            raise ValueError(
                f"InputChoice {self.label!r} has reduction {self.reduction!r}; a weighted mixture (DARTS) "
                "needs 'sum' or 'mean'. Use a path-sampling strategy (ENAS, RandomOneShot, Proxyless)"
            )
        # sum of n_chosen inputs ~ n_chosen * (convex mixture); mean ~ the convex mixture itself.
        scale = (self.n_chosen or 1) if self.reduction == "sum" else 1
        w = st.weight(self.label)
        out = weighted_sum(w, [(k, (lambda x=x: x)) for k, x in enumerate(candidate_inputs)], st)
        return out * scale if scale != 1 else out

    def alpha_size(self) -> int:
        return self.n_candidates

    def export(self, probs: torch.Tensor) -> dict[str, Any]:
        k = self.n_chosen or int((probs > 1.0 / self.n_candidates).sum().clamp(min=1))
        return {self.label: sorted(int(i) for i in probs.topk(k).indices)}

    def export_probs(self, probs: torch.Tensor) -> dict[str, dict[Any, float]]:
        return {self.label: {i: float(p) for i, p in enumerate(probs)}}

    def extra_repr(self) -> str:
        return f"label={self.label!r}, n_candidates={self.n_candidates}, n_chosen={self.n_chosen}"


class MixedRepeat(nn.Module):
    """Replaces a Repeat with a depth choice: weighted sum over depths, or the chosen depth."""

    _state: ArchState  # the supernet's shared forward-time state (a plain object)

    def __init__(self, label: str, depths: list[int], blocks: list[nn.Module], state: ArchState):
        super().__init__()
        self.label, self.depths = label, list(depths)
        for i, block in enumerate(blocks):
            self.add_module(str(i), block)
        self.__dict__["_state"] = state

    def _run(self, x: Any, depth: int) -> Any:
        for i in range(depth):
            x = submodule(self, str(i))(x)
        return x

    def forward(self, x: Any) -> Any:
        st: ArchState = self._state
        if st.path_mode:
            out = self._run(x, st.value(self.label))
            return gated(out, st, self.label, lambda k: self._run(x, self.depths[k]))
        # outputs[d] after d blocks, computed in one pass: [B, ...] each.
        outputs, h = {}, x
        for d in range(max(self.depths) + 1):
            if d in self.depths:
                outputs[d] = h
            if d < max(self.depths):
                h = submodule(self, str(d))(h)
        w = self._state.weight(self.label)
        return sum(w[k] * outputs[d] for k, d in enumerate(self.depths))

    def alpha_size(self) -> int:
        return len(self.depths)

    def export(self, probs: torch.Tensor) -> dict[str, Any]:
        return {self.label: self.depths[int(probs.argmax())]}

    def export_probs(self, probs: torch.Tensor) -> dict[str, dict[Any, float]]:
        return {self.label: {d: float(p) for d, p in zip(self.depths, probs, strict=False)}}

    def extra_repr(self) -> str:
        return f"label={self.label!r}, depths={self.depths}"
