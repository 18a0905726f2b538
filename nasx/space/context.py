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
from types import TracebackType
from typing import Any

from .choice import Choice
from .chosen import ChosenValue, plain
from .errors import InvalidArchError, SampleMissingError
from .expression import Mutable
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


def current_model() -> dict[str, Any] | None:
    """NNI's ``current_model()``: a copy of the arch of the innermost :func:`model_context`, or
    None outside one (nasx's :func:`current_arch`, as a plain dict).

    >>> with model_context({'k': 3}):
    ...     current_model()
    {'k': 3}
    >>> current_model() is None
    True
    """
    arch = current().arch
    return None if arch is None else dict(arch)


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
        raise SampleMissingError(
            f"the arch has no value for label {choice.label!r} (allowed: {choice.grid()[:10]!r}); "
            f"labels given: {known}"
        )
    return choice.validate(arch[choice.label])


def ensure_frozen(
    value: Any,
    *,
    sample: Mapping[str, Any] | None = None,
    strict: bool = True,
    retries: int | None = None,
) -> Any:
    """Turn a choice or an expression into a plain value; anything else passes through.

    Under :func:`model_context` (or :class:`frozen_context`) the value is the arch's; inside a
    space's constructor it is the default, and the choices are recorded in the space.
    ``sample=`` freezes with that arch instead (NNI's argument). Outside any
    space, context or sample there is no arch to take the value from: as in NNI, that raises
    ``RuntimeError`` unless ``strict=False``, which takes the default. ``retries`` is accepted
    for NNI's signature (nasx takes the default, which the space's constraints do not filter).
    Lists and tuples are frozen item by item.

    Example:
        >>> from nasx.space import Categorical, ensure_frozen, model_context
        >>> ensure_frozen(3)
        3
        >>> k = Categorical([3, 5], label='k')
        >>> with model_context({'k': 5}):
        ...     ensure_frozen(k), ensure_frozen(k * 2 + 1)
        (5, 11)
        >>> ensure_frozen(k, sample={'k': 3}), ensure_frozen(k, strict=False)
        (3, 3)
        >>> ensure_frozen(k)
        Traceback (most recent call last):
        ...
        RuntimeError: ensure_frozen(Categorical([3, 5], label='k')) outside a space's constructor ...
    """
    if isinstance(value, Mutable):
        if sample is not None:
            return value.freeze(sample)
        state = current()
        if strict and state.arch is None and state.seen_labels is None:
            raise RuntimeError(
                f"ensure_frozen({value!r}) outside a space's constructor and outside "
                "model_context: there is no arch to take the value from. Pass sample=arch, wrap "
                "the call in model_context(arch) / frozen_context(arch), or pass strict=False "
                "for the default value"
            )
        if isinstance(value, Choice):
            return resolve(value)
        leaves = value.simplify()
        return value.freeze({label: resolve(leaf) for label, leaf in leaves.items()})
    if retries is not None and retries < 0:
        raise ValueError(f"ensure_frozen: retries must be >= 0, got {retries}")
    if isinstance(value, ChosenValue):  # nasx.choice's value in a search form: its choice's
        return plain(value) if sample is None else value.choice.freeze(sample)
    if isinstance(value, (tuple, list)) and any(isinstance(v, Mutable) for v in value):
        return type(value)(ensure_frozen(v, sample=sample, strict=strict) for v in value)
    return value


class frozen_context:
    """NNI's ``frozen_context(sample)``: inside, :func:`ensure_frozen` takes values from ``sample``.

    The same record as :func:`model_context` with ``strict=False`` (labels of other spaces are
    allowed). ``frozen_context.current()`` is the merged sample of the enclosing blocks, or None.

    Example:
        >>> from nasx.space import Categorical
        >>> with frozen_context({'lr': 0.1}):
        ...     frozen_context.current()
        {'lr': 0.1}
        >>> frozen_context.current() is None
        True
    """

    def __init__(self, sample: Mapping[str, Any] | None = None):
        self.sample = dict(sample or {})
        self._blocks: list[contextlib.AbstractContextManager[Any]] = []

    def __enter__(self) -> frozen_context:
        block = model_context(self.sample, strict=False)
        block.__enter__()
        self._blocks.append(block)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._blocks.pop().__exit__(exc_type, exc, tb)

    @staticmethod
    def current() -> dict[str, Any] | None:
        """The merged sample of the enclosing blocks (and ``model_context``), or None."""
        arch = current().arch
        return None if arch is None else dict(arch)

    @staticmethod
    def update(sample: Mapping[str, Any]) -> None:
        """Add ``sample``'s labels to the innermost block (NNI's ``frozen_context.update``);
        they are gone when that block ends.

        >>> with frozen_context({'a': 1}):
        ...     frozen_context.update({'b': 2})
        ...     frozen_context.current()
        {'a': 1, 'b': 2}
        >>> frozen_context.update({'b': 2})
        Traceback (most recent call last):
        ...
        RuntimeError: frozen_context.update() outside any frozen_context / model_context block: ...
        """
        arch = current().arch
        if not isinstance(arch, dict):
            raise RuntimeError(
                "frozen_context.update() outside any frozen_context / model_context block: there "
                "is no sample to update. Open one first: `with frozen_context(sample): ...`"
            )
        bad = [k for k in sample if not isinstance(k, str)]
        if bad:
            raise InvalidArchError(f"sample labels must be strings, got {bad!r}")
        arch.update(sample)  # the block's own merged copy (see model_context)


class frozen_factory:
    """NNI's ``frozen_factory(function, sample)``: calling it runs ``function`` under the sample.

    Example:
        >>> import torch.nn as nn
        >>> from nasx.space import ModelSpace, choice
        >>> class Net(ModelSpace):
        ...     def __init__(self, classes):
        ...         super().__init__()
        ...         self.fc = nn.Linear(choice('width', [4, 8]), classes)
        >>> frozen_factory(Net, {'width': 8})(classes=3).fc
        Linear(in_features=8, out_features=3, bias=True)
    """

    def __init__(self, function: Any, sample: Mapping[str, Any] | frozen_context):
        self.function = function
        self.sample = sample.sample if isinstance(sample, frozen_context) else dict(sample)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        with model_context(self.sample):
            return self.function(*args, **kwargs)

    def __repr__(self) -> str:
        return f"frozen_factory(function={self.function!r}, sample={self.sample!r})"
