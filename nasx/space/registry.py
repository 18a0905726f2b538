"""Which labels one top-level space construction has used, so a label clash fails at once.

The record itself is ``BuildState.seen_labels`` (:mod:`nasx.space.state`), set afresh by each
top-level ``ModelSpace`` construction.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .errors import LabelConflictError
from .state import current

if TYPE_CHECKING:
    from .choice import Choice


def register(choice: Choice) -> None:
    """Note a newly created choice; two different decisions under one label are an error."""
    seen = current().seen_labels
    if seen is None:
        return
    other = seen.setdefault(choice.label, choice)
    if other is not choice and not other.same_decision(choice):
        raise LabelConflictError(
            f"label {choice.label!r} is used by two different choices: {other!r} and {choice!r}. "
            "Reuse a label only for the same decision (same kind and candidates); otherwise give "
            "each choice its own label"
        )


def in_space_construction() -> bool:
    """Whether a ModelSpace constructor is running (in any enclosing frame)."""
    return current().seen_labels is not None
