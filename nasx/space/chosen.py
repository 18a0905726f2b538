"""What ``nasx.choice(label, values)`` returns in a space's search form: the value, remembering
the choice it came from.

``ChosenInt(16)`` *is* the int 16 (arithmetic, comparisons, hashing, JSON, ``repr`` and torch's
layers treat it so) with one addition, ``.choice``: the ``Categorical`` it is the default of.
So ``nn.Linear(4, nasx.choice('w', [8, 16]))`` builds as written (nasx's spelling), while a
``Mutable*`` layer or a ``ParametrizedModule`` that receives it sees the choice and searches it
exactly as if it had been given ``Categorical([8, 16], label='w')`` (NNI's spelling; one-shot
strategies then share one weight over ``w``).

Arithmetic keeps the note, as NNI's expressions do: ``w * 2`` is the int 32 whose ``.choice`` is
the expression ``w * 2`` of the choice, so ``MutableLinear(w * 2, 10)`` searches it as NNI's
``MutableLinear(nni.choice(...) * 2, 10)`` does (``+ - * / // % **``, unary ``- + abs ~``,
``round``, ``math.floor``/``ceil``; bit operators on ints). Conversions and comparisons give
plain values (``int(w / 2)``, ``w > 16``): a layer given such a value cannot search it.

The note is only what the *search form* hands out: under ``model_context(arch)`` the value is the
arch's plain value, so a fixed model's attributes are plain. ``str``, ``int`` and ``float`` values
are remembered, others (``bool``, ``None``, lists) come back plain. Copies (``copy``,
``deepcopy``, ``pickle``) keep the note.

    >>> w = ChosenInt(16, 'the choice')
    >>> w == 16, repr(w), hash(w) == hash(16), w.choice
    (True, '16', True, 'the choice')
    >>> type(plain(w)) is int, type(w > 8) is bool
    (True, True)
    >>> from nasx.space import Categorical
    >>> k = ChosenInt(3, Categorical([3, 5], label='k'))
    >>> k * 2 + 1, (k * 2 + 1).choice
    (7, (Categorical([3, 5], label='k') * 2) + 1)
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from typing import Any

__all__ = [
    "ChosenFloat",
    "ChosenInt",
    "ChosenStr",
    "ChosenValue",
    "as_choices",
    "plain",
    "remember",
]


class ChosenValue:
    """Mixin of :class:`ChosenInt`, :class:`ChosenFloat` and :class:`ChosenStr`: a value that
    remembers the choice (``.choice``: a :class:`~nasx.space.Categorical`, or an expression of
    choices after arithmetic) it is the value of."""

    choice: Any  # a Categorical or an expression (not imported: choice.py imports this module)
    _plain_type: type = object  # the built-in type the value is an instance of

    @property
    def label(self) -> str:
        """The choice's label (NNI's ``Categorical.label``, where NNI returns the object); an
        expression has none (AttributeError)."""
        label: str = self.choice.label
        return label

    def labels(self) -> list[str]:
        """The labels the value depends on (one, or an expression's)."""
        return list(self.choice.simplify())

    def __copy__(self) -> Any:
        return self  # immutable, as the plain value is

    def __deepcopy__(self, memo: dict[int, Any]) -> Any:
        return self

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self._plain_type(self), self.choice))


def _binary(op: Callable[[Any, Any], Any], a: Any, b: Any) -> Any:
    """``op(a, b)`` on the plain values; a number result remembers ``op`` of the choices."""
    result = op(plain(a), plain(b))
    if type(result) in (int, float):
        return remember(result, op(as_choices(a), as_choices(b)))
    if any(callable(getattr(x, "simplify", None)) for x in (a, b)):  # with a choice object
        return op(as_choices(a), as_choices(b))
    return result  # with a tensor, a string, ...: as the plain value would give


def _unary(op: Callable[..., Any], a: Any, *args: Any) -> Any:
    result = op(plain(a), *args)
    return remember(result, op(a.choice, *args)) if type(result) in (int, float) else result


class _Arithmetic(ChosenValue):
    """Arithmetic that keeps the note (an expression of the choice), for ints and floats."""

    def __add__(self, other: Any) -> Any:
        return _binary(operator.add, self, other)

    def __radd__(self, other: Any) -> Any:
        return _binary(operator.add, other, self)

    def __sub__(self, other: Any) -> Any:
        return _binary(operator.sub, self, other)

    def __rsub__(self, other: Any) -> Any:
        return _binary(operator.sub, other, self)

    def __mul__(self, other: Any) -> Any:
        return _binary(operator.mul, self, other)

    def __rmul__(self, other: Any) -> Any:
        return _binary(operator.mul, other, self)

    def __truediv__(self, other: Any) -> Any:
        return _binary(operator.truediv, self, other)

    def __rtruediv__(self, other: Any) -> Any:
        return _binary(operator.truediv, other, self)

    def __floordiv__(self, other: Any) -> Any:
        return _binary(operator.floordiv, self, other)

    def __rfloordiv__(self, other: Any) -> Any:
        return _binary(operator.floordiv, other, self)

    def __mod__(self, other: Any) -> Any:
        return _binary(operator.mod, self, other)

    def __rmod__(self, other: Any) -> Any:
        return _binary(operator.mod, other, self)

    def __pow__(self, other: Any, mod: Any = None) -> Any:
        if mod is not None:  # pow(w, e, mod): no expression has it; the plain value
            return pow(plain(self), plain(other), mod)
        return _binary(operator.pow, self, other)

    def __rpow__(self, other: Any, mod: Any = None) -> Any:
        if mod is not None:
            return pow(plain(other), plain(self), mod)
        return _binary(operator.pow, other, self)

    def __neg__(self) -> Any:
        return _unary(operator.neg, self)

    def __pos__(self) -> Any:
        return _unary(operator.pos, self)

    def __abs__(self) -> Any:
        return _unary(abs, self)

    def __round__(self, ndigits: Any = None) -> Any:
        return _unary(round, self) if ndigits is None else _unary(round, self, ndigits)

    def __floor__(self) -> Any:
        return _unary(math.floor, self)

    def __ceil__(self) -> Any:
        return _unary(math.ceil, self)


class _IntArithmetic(_Arithmetic):
    """Bit operators, for ints."""

    def __and__(self, other: Any) -> Any:
        return _binary(operator.and_, self, other)

    def __rand__(self, other: Any) -> Any:
        return _binary(operator.and_, other, self)

    def __or__(self, other: Any) -> Any:
        return _binary(operator.or_, self, other)

    def __ror__(self, other: Any) -> Any:
        return _binary(operator.or_, other, self)

    def __xor__(self, other: Any) -> Any:
        return _binary(operator.xor, self, other)

    def __rxor__(self, other: Any) -> Any:
        return _binary(operator.xor, other, self)

    def __lshift__(self, other: Any) -> Any:
        return _binary(operator.lshift, self, other)

    def __rlshift__(self, other: Any) -> Any:
        return _binary(operator.lshift, other, self)

    def __rshift__(self, other: Any) -> Any:
        return _binary(operator.rshift, self, other)

    def __rrshift__(self, other: Any) -> Any:
        return _binary(operator.rshift, other, self)

    def __invert__(self) -> Any:
        return _unary(operator.invert, self)


class ChosenInt(_IntArithmetic, int):
    """An ``int`` from ``nasx.choice(...)`` in a space's search form (see the module doc)."""

    _plain_type = int

    def __new__(cls, value: int, choice: Any) -> ChosenInt:
        self = super().__new__(cls, value)
        self.choice = choice
        return self


class ChosenFloat(_Arithmetic, float):
    """A ``float`` from ``nasx.choice(...)`` in a space's search form (see the module doc)."""

    _plain_type = float

    def __new__(cls, value: float, choice: Any) -> ChosenFloat:
        self = super().__new__(cls, value)
        self.choice = choice
        return self


class ChosenStr(str, ChosenValue):
    """A ``str`` from ``nasx.choice(...)`` in a space's search form (see the module doc)."""

    _plain_type = str

    def __new__(cls, value: str, choice: Any) -> ChosenStr:
        self = super().__new__(cls, value)
        self.choice = choice
        return self


_CHOSEN: dict[type, type[ChosenInt] | type[ChosenFloat] | type[ChosenStr]] = {
    int: ChosenInt,
    float: ChosenFloat,
    str: ChosenStr,
}


def remember(value: Any, choice: Any) -> Any:
    """``value`` as a :class:`ChosenValue` of ``choice`` when it is exactly an int, float or str;
    any other value (a bool, None, a list) as it is.

    >>> type(remember(3, 'c')).__name__, remember(True, 'c'), remember([1], 'c')
    ('ChosenInt', True, [1])
    """
    chosen = _CHOSEN.get(type(value))
    return value if chosen is None else chosen(value, choice)


def plain(value: Any) -> Any:
    """The built-in value of a :class:`ChosenValue`; any other value as it is.

    >>> type(plain(ChosenStr('relu', 'c'))), plain(3)
    (<class 'str'>, 3)
    """
    if isinstance(value, ChosenValue):
        return value._plain_type(value)
    return value


def as_choices(value: Any) -> Any:
    """``value`` with every :class:`ChosenValue` (also inside a tuple or list) replaced by its
    choice: how a layer that searches its arguments reads them.

    >>> as_choices((ChosenInt(3, 'k'), 1))
    ('k', 1)
    """
    if isinstance(value, ChosenValue):
        return value.choice
    if type(value) in (tuple, list):
        return type(value)(as_choices(v) for v in value)
    return value
