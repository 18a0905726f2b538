"""The construction state of a space: one record, in one context variable, changed in one way.

How a space is built, in one place
----------------------------------
A model space is ordinary ``nn.Module`` code whose constructor creates choices. What a choice
becomes depends on the :class:`BuildState` active while the constructor runs:

1. **Search form** (``Net()``, ``state.arch is None``): every choice keeps all its candidates;
   ``LayerChoice`` is a module holding them, a value choice (``choice('width', [16, 32])``)
   returns its default and is recorded in ``state.value_choices``, so that
   :func:`~nasx.space.search_space` finds it although it left no module behind.
2. **Fixed form** (``with model_context(arch): Net()``, ``state.arch`` is the arch): every choice
   resolves to the arch's value (:func:`~nasx.space.context.resolve`); a ``MutableModule``
   (``LayerChoice``, ``InputChoice``, ``Repeat``, ...) returns the plain module it selects, via
   its ``create_fixed_module``. The result holds no search machinery.
3. ``space.freeze(arch)`` is the explicit entry point for (2): it validates ``arch`` against the
   space's search space, then rebuilds the space's class with the constructor arguments recorded
   in (1) under ``model_context(arch)``. The experiment's ``ModelBuilder`` does the same in the
   worker processes.

Labels come from the same record: ``state.path`` holds the enclosing named scopes
(:func:`~nasx.space.label_scope`, a ``ModelSpace``'s ``label_prefix``), ``state.counters`` numbers
unlabelled choices per scope, and ``state.seen_labels`` holds every label the top-level space has
used so far, so two different decisions under one label fail at once. A top-level construction
starts from empty counters and an empty record of labels, so building the search form and every
fixed form of a space gives the same labels.

Every change goes through :func:`building`, which sets a modified copy of the state for a
``with`` block and restores the previous one after it; the state lives in a
:mod:`contextvars` variable, so it is per thread and per asyncio task.

    >>> current().arch is None
    True
    >>> with building(arch={'k': 3}):
    ...     current().arch
    {'k': 3}
    >>> current().arch is None
    True
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections import Counter
from collections.abc import Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .choice import Choice

__all__ = ["BuildState", "building", "current", "space_construction"]


@dataclass(frozen=True)
class BuildState:
    """What the code constructing a space reads (one immutable record; see the module docstring).

    Attributes:
        arch: the merged arch of the enclosing ``model_context`` blocks; None for the search form.
        path: the named label scopes enclosing the code running now.
        counters: per-kind numbers of the auto labels of the innermost scope (mutated in place:
            it belongs to that scope).
        seen_labels: label -> choice for the top-level space being built; None outside any space.
        value_choices: value choices resolved in search mode by the innermost space being built
            (appended to in place); None outside any space.
        strict_labels: whether a top-level space built under ``model_context`` refuses arch labels
            it does not have (``model_context(arch, strict=False)`` turns it off).
        used_labels: labels resolved so far by the top-level space being built (added to in
            place); None outside any space.
    """

    arch: Mapping[str, Any] | None = None
    path: tuple[str, ...] = ()
    counters: Counter[str] = field(default_factory=Counter)
    seen_labels: dict[str, Choice] | None = None
    value_choices: list[Choice] | None = None
    strict_labels: bool = True
    used_labels: set[str] | None = None


# Outside any space: choices created there share this root, and their auto labels keep counting up.
_ROOT = BuildState()
_state: ContextVar[BuildState] = ContextVar("nasx_build_state", default=_ROOT)


def current() -> BuildState:
    """The construction state of the code running now."""
    return _state.get()


@contextlib.contextmanager
def building(**changes: Any) -> Iterator[BuildState]:
    """Inside the block, the state is the current one with ``changes`` (BuildState's fields)."""
    token = _state.set(dataclasses.replace(_state.get(), **changes))
    try:
        yield _state.get()
    finally:
        _state.reset(token)


@contextlib.contextmanager
def space_construction(prefix: str | None) -> Iterator[BuildState]:
    """The state for one ModelSpace constructor: a fresh label root and record of labels when it
    is the top-level space, its ``prefix`` scope, and an empty list of value choices.

    >>> with space_construction('net') as outer, space_construction(None) as inner:
    ...     outer.path, inner.path, inner.seen_labels is outer.seen_labels
    (('net',), ('net',), True)
    """
    state = _state.get()
    top_level = state.seen_labels is None
    path = () if top_level else state.path
    counters = Counter() if top_level else state.counters
    if prefix is not None:
        from .labels import check_segment

        path, counters = (*path, check_segment(prefix)), Counter()
    seen = {} if top_level else state.seen_labels
    used = set() if top_level else state.used_labels
    with building(
        path=path, counters=counters, seen_labels=seen, value_choices=[], used_labels=used
    ) as new:
        yield new
