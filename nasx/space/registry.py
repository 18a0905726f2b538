"""Which labels one top-level space construction has used, so a label clash fails at once."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar
from typing import TYPE_CHECKING

from .errors import LabelConflictError

if TYPE_CHECKING:
    from .choice import Choice

_seen_labels: ContextVar[dict[str, Choice] | None] = ContextVar("nasx_seen_labels", default=None)


def register(choice: Choice) -> None:
    """Note a newly created choice; two different decisions under one label are an error."""
    seen = _seen_labels.get()
    if seen is None:
        return
    other = seen.setdefault(choice.label, choice)
    if other is not choice and not other.same_decision(choice):
        raise LabelConflictError(
            f"label {choice.label!r} is used by two different choices: {other!r} and {choice!r}. "
            "Reuse a label only for the same decision (same kind and candidates); otherwise give "
            "each choice its own label"
        )


@contextlib.contextmanager
def label_registry() -> Iterator[None]:
    """A fresh record of used labels, for the duration of one top-level space construction."""
    token = _seen_labels.set({})
    try:
        yield
    finally:
        _seen_labels.reset(token)


def in_space_construction() -> bool:
    """Whether a ModelSpace constructor is running (in any enclosing frame)."""
    return _seen_labels.get() is not None
