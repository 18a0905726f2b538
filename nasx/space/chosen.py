"""What ``nasx.choice(label, values)`` returns in a space's search form: the value, remembering
the choice it came from.

``ChosenInt(16)`` *is* the int 16 (arithmetic, comparisons, hashing, JSON, ``repr`` and torch's
layers treat it so) with one addition, ``.choice``: the ``Categorical`` it is the default of.
So ``nn.Linear(4, nasx.choice('w', [8, 16]))`` builds as written (nasx's spelling), while a
``Mutable*`` layer or a ``ParametrizedModule`` that receives it sees the choice and searches it
exactly as if it had been given ``Categorical([8, 16], label='w')`` (NNI's spelling; one-shot
strategies then share one weight over ``w``).

The note is only what the *search form* hands out: under ``model_context(arch)`` the value is the
arch's plain value, so a fixed model's attributes are plain. Arithmetic gives plain values
(``w * 2`` is the int 16: write ``Categorical(...) * 2`` for an expression a layer can search);
``str``, ``int`` and ``float`` values are remembered, others (``bool``, ``None``, lists) come
back plain. Copies (``copy``, ``deepcopy``, ``pickle``) keep the note.

    >>> w = ChosenInt(16, 'the choice')
    >>> w == 16, w * 2, repr(w), hash(w) == hash(16), w.choice
    (True, 32, '16', True, 'the choice')
    >>> type(w * 2) is int, type(plain(w)) is int
    (True, True)
"""

from __future__ import annotations

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
    remembers the choice (``.choice``, a :class:`~nasx.space.Categorical`) it is the value of."""

    choice: Any  # the Categorical (not imported: choice.py imports this module)
    _plain_type: type = object  # the built-in type the value is an instance of

    @property
    def label(self) -> str:
        """The choice's label (NNI's ``Categorical.label``, where NNI returns the object)."""
        label: str = self.choice.label
        return label

    def __copy__(self) -> Any:
        return self  # immutable, as the plain value is

    def __deepcopy__(self, memo: dict[int, Any]) -> Any:
        return self

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self._plain_type(self), self.choice))


class ChosenInt(int, ChosenValue):
    """An ``int`` from ``nasx.choice(...)`` in a space's search form (see the module doc)."""

    _plain_type = int

    def __new__(cls, value: int, choice: Any) -> ChosenInt:
        self = super().__new__(cls, value)
        self.choice = choice
        return self


class ChosenFloat(float, ChosenValue):
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
