"""The sandwich rule (BigNAS, OFA; Flextron trains its elastic LLM the same way): every weight step
trains the largest path, the smallest one and ``n`` random ones on the same batch, sums their
gradients and steps once. Training both extremes at every step keeps the two ends of the
weight-sharing network good (a plain uniform sampler rarely visits them), and the random paths
cover the middle. With in-place distillation the largest path learns the labels and the others
learn its (detached) outputs as soft targets.

"Largest" and "smallest" are defined per choice, so they need choices whose values are ordered:
numbers (a width, a depth, a ratio) take their max and min; a :class:`~nasx.space.Numerical`
its bounds. A choice among modules, inputs or strings has no order and is refused by label.

    >>> from nasx.space import Categorical, SearchSpace
    >>> space = SearchSpace({'width': Categorical([32, 16, 64], label='width'),
    ...                      'ratio': Categorical([2.0, 4.0], label='ratio')})
    >>> largest_arch(space), smallest_arch(space)
    ({'width': 64, 'ratio': 4.0}, {'width': 16, 'ratio': 2.0})
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F

from nasx.space import Categorical, Numerical

__all__ = ["largest_arch", "smallest_arch", "soft_target_loss", "unordered_choices"]

#: What a loss between a path's outputs and the largest path's outputs looks like:
#: ``(student_output, teacher_output) -> scalar tensor``.
DistillLoss = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


def _order_problem(choice: Any) -> str | None:
    """Why ``choice`` has no largest or smallest value (None when it has them)."""
    if isinstance(choice, Numerical):
        if not (math.isfinite(choice.low) and math.isfinite(choice.high)):
            return f"its bounds [{choice.low}, {choice.high}] are not finite"
        return None
    kind = getattr(choice, "kind", "choice")
    if kind == "layerchoice":
        return "it chooses among modules (a LayerChoice)"
    if not isinstance(choice, Categorical):
        return f"it is a {type(choice).__name__}, not a choice of one number"
    odd = [v for v in choice.values if isinstance(v, bool) or not isinstance(v, (int, float))]
    if odd:
        return f"its value {odd[0]!r} is not a number (values: {choice.values!r})"
    return None


def unordered_choices(search_space: Any) -> dict[str, str]:
    """``{label: why}`` for every choice that has no largest and smallest value.

    Example:
        >>> from nasx.space import Categorical, SearchSpace
        >>> unordered_choices(SearchSpace({'act': Categorical(['relu', 'gelu'], label='act')}))
        {'act': "its value 'relu' is not a number (values: ['relu', 'gelu'])"}
    """
    problems = {label: _order_problem(choice) for label, choice in search_space.items()}
    return {label: why for label, why in problems.items() if why is not None}


def _extreme(search_space: Any, largest: bool) -> dict[str, Any]:
    unordered = unordered_choices(search_space)
    if unordered:
        label, why = next(iter(unordered.items()))
        raise ValueError(
            f"the sandwich rule needs ordered choices (numbers, whose max and min are the largest "
            f"and smallest path), but choice {label!r} has no order: {why}"
            + (f"; also unordered: {', '.join(list(unordered)[1:])}" if len(unordered) > 1 else "")
        )
    arch = {}
    for label, choice in search_space.items():
        if isinstance(choice, Numerical):
            arch[label] = choice.qclip(choice.high if largest else choice.low)
        else:
            arch[label] = max(choice.values) if largest else min(choice.values)
    return arch


def largest_arch(search_space: Any) -> dict[str, Any]:
    """Every choice at its largest value (the sandwich's top); ValueError naming a choice that
    has no order."""
    return _extreme(search_space, largest=True)


def smallest_arch(search_space: Any) -> dict[str, Any]:
    """Every choice at its smallest value (the sandwich's bottom); ValueError naming a choice that
    has no order."""
    return _extreme(search_space, largest=False)


def soft_target_loss(student: torch.Tensor, teacher: torch.Tensor) -> torch.Tensor:
    """KL(teacher || student) of the class distributions, mean per prediction: in-place
    distillation's loss (BigNAS). The classes are on dim 1 of ``[B, C]`` class scores and
    ``[B, C, H, W]`` per-pixel scores, on the last dim of ``[B, T, V]`` token logits.

    Example:
        >>> t = torch.randn(2, 5)
        >>> soft_target_loss(t, t).abs().item() < 1e-6, soft_target_loss(-t, t).item() > 0
        (True, True)
    """
    if not (torch.is_tensor(student) and torch.is_tensor(teacher)):
        raise TypeError(
            "in-place distillation compares output tensors, got "
            f"{type(student).__name__} and {type(teacher).__name__}; pass "
            "inplace_distill=(student_output, teacher_output) -> loss"
        )
    if student.dim() not in (2, 3, 4) or student.shape != teacher.shape:
        raise ValueError(
            "in-place distillation's default loss takes [B, C], [B, T, V] or [B, C, H, W] scores "
            f"of one shape, got {tuple(student.shape)} and {tuple(teacher.shape)}; pass "
            "inplace_distill=(student_output, teacher_output) -> loss"
        )
    if student.dim() == 3:  # [B, T, V] -> [B * T, V]
        student, teacher = student.flatten(0, 1), teacher.flatten(0, 1)
    elif student.dim() == 4:  # [B, C, H, W] -> [B * H * W, C]
        student, teacher = (t.movedim(1, -1).flatten(0, 2) for t in (student, teacher))
    s = F.log_softmax(student.float(), dim=-1)
    t = F.log_softmax(teacher.float(), dim=-1)
    return F.kl_div(s, t, log_target=True, reduction="batchmean")
