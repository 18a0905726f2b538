"""ValueSwitch: a module picked by the value of a value choice (NNI 2's module-valued ValueChoice).

Where a value changes the *structure* of a layer, not only a size (an expansion ratio of 1 drops
the expansion conv; an SE ratio of 0 drops the SE gate), the layer offers one module per value.
The decision is the value choice itself, so the same label can also size other layers: a
``ValueSwitch`` over ``Categorical([6, 3, 1], label='expand')`` and a width derived from the same
choice are one decision.

    >>> import torch.nn as nn
    >>> from nasx.space import Categorical, model_context, search_space
    >>> se = Categorical([0.0, 0.25], label='se')
    >>> switch = ValueSwitch(se, {0.0: nn.Identity(), 0.25: nn.Sigmoid()})
    >>> list(search_space(switch)), switch.candidate(0.25)
    (['se'], Sigmoid())
    >>> with model_context({'se': 0.25}):
    ...     ValueSwitch(Categorical([0.0, 0.25], label='se'), {0.0: nn.Identity(), 0.25: nn.Sigmoid()})
    Sigmoid()
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch.nn as nn

from .base import MutableModule
from .choice import Categorical, Choice
from .context import resolve


def child_name(value: Any) -> str:
    """The submodule name of the candidate for ``value`` (module names may not contain '.')."""
    return str(value).replace(".", "_")


def _check(choice: Categorical, candidates: Mapping[Any, nn.Module]) -> None:
    if not isinstance(choice, Categorical):
        raise TypeError(f"ValueSwitch needs a Categorical, got {type(choice).__name__}")
    missing = [v for v in choice.values if v not in candidates]
    extra = [v for v in candidates if v not in choice.values]
    if missing or extra:
        raise ValueError(
            f"ValueSwitch {choice.label!r} needs one module per value {choice.values!r}: "
            f"missing {missing!r}, unknown {extra!r}"
        )
    names = [child_name(v) for v in choice.values]
    if len(set(names)) != len(names):
        raise ValueError(f"ValueSwitch {choice.label!r}: values {choice.values!r} clash as names")
    bad = [v for v, m in candidates.items() if not isinstance(m, nn.Module)]
    if bad:
        raise TypeError(f"ValueSwitch {choice.label!r}: candidates for {bad!r} are not modules")


class ValueSwitch(MutableModule):
    """The candidate module for the value ``choice`` takes.

    Args:
        choice: a :class:`~nasx.space.Categorical` (its label is the decision's).
        candidates: ``{value: module}``, one per value of ``choice``.

    The search form keeps every candidate (children named ``str(value)``, dots as ``_``) and
    runs the default one; under :func:`~nasx.space.model_context` the constructor returns the
    chosen module.
    """

    def __init__(self, choice: Categorical, candidates: Mapping[Any, nn.Module]):
        super().__init__()
        _check(choice, candidates)
        self.choice = choice
        for value in choice.values:
            self.add_module(child_name(value), candidates[value])

    @classmethod
    def create_fixed_module(
        cls, choice: Categorical, candidates: Mapping[Any, nn.Module]
    ) -> nn.Module:
        _check(choice, candidates)
        return candidates[resolve(choice)]

    @property
    def label(self) -> str:
        return self.choice.label

    def candidate(self, value: Any) -> nn.Module:
        module = self._modules[child_name(value)]
        assert module is not None
        return module

    def choices(self) -> list[Choice]:
        return [self.choice]

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        return self.candidate(self.choice.default)(*args, **kwargs)

    def extra_repr(self) -> str:
        return f"label={self.label!r}"
