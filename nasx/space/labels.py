"""Labels: how choices are named, and the scopes that compose names with ``/``.

A label names one decision. Explicit labels are used as given, prefixed by the enclosing named
scopes; choices without a label get NNI's automatic labels, ``1``, ``2``, ... numbered per scope
(``model/1`` inside a space whose ``label_prefix`` is ``'model'``), whatever their kind. Every top-level
:class:`~nasx.space.ModelSpace` construction starts numbering afresh, so building the same space
twice (once to search, once under ``model_context``) gives the same labels.

    >>> from nasx.space import Categorical, label_scope
    >>> with label_scope('stem'):
    ...     Categorical([1, 2], label='width').label
    'stem/width'
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Iterator

from .state import building, current


class ResolvedLabel(str):
    """A label that already carries its full scope path; ``make_label`` returns it unchanged.

    Used by modules that derive inner labels from their own (``'normal/op_2_0'`` from ``'normal'``).
    """


def check_segment(label: object) -> str:
    """``label`` if it is a valid label segment, else ValueError saying what a label is."""
    if not isinstance(label, str) or not label or label.startswith("/") or label.endswith("/"):
        raise ValueError(
            f"invalid label {label!r}: a label is a non-empty string that does not start or end with '/'"
        )
    return label


def make_label(label: str | None, kind: str = "") -> str:
    """Full label for a new choice: ``label`` (or the scope's next number) under the scope.

    ``kind`` is kept for callers' readability; NNI numbers every kind with one counter.
    """
    if isinstance(label, ResolvedLabel):
        return str(label)
    state = current()
    if label is None:
        state.counters[""] += 1
        label = str(state.counters[""])
        if not state.path and state.seen_labels is None:
            # Outside any space and scope, NNI numbers auto labels under 'global/'.
            return f"global/{label}"
    return "/".join((*state.path, check_segment(label)))


def auto_label(name: str | None = None) -> str:
    """NNI's ``auto_label``: ``name`` under the current scope, or the scope's next number
    (``global/<n>`` outside any scope and space).

    >>> with label_scope('model'):
    ...     auto_label(), auto_label(), auto_label('foo'), auto_label()
    ('model/1', 'model/2', 'model/foo', 'model/3')
    """
    return make_label(name)


_NUMBERED = ""  # label_scope() without an argument: NNI's numbered anonymous scope


@contextlib.contextmanager
def label_scope(name: str | None = _NUMBERED) -> Iterator[None]:
    """Prefix every label created inside with ``name/``; auto labels are numbered afresh inside.

    ``label_scope()`` with no argument takes the enclosing scope's next number as its name, as in
    NNI (``model/3/1``); ``label_scope(None)`` is a no-op, so callers can pass an optional prefix
    straight through.

    >>> with label_scope('model'):
    ...     first = auto_label()
    ...     with label_scope():
    ...         inner = auto_label()
    >>> first, inner
    ('model/1', 'model/2/1')
    """
    if name is None:
        yield
        return
    if name == _NUMBERED:
        state = current()
        state.counters[""] += 1
        name = str(state.counters[""])
        if not state.path and state.seen_labels is None:
            with building(path=("global", name), counters=Counter()):
                yield
            return
    with building(path=(*current().path, check_segment(name)), counters=Counter()):
        yield


def current_path() -> tuple[str, ...]:
    """The named scopes enclosing the code running now (``()`` at the top)."""
    return current().path
