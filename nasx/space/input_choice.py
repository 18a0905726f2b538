"""InputChoice: choose which of several input tensors to use, and how to combine them."""
from __future__ import annotations

from typing import Any

import torch
import torch.nn as nn

from .base import MutableModule
from .choice import CategoricalMultiple, Choice
from .context import resolve

REDUCTIONS = ("sum", "mean", "concat", "none")


def _check_reduction(reduction: str) -> str:
    if reduction not in REDUCTIONS:
        raise ValueError(f"InputChoice reduction must be one of {REDUCTIONS}, got {reduction!r}")
    return reduction


def reduce_inputs(tensors: list[torch.Tensor], reduction: str) -> Any:
    """Combine the chosen tensors: one tensor passes through; several are summed, averaged or
    concatenated on dim 1; ``'none'`` returns the list as it is."""
    if reduction == "none":
        return tensors
    if not tensors:
        return None
    if len(tensors) == 1:
        return tensors[0]
    if reduction == "sum":
        return torch.stack(tensors).sum(0)
    if reduction == "mean":
        return torch.stack(tensors).mean(0)
    return torch.cat(tensors, 1)


class ChosenInputs(nn.Module):
    """The fixed form of an InputChoice: picks ``chosen`` from the input list and reduces them.

    Example:
        >>> import torch
        >>> ChosenInputs([0, 2], 'sum')([torch.ones(1), torch.zeros(1), torch.ones(1)])
        tensor([2.])
    """

    def __init__(self, chosen: list[int], reduction: str = "sum"):
        super().__init__()
        self.chosen = list(chosen)
        self.reduction = _check_reduction(reduction)

    def forward(self, candidate_inputs: list[torch.Tensor]) -> Any:
        return reduce_inputs([candidate_inputs[i] for i in self.chosen], self.reduction)

    def extra_repr(self) -> str:
        return f"chosen={self.chosen}, reduction={self.reduction!r}"


class InputChoice(MutableModule):
    """Choose ``n_chosen`` of ``n_candidates`` inputs (a list of tensors passed to ``forward``).

    The arch value is a sorted list of indices, e.g. ``[0]`` or ``[1, 3]``; a bare ``0`` is
    accepted for ``n_chosen=1``. ``n_chosen=None`` allows any subset. Under
    :func:`~nasx.space.model_context` the constructor returns a :class:`ChosenInputs`.

    Example:
        >>> import torch
        >>> from nasx.space import InputChoice, model_context
        >>> with model_context({'skip': 1}):
        ...     pick = InputChoice(3, n_chosen=1, label='skip')
        >>> pick
        ChosenInputs(chosen=[1], reduction='sum')
    """

    def __init__(
        self, n_candidates: int, n_chosen: int | None = 1, reduction: str = "sum", *, label: str | None = None
    ):
        super().__init__()
        self.n_candidates = n_candidates
        self.n_chosen = n_chosen
        self.reduction = _check_reduction(reduction)
        self.choice = self._make_choice(n_candidates, n_chosen, label)

    @staticmethod
    def _make_choice(n_candidates: int, n_chosen: int | None, label: str | None) -> CategoricalMultiple:
        if not isinstance(n_candidates, int) or n_candidates < 1:
            raise ValueError(f"InputChoice n_candidates must be a positive int, got {n_candidates!r}")
        return CategoricalMultiple(range(n_candidates), n_chosen=n_chosen, label=label, _kind="inputchoice")

    @classmethod
    def create_fixed_module(
        cls, n_candidates: int, n_chosen: int | None = 1, reduction: str = "sum", *, label: str | None = None
    ) -> ChosenInputs:
        _check_reduction(reduction)
        return ChosenInputs(resolve(cls._make_choice(n_candidates, n_chosen, label)), reduction)

    @property
    def label(self) -> str:
        return self.choice.label

    def choices(self) -> list[Choice]:
        return [self.choice]

    def forward(self, candidate_inputs: list[torch.Tensor]) -> Any:
        if len(candidate_inputs) != self.n_candidates:
            raise ValueError(
                f"InputChoice {self.label!r} expects {self.n_candidates} inputs, got {len(candidate_inputs)}"
            )
        return reduce_inputs([candidate_inputs[i] for i in self.choice.default], self.reduction)

    def extra_repr(self) -> str:
        return f"n_candidates={self.n_candidates}, n_chosen={self.n_chosen}, reduction={self.reduction!r}, label={self.label!r}"
