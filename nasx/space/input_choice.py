"""InputChoice: choose which of several input tensors to use, and how to combine them."""

from __future__ import annotations

from typing import Any, Literal

import torch
import torch.nn as nn

from .base import MutableModule
from .choice import CategoricalMultiple, Choice
from .context import resolve

REDUCTIONS = ("sum", "mean", "concat", "none")
ReductionType = Literal["mean", "concat", "sum", "none"]
"""NNI's name for the values of ``InputChoice(reduction=...)``."""


def _check_reduction(reduction: str) -> str:
    if reduction not in REDUCTIONS:
        raise ValueError(f"InputChoice reduction must be one of {REDUCTIONS}, got {reduction!r}")
    return reduction


def reduce_inputs(tensors: list[torch.Tensor], reduction: str) -> Any:
    """Combine the chosen tensors: one tensor passes through; several are summed, averaged or
    concatenated on dim 1; ``'none'`` returns the list as it is.

    Example:
        >>> import torch
        >>> reduce_inputs([torch.ones(1, 2), torch.zeros(1, 2)], 'concat').shape
        torch.Size([1, 4])
    """
    if reduction == "none":
        return tensors
    if not tensors:
        raise ValueError(
            f"no input was chosen, so there is nothing to {reduction}; use reduction='none' to allow that"
        )
    if len(tensors) == 1:
        return tensors[0]
    if reduction == "sum":
        return torch.stack(tensors).sum(0)
    if reduction == "mean":
        return torch.stack(tensors).mean(0)
    return torch.cat(tensors, 1)


class ChosenInputs(nn.Module):
    """The fixed form of an InputChoice: picks ``chosen`` from the input list and reduces them.

    Scripts with TorchScript (``forward`` returns a tensor); with ``reduction='none'`` the fixed
    form is :class:`ChosenInputList`, which returns the list.

    Example:
        >>> import torch
        >>> ChosenInputs([0, 2], 'sum')([torch.ones(1), torch.zeros(1), torch.ones(1)])
        tensor([2.])
    """

    def __init__(self, chosen: list[int], reduction: str = "sum"):
        super().__init__()
        self.chosen = list(chosen)
        self.reduction = _check_reduction(reduction)

    def forward(self, candidate_inputs: list[torch.Tensor]) -> torch.Tensor:
        tensors = [candidate_inputs[i] for i in self.chosen]
        if len(tensors) == 1:
            return tensors[0]
        if len(tensors) == 0:
            raise ValueError("no input was chosen; use reduction='none' to allow an empty choice")
        if self.reduction == "sum":
            return torch.stack(tensors).sum(0)
        if self.reduction == "mean":
            return torch.stack(tensors).mean(0)
        return torch.cat(tensors, 1)

    def extra_repr(self) -> str:
        return f"chosen={self.chosen}, reduction={self.reduction!r}"


class ChosenInputList(ChosenInputs):
    """The fixed form of an InputChoice with ``reduction='none'``: the chosen tensors, as a list.

    Example:
        >>> import torch
        >>> len(ChosenInputList([0, 2], 'none')([torch.ones(1), torch.zeros(1), torch.ones(1)]))
        2
    """

    def forward(self, candidate_inputs: list[torch.Tensor]) -> list[torch.Tensor]:  # type: ignore[override]
        return [candidate_inputs[i] for i in self.chosen]


def _fixed_inputs(chosen: list[int], reduction: str) -> ChosenInputs:
    return (
        ChosenInputList(chosen, reduction)
        if reduction == "none"
        else ChosenInputs(chosen, reduction)
    )


class InputChoice(MutableModule):
    """Choose ``n_chosen`` of ``n_candidates`` inputs (a list of tensors passed to ``forward``).

    The arch value is a sorted list of indices, e.g. ``[0]`` or ``[1, 3]``; a bare ``0`` is
    accepted for ``n_chosen=1``. ``n_chosen=None`` allows any non-empty subset (the empty one too
    with ``reduction='none'``). Under
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
        self,
        n_candidates: int,
        n_chosen: int | None = 1,
        reduction: str = "sum",
        *,
        label: str | None = None,
    ):
        super().__init__()
        self.n_candidates = n_candidates
        self.n_chosen = n_chosen
        self.reduction = _check_reduction(reduction)
        self.choice = self._make_choice(n_candidates, n_chosen, label, reduction)

    @staticmethod
    def _make_choice(
        n_candidates: int, n_chosen: int | None, label: str | None, reduction: str
    ) -> CategoricalMultiple:
        if not isinstance(n_candidates, int) or n_candidates < 1:
            raise ValueError(
                f"InputChoice n_candidates must be a positive int, got {n_candidates!r}"
            )
        # Choosing nothing only makes sense when the caller gets the (empty) list back.
        return CategoricalMultiple(
            range(n_candidates),
            n_chosen=n_chosen,
            label=label,
            allow_empty=reduction == "none",
            _kind="inputchoice",
        )

    @classmethod
    def create_fixed_module(
        cls,
        n_candidates: int,
        n_chosen: int | None = 1,
        reduction: str = "sum",
        *,
        label: str | None = None,
    ) -> ChosenInputs:
        _check_reduction(reduction)
        return _fixed_inputs(
            resolve(cls._make_choice(n_candidates, n_chosen, label, reduction)), reduction
        )

    @property
    def label(self) -> str:
        return self.choice.label

    def choices(self) -> list[Choice]:
        return [self.choice]

    def freeze(self, sample: dict[str, Any]) -> ChosenInputs:
        """The fixed module ``sample`` (an arch) selects (NNI's ``freeze``).

        >>> InputChoice(3, n_chosen=2, label='in').freeze({'in': [0, 2]})
        ChosenInputs(chosen=[0, 2], reduction='sum')
        """
        return _fixed_inputs(self.choice.freeze(sample), self.reduction)

    def forward(self, candidate_inputs: list[torch.Tensor]) -> Any:
        if len(candidate_inputs) != self.n_candidates:
            raise ValueError(
                f"InputChoice {self.label!r} expects {self.n_candidates} inputs, got {len(candidate_inputs)}"
            )
        return reduce_inputs([candidate_inputs[i] for i in self.choice.default], self.reduction)

    def extra_repr(self) -> str:
        return (
            f"n_candidates={self.n_candidates}, n_chosen={self.n_chosen}, "
            f"reduction={self.reduction!r}, label={self.label!r}"
        )
