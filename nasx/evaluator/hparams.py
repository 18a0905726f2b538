"""Choices inside the evaluator: hyperparameters searched together with the architecture.

An evaluator argument may be a choice (:class:`~nasx.space.Categorical`,
:class:`~nasx.space.Numerical`, or an expression of them), as in NNI 3.0::

    Classification(learning_rate=Numerical(1e-4, 1e-1, log_distributed=True, label='lr'),
                   weight_decay=Categorical([0.0, 1e-4], label='wd'),
                   train_dataloaders=DataLoader(data, batch_size=Categorical([32, 64], label='bs')),
                   max_epochs=Categorical([1, 2], label='epochs'))

Such an evaluator is built with every choice at its default (so it is a working evaluator as is)
and remembers the arguments it was given. :func:`evaluator_choices` lists its choices (the
*hparam space*), and :func:`freeze_evaluator` builds it again with one value per label.
:class:`~nasx.experiment.NasExperiment` adds the evaluator's choices to the model space's, so one
strategy searches both, and records the values of each trial apart: ``trial.arch`` (model
labels, what :func:`~nasx.space.model_context` takes) and ``trial.hparams`` (evaluator labels).

Choices are found in the arguments of the evaluator, in lists, tuples and dicts among them, and in
the arguments of objects made by a traced call: nasx's :class:`~nasx.evaluator.DataLoader`
(``batch_size``), :class:`~nasx.evaluator.Trainer` (``max_epochs``, ``max_steps``) and anything
made by :func:`~nasx.trace` (``trace(MyDataset)(aug_strength=Numerical(...))``). Each object
holding a choice is made again, with the trial's value, for each trial. Classes that accept
choices this way: the nasx evaluators (:class:`~nasx.evaluator.FunctionalEvaluator`,
:class:`~nasx.evaluator.Lightning`, :class:`~nasx.evaluator.Classification`,
:class:`~nasx.evaluator.Regression`), :class:`~nasx.evaluator.Trainer`, and any class whose
``__init__`` is decorated with :func:`searchable` or which is called through ``trace(cls)``.

    >>> from nasx.space import Categorical, Numerical
    >>> from nasx.evaluator import FunctionalEvaluator
    >>> ev = FunctionalEvaluator(lambda model, lr, bs: lr * bs,
    ...                          lr=Numerical(1e-3, 1e-1, log_distributed=True, label='lr'),
    ...                          bs=Categorical([32, 64], label='bs'))
    >>> ev.kwargs['bs'], round(ev.kwargs['lr'], 6)  # built with the defaults
    (32, 0.01)
    >>> evaluator_choices(ev)
    {'lr': Numerical(0.001, 0.1, log_distributed=True, label='lr'), 'bs': Categorical([32, 64], label='bs')}
    >>> freeze_evaluator(ev, {'lr': 0.05, 'bs': 64}).evaluate(None)
    3.2
"""

from __future__ import annotations

import contextvars
import functools
import math
import sys
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

# nasx.space (and torch) load only when a choice exists: `import nasx.evaluator` stays light.
if TYPE_CHECKING:
    from nasx.space import Choice, Mutable, SearchSpace

__all__ = ["contains_choices", "evaluator_choices", "freeze_evaluator", "searchable"]

F = TypeVar("F", bound=Callable[..., Any])

# Lists longer than this (a dataset given as a list, say) are not searched for choices.
_MAX_ITEMS = 1000
_MAX_DEPTH = 8
# The objects whose decorated __init__ is running (ids), per thread and task.
_BUILDING: contextvars.ContextVar[frozenset[int]] = contextvars.ContextVar(
    "nasx_hparams_building", default=frozenset()
)
# Candidate values tried when an evaluator with choices is built (a finite choice: up to this many).
_MAX_CHECKED = 8


# ---------------------------------------------------------------------------------- finding


def _recorded_call(obj: Any) -> tuple[Any, list[Any], dict[str, Any]] | None:
    """``(symbol, args, kwargs)`` of an object made by a traced call, else None."""
    d = getattr(obj, "__dict__", None)
    if not isinstance(d, dict) or "trace_symbol" not in d or "trace_kwargs" not in d:
        return None
    return d["trace_symbol"], d.get("trace_args", []), d["trace_kwargs"]


def _mutable_class() -> type[Mutable] | None:
    """nasx's ``Mutable``, or None while nasx.space is not imported (then no choice exists)."""
    module = sys.modules.get("nasx.space.expression")
    return None if module is None else module.Mutable


def _leaves(value: Any, depth: int = 0) -> Iterator[Choice]:
    """Every leaf choice in ``value`` (see the module docstring for where choices are found)."""
    mutable = _mutable_class()
    if mutable is None:
        return
    if isinstance(value, mutable):
        yield from value.leaf_choices()
        return
    if depth > _MAX_DEPTH:
        return
    if isinstance(value, (list, tuple, set, frozenset)):
        if len(value) <= _MAX_ITEMS:
            for v in value:
                yield from _leaves(v, depth + 1)
        return
    if isinstance(value, dict):
        if len(value) <= _MAX_ITEMS:
            for v in value.values():
                yield from _leaves(v, depth + 1)
        return
    call = _recorded_call(value)
    if call is not None:
        yield from _leaves((call[1], call[2]), depth + 1)


def contains_choices(value: Any) -> bool:
    """Whether ``value`` holds a choice anywhere :func:`evaluator_choices` looks.

    >>> from nasx.space import Categorical
    >>> contains_choices({'lr': [0.1, Categorical([1, 2], label='x')]}), contains_choices([0.1])
    (True, False)
    """
    return next(_leaves(value), None) is not None


def _space_of(leaves: Iterator[Choice]) -> SearchSpace:
    from nasx.space import LabelConflictError, SearchSpace

    found = SearchSpace()
    for c in leaves:
        other = found.setdefault(c.label, c)
        if other is not c and not other.same_decision(c):
            raise LabelConflictError(
                f"evaluator label {c.label!r} is used by two different choices: {other!r} and "
                f"{c!r}; give each its own label (or the same values to share one decision)"
            )
    return found


def evaluator_choices(evaluator: Any) -> SearchSpace:
    """The choices in ``evaluator``'s arguments, by label (empty for an evaluator without any).

    An evaluator that holds a choice in an attribute without having recorded the arguments it
    was made with (a class nasx cannot build again) is refused, naming the attribute.
    """
    call = _recorded_call(evaluator)
    if call is not None:
        return _space_of(_leaves((call[1], call[2])))
    attrs = getattr(evaluator, "__dict__", None)
    mutable = _mutable_class()
    if isinstance(attrs, dict) and mutable is not None:
        for name, value in attrs.items():
            if isinstance(value, (mutable, list, tuple, dict)) and contains_choices(value):
                cls = type(evaluator).__name__
                raise TypeError(
                    f"{cls}.{name} holds a choice, but {cls} did not record the arguments it was "
                    f"made with, so nasx cannot build it again with each trial's value: create it "
                    f"with nasx.trace({cls})(...) or decorate {cls}.__init__ with "
                    "@nasx.evaluator.hparams.searchable"
                )
    return _space_of(iter(()))


# ---------------------------------------------------------------------------------- freezing


def _default_of(m: Mutable) -> Any:
    from nasx.space import Choice

    if isinstance(m, Choice):
        return m.default
    return m.freeze({label: c.default for label, c in m.simplify().items()})


def _freeze(value: Any, sample: Mapping[str, Any] | None, depth: int = 0) -> Any:
    """``value`` with every choice replaced by its value in ``sample`` (its default when None);
    objects made by a traced call with choices among their arguments are made again."""
    mutable = _mutable_class()
    if mutable is None:
        return value
    if isinstance(value, mutable):
        return _default_of(value) if sample is None else value.freeze(sample)
    if depth > _MAX_DEPTH or not contains_choices(value):
        return value
    if isinstance(value, (list, tuple, set, frozenset)):
        return type(value)(_freeze(v, sample, depth + 1) for v in value)
    if isinstance(value, dict):
        return type(value)((k, _freeze(v, sample, depth + 1)) for k, v in value.items())
    call = _recorded_call(value)
    if call is None:  # unreachable: contains_choices found a choice through the call
        return value
    if sample is None:
        return value  # made with the defaults already
    symbol, args, kwargs = call
    return symbol(
        *_freeze(list(args), sample, depth + 1), **_freeze(dict(kwargs), sample, depth + 1)
    )


def freeze_evaluator(evaluator: Any, hparams: Mapping[str, Any]) -> Any:
    """``evaluator`` made again with the value of each of its choices in ``hparams``.

    ``hparams`` maps each of :func:`evaluator_choices`'s labels to a value; a missing or unknown
    label or a value the choice does not allow raises :class:`~nasx.space.InvalidArchError`
    naming it. An evaluator without choices is returned as is (then ``hparams`` must be empty).

    >>> from nasx.space import Categorical
    >>> from nasx.evaluator import FunctionalEvaluator
    >>> ev = FunctionalEvaluator(lambda model, k: k, k=Categorical([1, 3], label='k'))
    >>> freeze_evaluator(ev, {'k': 3}).evaluate(None), ev.evaluate(None)
    (3, 1)
    >>> freeze_evaluator(ev, {'k': 2})
    Traceback (most recent call last):
    ...
    nasx.space.errors.InvalidArchError: invalid value 2 for label 'k': allowed one of [1, 3]
    """
    from nasx.space import InvalidArchError

    space = evaluator_choices(evaluator)
    if not space:
        if hparams:
            raise InvalidArchError(
                f"hyperparameters {dict(hparams)!r} were given, but the evaluator "
                f"{type(evaluator).__name__} has no choices among its arguments"
            )
        return evaluator
    values = space.validate(hparams)
    return _freeze(evaluator, values, depth=-1) if _recorded_call(evaluator) else evaluator


# ---------------------------------------------------------------------------------- recording


def record_call(obj: Any, symbol: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    """Remember that ``obj`` was made by ``symbol(*args, **kwargs)`` (NNI's trace attributes)."""
    try:
        obj.trace_symbol, obj.trace_args, obj.trace_kwargs = symbol, list(args), dict(kwargs)
    except (AttributeError, TypeError):  # no __dict__ (an int, a tuple): nothing to remember
        pass


def with_defaults(
    args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """``args`` and ``kwargs`` with every choice at its default (what the search form is built of)."""
    return tuple(_freeze(list(args), None)), dict(_freeze(dict(kwargs), None))


def check_choices(obj: Any) -> None:
    """Build ``obj`` again with candidate values of each choice (every value of a finite choice,
    up to 8; the bounds of a range), so a value the class refuses fails now, naming the label,
    not in the middle of a search."""
    space = evaluator_choices(obj)
    defaults = space.default()
    name = type(obj).__name__
    for label, c in space.items():
        if c.finite:
            candidates = c.grid()[:_MAX_CHECKED]
        else:
            low, high = getattr(c, "low", -math.inf), getattr(c, "high", math.inf)
            candidates = [v for v in (low, high) if math.isfinite(v)]
        for value in candidates:
            try:
                _freeze(obj, {**defaults, label: value}, depth=-1)
            except Exception as e:
                raise ValueError(
                    f"{name}: the choice {label!r} allows {value!r}, which {name} refuses "
                    f"({type(e).__name__}: {e}); change the choice's values or range"
                ) from None


def searchable(init: F) -> F:
    """Let a class's ``__init__`` take choices among its arguments (nasx's evaluators use it).

    Called with a choice anywhere in its arguments, the decorated ``__init__`` builds the object
    with every choice at its default, remembers the arguments (``trace_symbol``, ``trace_args``,
    ``trace_kwargs``, NNI's names), and checks that the class accepts each candidate value.
    Without choices it is the plain ``__init__``, and nothing is recorded.

    Example:
        >>> from nasx.space import Categorical
        >>> class Schedule:
        ...     @searchable
        ...     def __init__(self, warmup=0):
        ...         if warmup < 0:
        ...             raise ValueError('warmup must be >= 0')
        ...         self.warmup = warmup
        >>> s = Schedule(warmup=Categorical([0, 5], label='warmup'))
        >>> s.warmup, freeze_evaluator(s, {'warmup': 5}).warmup
        (0, 5)
        >>> Schedule(warmup=Categorical([0, -1], label='warmup'))
        Traceback (most recent call last):
        ...
        ValueError: Schedule: the choice 'warmup' allows -1, which Schedule refuses (ValueError: ...); ...
    """

    @functools.wraps(init)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> None:
        # A base class's __init__ called by the one recording gets objects that hold choices (a
        # DataLoader made with the defaults): only the outermost call records.
        if id(self) in _BUILDING.get() or not contains_choices((args, kwargs)):
            init(self, *args, **kwargs)
            return
        cls = type(self)
        if cls.__init__ is not wrapper:
            raise TypeError(
                f"{cls.__name__}.__init__ passes choices on to {init.__qualname__}, but nasx can "
                f"only build again the class it was called as: create it with "
                f"nasx.trace({cls.__name__})(...), or decorate {cls.__name__}.__init__ with "
                "@nasx.evaluator.hparams.searchable"
            )
        plain_args, plain_kwargs = with_defaults(args, kwargs)
        token = _BUILDING.set(_BUILDING.get() | {id(self)})
        try:
            init(self, *plain_args, **plain_kwargs)
        finally:
            _BUILDING.reset(token)
        record_call(self, cls, args, kwargs)
        check_choices(self)

    return wrapper  # type: ignore[return-value]  # same signature as init
