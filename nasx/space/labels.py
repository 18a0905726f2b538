"""Labels: how choices are named, and the scopes that compose names with ``/``.

A label names one decision. Explicit labels are used as given, prefixed by the enclosing named
scopes; choices without a label get ``<kind>_<n>``, numbered per scope. Every top-level
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


def make_label(label: str | None, kind: str) -> str:
    """Full label for a new choice: ``label`` (or an auto-numbered ``<kind>_<n>``) under the scope."""
    if isinstance(label, ResolvedLabel):
        return str(label)
    state = current()
    if label is None:
        state.counters[kind] += 1
        label = f"{kind}_{state.counters[kind]}"
    return "/".join((*state.path, check_segment(label)))


@contextlib.contextmanager
def label_scope(name: str | None) -> Iterator[None]:
    """Prefix every label created inside with ``name/``; auto labels are numbered afresh inside.

    ``label_scope(None)`` is a no-op, so callers can pass an optional prefix straight through.
    """
    if name is None:
        yield
        return
    with building(path=(*current().path, check_segment(name)), counters=Counter()):
        yield


def current_path() -> tuple[str, ...]:
    """The named scopes enclosing the code running now (``()`` at the top)."""
    return current().path
