"""Choices: one decision each, with a label, candidate values, a default, sampling and a grid.

A *choice* is plain data. Strategies see only ``dict[label, Choice]`` and never touch modules:

    >>> from nasx.space import Categorical
    >>> width = Categorical([16, 32, 64], label='width')
    >>> width.default, width.grid()
    (16, [16, 32, 64])
    >>> import random
    >>> width.sample(random.Random(0)) in (16, 32, 64)
    True
"""

from __future__ import annotations

import itertools
import json
import random
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, TypeVar, cast

import torch
import torch.nn as nn

from .chosen import plain, remember
from .errors import InvalidArchError, SampleMissingError
from .expression import Mutable, Sample
from .labels import make_label
from .registry import register

_V = TypeVar("_V")


def _same_value(a: Any, b: Any) -> bool:
    # ``True == 1`` in Python; a width of 1 and a flag of True are different values here. A value
    # from nasx.choice (a ChosenInt) is the plain value it stands for.
    a, b = plain(a), plain(b)
    return type(a) is type(b) and a == b


class Choice(Mutable):
    """Base class of every choice. Subclasses define the value set and how to check a value.

    Public attributes: ``label`` (str) and ``default``. Values are JSON-serialisable so that an
    arch (``dict[label, value]``) round-trips through JSON unchanged. A choice is a leaf
    :class:`~nasx.space.Mutable`: arithmetic on it builds a
    :class:`~nasx.space.MutableExpression`.
    """

    label: str
    default: Any
    finite: bool = True
    """Whether :meth:`grid` lists every value (False for a continuous :class:`Numerical`)."""

    def grid(self, memo: Sample | None = None, granularity: int | None = None) -> list[Any]:
        """Every allowed value, in a fixed order (the order grid search walks them).

        ``memo`` (NNI's argument): a sample that already decides this label gives that value
        alone. ``granularity`` only matters to continuous choices.
        """
        if memo is not None and self.label in memo:
            return [self.freeze(memo)]
        return self._grid(granularity)

    def _grid(self, granularity: int | None) -> list[Any]:
        raise NotImplementedError

    def leaf_choices(self) -> Iterator[Choice]:
        yield self

    def freeze(self, sample: Mapping[str, Any]) -> Any:
        """The value ``sample`` (an arch) gives this choice, validated.

        >>> Categorical([1, 2], label='k').freeze({'k': 2})
        2
        """
        if self.label not in sample:
            raise SampleMissingError(
                f"the sample has no value for label {self.label!r} (allowed: {self._allowed()}); "
                f"labels given: {list(sample)[:20]!r}"
            )
        return self.validate(sample[self.label])

    def _allowed(self) -> str:
        return repr(self.grid()[:10])

    def __bool__(self) -> bool:
        # A choice is an object, not a container: ``if choice:`` must not ask for its length.
        return True

    def equals(self, other: Any) -> bool:
        """Same kind, label, values and default (``==`` builds an expression instead)."""
        return (
            type(self) is type(other)
            and self.label == other.label
            and self._signature() == other._signature()
            and _same_value(self.default, other.default)
        )

    def sample(self, rng: random.Random) -> Any:
        """One value drawn uniformly at random with ``rng`` (a :class:`random.Random`)."""
        raise NotImplementedError

    def validate(self, value: Any) -> Any:
        """Return ``value`` in canonical form, or raise :class:`InvalidArchError` naming the label."""
        raise NotImplementedError

    def same_decision(self, other: Choice) -> bool:
        """Whether ``other`` may share this label: same kind and same allowed values."""
        return type(self) is type(other) and self._signature() == other._signature()

    def _signature(self) -> Any:
        raise NotImplementedError

    def __len__(self) -> int:
        return len(self.grid())

    def _invalid(self, value: Any, allowed: str) -> InvalidArchError:
        return InvalidArchError(
            f"invalid value {value!r} for label {self.label!r}: allowed {allowed}"
        )


class Categorical(Choice):
    """Choose one value out of a list.

    Args:
        values: the candidate values; distinct and JSON-serialisable (ints, floats, strings,
            bools, None, or lists/dicts of those).
        label: the decision's name. Without one a label is generated from the enclosing scope,
            which is stable only inside a :class:`~nasx.space.ModelSpace` constructor.
        default: the value used when nothing is chosen (defaults to the first value).
        weights: NNI's prior: the probability of each value when sampling (uniform when omitted).

    Example:
        >>> c = Categorical(['relu', 'gelu'], label='act')
        >>> c.validate('gelu')
        'gelu'
        >>> c.validate('tanh')
        Traceback (most recent call last):
        ...
        nasx.space.errors.InvalidArchError: invalid value 'tanh' for label 'act': allowed one of ['relu', 'gelu']
    """

    def __init__(
        self,
        values: Sequence[Any],
        *,
        label: str | None = None,
        default: Any = None,
        weights: Sequence[float] | None = None,
        _kind: str = "choice",
    ):
        values = [plain(v) for v in values]
        if not values:
            raise ValueError(f"Categorical {label!r} needs at least one value, got an empty list")
        if weights is not None:
            weights = [float(w) for w in weights]
            if len(weights) != len(values) or min(weights) < 0 or abs(sum(weights) - 1) > 1e-6:
                raise ValueError(
                    f"Categorical {label!r}: weights must be {len(values)} non-negative numbers "
                    f"summing to 1 (one per value), got {weights!r}"
                )
        self.weights = weights
        for i, v in enumerate(values):
            try:
                json.dumps(v)
            except TypeError:
                raise TypeError(
                    f"Categorical {label!r}: value {v!r} at index {i} is not JSON-serialisable; "
                    "use ints, floats, strings, bools or lists of them (for modules use LayerChoice)"
                ) from None
            if any(_same_value(v, w) for w in values[:i]):
                raise ValueError(f"Categorical {label!r}: value {v!r} appears twice in {values!r}")
        self.values = values
        self.kind = _kind  # "choice", "layerchoice", "repeat": how NNI's search-space file names it
        self.label = make_label(label, _kind)
        if default is None:
            default = values[0]
        self.default = self.validate(default)
        register(self)

    def _grid(self, granularity: int | None) -> list[Any]:
        return list(self.values)

    def sample(self, rng: random.Random) -> Any:
        if self.weights is not None:  # NNI's prior over the values
            return rng.choices(self.values, weights=self.weights)[0]
        return self.values[rng.randrange(len(self.values))]

    def validate(self, value: Any) -> Any:
        for v in self.values:
            if _same_value(v, value) or (
                isinstance(v, float)
                and isinstance(value, int)
                and not isinstance(value, bool)
                and v == value
            ):
                return v
        # JSON turns tuples into lists; accept a list where the candidate is a tuple and vice versa.
        if isinstance(value, (list, tuple)):
            for v in self.values:
                if isinstance(v, (list, tuple)) and list(v) == list(value):
                    return v
        raise self._invalid(value, f"one of {self.values!r}")

    def _signature(self) -> Any:
        return tuple(json.dumps(v, sort_keys=True) for v in self.values)

    def __repr__(self) -> str:
        return f"Categorical({self.values!r}, label={self.label!r})"


class CategoricalMultiple(Choice):
    """Choose a set of ``n_chosen`` distinct values (any number when ``n_chosen`` is None).

    The value is a sorted list. This is what an :class:`~nasx.space.InputChoice` exposes, so
    ``[0]`` means "input 0"; a bare ``0`` is accepted as ``[0]``.

    Example:
        >>> c = CategoricalMultiple([0, 1, 2], n_chosen=2, label='skip')
        >>> c.grid()
        [[0, 1], [0, 2], [1, 2]]
        >>> c.validate([2, 0])
        [0, 2]
    """

    def __init__(
        self,
        values: Sequence[Any],
        *,
        n_chosen: int | None = 1,
        label: str | None = None,
        default: Any = None,
        allow_empty: bool = True,
        _kind: str = "choice",
    ):
        values = list(values)
        if n_chosen is not None and not 1 <= n_chosen <= len(values):
            raise ValueError(
                f"CategoricalMultiple {label!r}: n_chosen must be between 1 and {len(values)} "
                f"(the number of values), got {n_chosen}"
            )
        self.values = values
        self.kind = _kind
        self.n_chosen = n_chosen
        self.min_chosen = n_chosen if n_chosen is not None else (0 if allow_empty else 1)
        self.label = make_label(label, _kind)
        if default is None:
            default = values[: n_chosen or len(values)]
        self.default = self.validate(default)
        register(self)

    def _grid(self, granularity: int | None) -> list[Any]:
        sizes = (
            [self.n_chosen]
            if self.n_chosen is not None
            else range(self.min_chosen, len(self.values) + 1)
        )
        return [list(c) for k in sizes for c in itertools.combinations(self.values, k)]

    def sample(self, rng: random.Random) -> list[Any]:
        if self.n_chosen is None:
            # Uniform over subsets, not over sizes: draw each value with probability 1/2.
            picked = [i for i in range(len(self.values)) if rng.random() < 0.5]
            while len(picked) < self.min_chosen:
                picked = [i for i in range(len(self.values)) if rng.random() < 0.5]
            return [self.values[i] for i in picked]
        k = self.n_chosen
        picked = rng.sample(range(len(self.values)), k)
        return [self.values[i] for i in sorted(picked)]

    def validate(self, value: Any) -> list[Any]:
        items = list(value) if isinstance(value, (list, tuple)) else [value]
        how_many = f"a list of {self.n_chosen}" if self.n_chosen else "a list of"
        allowed = f"{how_many} distinct values from {self.values!r}"
        positions = []
        for item in items:
            pos = [i for i, v in enumerate(self.values) if _same_value(v, item)]
            if not pos:
                raise self._invalid(value, allowed)
            positions.append(pos[0])
        if len(set(positions)) != len(positions):
            raise self._invalid(value, allowed + " (a value was repeated)")
        if self.n_chosen is not None and len(positions) != self.n_chosen:
            raise InvalidArchError(
                f"invalid value {value!r} for label {self.label!r}: expected {self.n_chosen} "
                f"chosen value(s), got {len(positions)}; allowed {allowed}"
            )
        if len(positions) < self.min_chosen:
            raise self._invalid(value, allowed + f" (at least {self.min_chosen})")
        return [self.values[i] for i in sorted(positions)]

    def freeze(self, sample: Mapping[str, Any]) -> Any:
        """The chosen values; also reads NNI's one-flag-per-value format (``'<label>/<i>'``).

        >>> c = CategoricalMultiple([2, 3, 5, 7], n_chosen=2, label='x2')
        >>> c.freeze({'x2': [3, 5]}), c.freeze({'x2/0': True, 'x2/1': False, 'x2/2': True, 'x2/3': False})
        ([3, 5], [2, 5])
        """
        flags = [f"{self.label}/{i}" for i in range(len(self.values))]
        if self.label not in sample and all(f in sample for f in flags):
            return self.validate([v for v, f in zip(self.values, flags) if sample[f]])
        return super().freeze(sample)

    def _signature(self) -> Any:
        return (tuple(json.dumps(v) for v in self.values), self.n_chosen, self.min_chosen)

    def __repr__(self) -> str:
        return (
            f"CategoricalMultiple({self.values!r}, n_chosen={self.n_chosen}, label={self.label!r})"
        )


def choice(label: str, values: Sequence[_V]) -> _V:
    """Declare a value choice inside a space's constructor and get its value back.

    The NNI spelling (``nni.choice(label, values)``) with Optuna's convenience: the return value is
    an ordinary Python value, so it goes straight into ``nn.Conv2d(3, width, ...)``. Under
    :func:`~nasx.space.model_context` it is the arch's value for ``label``; otherwise (the search
    form) it is the default (the first value), and the choice is recorded in the space being
    built so that :func:`~nasx.space.search_space` lists it.

    In the search form an int, float or str value comes back as a ``ChosenValue``
    (``ChosenInt``, ...): the value itself, which also remembers its choice, so a
    ``Mutable*`` layer given it searches it as NNI's do (``MutableConv2d(c, choice('w', [16,
    32]), 3)`` shares one weight over ``w`` in one-shot search, exactly as
    ``Categorical([16, 32], label='w')`` would). Arithmetic on it remembers NNI's expression
    (``w * 2``); a conversion or comparison (``int(w / 2)``, ``w > 16``) is plain. Outside any space and
    any ``model_context`` (a script's top level) there is nothing to record it in, so it returns
    the ``Categorical``, as NNI does. A list of modules gives a :class:`~nasx.space.LayerChoice`,
    as in NNI.

    Example:
        >>> import torch.nn as nn
        >>> from nasx.space import ModelSpace, MutableLinear, model_context, search_space
        >>> class Net(ModelSpace):
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.fc = nn.Linear(8, choice('hidden', [16, 32]))
        ...         self.out = MutableLinear(choice('hidden', [16, 32]), 2)
        >>> net = Net()
        >>> search_space(net)['hidden'], net.fc.out_features
        (Categorical([16, 32], label='hidden'), 16)
        >>> net.out.args['in_features']  # the layer sees the choice, as NNI's does
        Categorical([16, 32], label='hidden')
        >>> with model_context({'hidden': 32}):
        ...     Net().fc.out_features
        32
        >>> choice('x', [1, 2, 3])  # outside a space: NNI's object
        Categorical([1, 2, 3], label='x')
    """
    from .context import resolve
    from .state import current

    values = list(values)
    if values and all(isinstance(v, nn.Module) for v in values):
        from .layer_choice import LayerChoice

        return cast(_V, LayerChoice(cast(list[nn.Module], values), label=label))
    if any(isinstance(v, torch.Tensor) for v in values):
        raise TypeError(
            f"choice {label!r}: can't choose among tensors; use InputChoice in the constructor "
            "and pass the tensors to it in forward"
        )
    categorical = Categorical(values, label=label)
    if outside_any_space():
        # NNI's object, with NNI's repr, where no space records the decision (a script's top
        # level, an evaluator's arguments): ``nasx.choice('x', [1, 2])`` is ``Categorical``.
        return cast(_V, categorical)
    # The type of one of ``values``: what the arch holds for ``label`` (type checkers see ``int``
    # for ``choice('width', [16, 32])``). In the search form it remembers the choice, so that a
    # Mutable* layer given it searches it (chosen.py); a fixed model gets plain values.
    value = resolve(categorical)
    if current().arch is None:
        value = remember(value, categorical)
    return cast(_V, value)


def outside_any_space() -> bool:
    """Whether no space is being built and no arch is active: there, NNI's shortcuts
    (:func:`choice`, :func:`~nasx.space.uniform`, ...) return the choice object itself."""
    from .state import current

    state = current()
    return state.seen_labels is None and state.arch is None
