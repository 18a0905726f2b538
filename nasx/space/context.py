"""``model_context(arch)``: build a space as the plain model that ``arch`` picks.

Choices read the active arch when they are constructed, so the same constructor code serves both
the search form (no context: choices keep every candidate) and the fixed form (every choice
replaced by its chosen value or module). The arch is a field of the construction state
(:mod:`nasx.space.state`, which explains the whole build and freeze path), per thread and per
asyncio task.

    >>> import torch.nn as nn
    >>> from nasx.space import LayerChoice, model_context
    >>> with model_context({'act': 1}):
    ...     LayerChoice([nn.ReLU(), nn.GELU()], label='act')
    GELU(approximate='none')
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from typing import Any

from .choice import Choice
from .errors import InvalidArchError
from .state import building, current


@contextlib.contextmanager
def model_context(arch: Mapping[str, Any], *, strict: bool = True) -> Iterator[Mapping[str, Any]]:
    """Inside this block, constructing a space yields the plain model that ``arch`` selects.

    ``arch`` maps labels to values (NNI's format). Nested contexts merge, the inner one winning.
    A missing label raises :class:`~nasx.space.InvalidArchError` at the choice that needs it; a
    value that is not allowed raises it naming the label and the allowed values. A label that the
    top-level space built in the block does not have (a typo) raises it too, naming the label and
    the space's labels; ``strict=False`` allows such labels, for building one part of a space
    under the arch of the whole:

        >>> import torch.nn as nn
        >>> from nasx.space import ModelSpace, choice
        >>> class Net(ModelSpace):
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.fc = nn.Linear(2, choice('width', [4, 8]))
        >>> with model_context({'width': 8, 'widht': 4}):
        ...     Net()
        Traceback (most recent call last):
        ...
        nasx.space.errors.InvalidArchError: unknown label(s) ['widht'] in the arch ...: Net has the labels ['width'] ...
        >>> with model_context({'width': 8, 'other': 4}, strict=False):
        ...     Net().fc.out_features
        8
    """
    if not isinstance(arch, Mapping):
        raise TypeError(
            f"model_context expects a dict mapping labels to values, got {type(arch).__name__}"
        )
    bad = [k for k in arch if not isinstance(k, str)]
    if bad:
        raise InvalidArchError(f"arch labels must be strings, got {bad!r}")
    state = current()
    outer = state.arch
    merged = {**outer, **arch} if outer else dict(arch)
    with building(arch=merged, strict_labels=strict and state.strict_labels):
        yield arch


def current_arch() -> Mapping[str, Any] | None:
    """The arch of the innermost :func:`model_context`, or None when building the search form."""
    return current().arch


def resolve(choice: Choice) -> Any:
    """The value of ``choice``: the arch's under :func:`model_context`, else its default.

    In search mode the choice is recorded in the space under construction, so a value that left
    no module behind (a width, a kernel size) still appears in :func:`~nasx.space.search_space`.
    """
    state = current()
    arch = state.arch
    if arch is None:
        # Recorded in the space being built: a value that left no module behind (a width, a
        # kernel size) must still appear in its search space.
        recorded = state.value_choices
        if recorded is not None and all(c.label != choice.label for c in recorded):
            recorded.append(choice)
        return choice.default
    if state.used_labels is not None:
        state.used_labels.add(choice.label)
    if choice.label not in arch:
        known = ", ".join(repr(k) for k in list(arch)[:20])
        raise InvalidArchError(
            f"the arch has no value for label {choice.label!r} (allowed: {choice.grid()[:10]!r}); "
            f"labels given: {known}"
        )
    return choice.validate(arch[choice.label])


def ensure_frozen(value: Any) -> Any:
    """Turn a choice into a plain value (see :func:`resolve`); anything else passes through.

    Example:
        >>> from nasx.space import Categorical, ensure_frozen, model_context
        >>> ensure_frozen(3)
        3
        >>> with model_context({'k': 5}):
        ...     ensure_frozen(Categorical([3, 5], label='k'))
        5
    """
    if isinstance(value, Choice):
        return resolve(value)
    if isinstance(value, (tuple, list)) and any(isinstance(v, Choice) for v in value):
        return type(value)(ensure_frozen(v) for v in value)
    return value
