"""Value choices as expressions: arithmetic, comparisons, ``max``/``min``, conditions, indexing.

Any choice (:class:`~nasx.space.Categorical`, :class:`~nasx.space.Numerical`) combines with
numbers and other choices into a :class:`MutableExpression`, NNI's lazy value: it remembers the
operation and is worked out only when the choices it depends on are decided. Strategies never see
an expression, only its *leaf* choices (``simplify()``), so a search space lists the labels the
user declared, and an arch of those labels decides every expression built from them.

    >>> from nasx.space import Categorical
    >>> ch = Categorical([16, 32], label='ch')
    >>> wide = ch * 2 + 1
    >>> wide
    (Categorical([16, 32], label='ch') * 2) + 1
    >>> wide.freeze({'ch': 32})
    65
    >>> list(wide.simplify())
    ['ch']
    >>> wide.grid()
    [33, 65]

Inside a space, an expression works wherever a choice does (``MutableConv2d(ch, ch * 2, 3)``,
:func:`~nasx.space.ensure_frozen`): in the search form it takes its leaves' defaults, under
:func:`~nasx.space.model_context` their values in the arch.

``==`` and ``!=`` build expressions too (so ``MutableExpression.condition(ch == 16, 1, 2)``
works), and an ``==`` expression used as a bool answers whether the two sides are the same
mutable (:meth:`Mutable.equals`), so ``choice in some_list`` still works. Any other expression
refuses ``bool()``: ``if ch > 16:`` in a constructor cannot be decided before the arch is known;
use ``MutableExpression.condition`` or ``ensure_frozen(ch) > 16`` instead.
"""

from __future__ import annotations

import itertools
import math
import operator
import random
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, NoReturn, cast

from .errors import InvalidArchError, LabelConflictError

if TYPE_CHECKING:
    from .choice import Choice

__all__ = ["Mutable", "MutableExpression", "Sample"]

Sample = dict[str, Any]
"""NNI's name for an arch, a dict ``{label: value}``."""


def _as_rng(random_state: Any) -> random.Random:
    """A :class:`random.Random` from None, a seed, a Random or NumPy's RandomState/Generator."""
    if random_state is None:
        return random.Random()
    if isinstance(random_state, random.Random):
        return random_state
    if isinstance(random_state, int):
        return random.Random(random_state)
    draw = getattr(random_state, "integers", None) or getattr(random_state, "randint", None)
    if draw is None:
        raise TypeError(
            "random_state must be None, an int seed, a random.Random or a NumPy RandomState / "
            f"Generator, got {type(random_state).__name__}"
        )
    return random.Random(int(draw(0, 2**31 - 1)))


class _Operators:
    """Python operators that build a :class:`MutableExpression` instead of computing a value."""

    def _expr(self, function: Callable[..., Any], template: str, args: list[Any]) -> Any:
        return MutableExpression(function, template, args)

    def __add__(self, other: Any) -> Any:
        return self._expr(operator.add, "{} + {}", [self, other])

    def __radd__(self, other: Any) -> Any:
        return self._expr(operator.add, "{} + {}", [other, self])

    def __sub__(self, other: Any) -> Any:
        return self._expr(operator.sub, "{} - {}", [self, other])

    def __rsub__(self, other: Any) -> Any:
        return self._expr(operator.sub, "{} - {}", [other, self])

    def __mul__(self, other: Any) -> Any:
        return self._expr(operator.mul, "{} * {}", [self, other])

    def __rmul__(self, other: Any) -> Any:
        return self._expr(operator.mul, "{} * {}", [other, self])

    def __truediv__(self, other: Any) -> Any:
        return self._expr(operator.truediv, "{} / {}", [self, other])

    def __rtruediv__(self, other: Any) -> Any:
        return self._expr(operator.truediv, "{} / {}", [other, self])

    def __floordiv__(self, other: Any) -> Any:
        return self._expr(operator.floordiv, "{} // {}", [self, other])

    def __rfloordiv__(self, other: Any) -> Any:
        return self._expr(operator.floordiv, "{} // {}", [other, self])

    def __mod__(self, other: Any) -> Any:
        return self._expr(operator.mod, "{} % {}", [self, other])

    def __rmod__(self, other: Any) -> Any:
        return self._expr(operator.mod, "{} % {}", [other, self])

    def __pow__(self, other: Any) -> Any:
        return self._expr(operator.pow, "{} ** {}", [self, other])

    def __rpow__(self, other: Any) -> Any:
        return self._expr(operator.pow, "{} ** {}", [other, self])

    def __and__(self, other: Any) -> Any:
        return self._expr(operator.and_, "{} & {}", [self, other])

    def __rand__(self, other: Any) -> Any:
        return self._expr(operator.and_, "{} & {}", [other, self])

    def __or__(self, other: Any) -> Any:
        return self._expr(operator.or_, "{} | {}", [self, other])

    def __ror__(self, other: Any) -> Any:
        return self._expr(operator.or_, "{} | {}", [other, self])

    def __xor__(self, other: Any) -> Any:
        return self._expr(operator.xor, "{} ^ {}", [self, other])

    def __rxor__(self, other: Any) -> Any:
        return self._expr(operator.xor, "{} ^ {}", [other, self])

    def __lshift__(self, other: Any) -> Any:
        return self._expr(operator.lshift, "{} << {}", [self, other])

    def __rlshift__(self, other: Any) -> Any:
        return self._expr(operator.lshift, "{} << {}", [other, self])

    def __rshift__(self, other: Any) -> Any:
        return self._expr(operator.rshift, "{} >> {}", [self, other])

    def __rrshift__(self, other: Any) -> Any:
        return self._expr(operator.rshift, "{} >> {}", [other, self])

    def __neg__(self) -> Any:
        return self._expr(operator.neg, "-{}", [self])

    def __pos__(self) -> Any:
        return self._expr(operator.pos, "+{}", [self])

    def __invert__(self) -> Any:
        return self._expr(operator.invert, "~{}", [self])

    def __abs__(self) -> Any:
        return self._expr(abs, "abs({})", [self])

    def __round__(self, ndigits: Any = None) -> Any:
        if ndigits is None:
            return self._expr(round, "round({})", [self])
        return self._expr(round, "round({}, {})", [self, ndigits])

    def __floor__(self) -> Any:
        return self._expr(math.floor, "math.floor({})", [self])

    def __ceil__(self) -> Any:
        return self._expr(math.ceil, "math.ceil({})", [self])

    def __lt__(self, other: Any) -> Any:
        return self._expr(operator.lt, "{} < {}", [self, other])

    def __le__(self, other: Any) -> Any:
        return self._expr(operator.le, "{} <= {}", [self, other])

    def __gt__(self, other: Any) -> Any:
        return self._expr(operator.gt, "{} > {}", [self, other])

    def __ge__(self, other: Any) -> Any:
        return self._expr(operator.ge, "{} >= {}", [self, other])

    def __eq__(self, other: object) -> Any:
        if self is other:  # NNI's shortcut: a mutable is equal to itself, no expression needed
            return True
        return self._expr(operator.eq, "{} == {}", [self, other])

    def __ne__(self, other: object) -> Any:
        if self is other:
            return False
        return self._expr(operator.ne, "{} != {}", [self, other])

    # ``__eq__`` is overridden, so the identity hash must be restored explicitly.
    __hash__ = object.__hash__
    # ``__getitem__`` would otherwise make every choice "iterable" without end.
    __iter__ = None

    def __getitem__(self, key: Any) -> Any:
        return self._expr(operator.getitem, "{}[{}]", [self, key])

    def __index__(self) -> NoReturn:
        raise RuntimeError(
            f"{self!r} has no value until the arch is known, so it can't be used as an int "
            "(range(), int(), indexing a list). Use ensure_frozen(choice) inside the space's "
            "constructor, or MutableExpression.to_int(choice) for a lazy conversion"
        )

    def __int__(self) -> NoReturn:
        self.__index__()

    def __float__(self) -> NoReturn:
        self.__index__()

    def __trunc__(self) -> NoReturn:
        self.__index__()


class Mutable(_Operators):
    """Base class of every choice and expression (NNI's ``nni.mutable.Mutable``).

    A mutable depends on some leaf choices (:meth:`simplify`) and becomes a plain value once
    they are decided (:meth:`freeze`). Subclasses implement :meth:`leaf_choices` and
    :meth:`freeze`.
    """

    def leaf_choices(self) -> Iterator[Choice]:
        """The leaf choices this mutable depends on, in order, duplicates included."""
        raise NotImplementedError

    def freeze(self, sample: Mapping[str, Any]) -> Any:
        """The value of this mutable when its leaves take the values in ``sample`` (an arch)."""
        raise NotImplementedError

    def leaf_symbols(self) -> Iterator[Choice]:
        """NNI's name for :meth:`leaf_choices`."""
        return self.leaf_choices()

    def simplify(self, is_leaf: Callable[[Any], bool] | None = None) -> dict[str, Any]:
        """``{label: leaf choice}``: the decisions a strategy sees (NNI's ``simplify``).

        ``is_leaf`` (NNI's argument) decides which labelled mutables stop the expansion: it is
        asked about every mutable met on the way down and must accept the choices themselves
        (a choice can't be expanded). The same label used for two different decisions raises
        :class:`~nasx.space.LabelConflictError`.

        >>> from nasx.space import Categorical
        >>> a = Categorical([1, 2], label='a')
        >>> list((a * 2 + a).simplify(is_leaf=lambda m: isinstance(m, Categorical)))
        ['a']
        """
        leaves = self.leaf_choices() if is_leaf is None else self.leaf_mutables(is_leaf)
        return dedup_by_label(leaves)

    def leaf_mutables(self, is_leaf: Callable[[Any], bool]) -> Iterator[Any]:
        """The labelled mutables ``is_leaf`` accepts, met expanding this one (NNI's name)."""
        if is_leaf(self):
            if not isinstance(getattr(self, "label", None), str):
                raise ValueError(
                    f"is_leaf accepted {self!r}, which has no label: only labelled mutables "
                    "(choices, LayerChoice, ...) can be leaves of simplify()"
                )
            yield self
            return
        children = self._children()
        if children is None:
            raise ValueError(
                f"is_leaf rejected {self!r}, but a {type(self).__name__} can't be expanded "
                "further: is_leaf must accept every choice (Categorical, Numerical, ...)"
            )
        for child in children:
            yield from child.leaf_mutables(is_leaf)

    def _children(self) -> list[Mutable] | None:
        """The mutables this one is made of; None for a choice (a leaf)."""
        return None

    def check_contains(self, sample: Mapping[str, Any]) -> InvalidArchError | None:
        """The error that freezing with ``sample`` would raise, or None when it is valid."""
        for leaf in self.simplify().values():
            if leaf.label not in sample:
                return InvalidArchError(
                    f"the sample has no value for label {leaf.label!r}; labels given: {list(sample)!r}"
                )
            try:
                leaf.validate(sample[leaf.label])
            except InvalidArchError as error:
                return error
        return None

    def contains(self, sample: Mapping[str, Any]) -> bool:
        """Whether ``sample`` decides this mutable with allowed values."""
        return self.check_contains(sample) is None

    def equals(self, other: Any) -> bool:
        """Whether ``other`` is the same mutable (use this, not ``==``, which builds an expression)."""
        raise NotImplementedError

    def random(self, memo: Sample | None = None, random_state: Any = None) -> Any:
        """A random value: every undecided leaf is sampled (and written to ``memo``), then frozen.

        ``random_state`` is a :class:`random.Random`, an int seed or a NumPy RandomState.
        """
        sample = {} if memo is None else memo
        rng = _as_rng(random_state)
        for label, leaf in self.simplify().items():
            if label not in sample:
                sample[label] = leaf.sample(rng)
        return self.freeze(sample)

    def grid(self, memo: Sample | None = None, granularity: int | None = None) -> list[Any]:
        """Every value this mutable can take, one per combination of its leaves' values.

        A continuous leaf (:class:`~nasx.space.Numerical`) needs ``granularity`` (NNI's meaning).
        """
        sample = dict(memo or {})
        leaves = [leaf for label, leaf in self.simplify().items() if label not in sample]
        grids = [leaf.grid(granularity=granularity) for leaf in leaves]
        return [
            self.freeze({**sample, **{leaf.label: v for leaf, v in zip(leaves, values)}})
            for values in itertools.product(*grids)
        ]


def dedup_by_label(leaves: Iterable[Any]) -> dict[str, Any]:
    """``{label: leaf}``; a label shared by two different decisions raises LabelConflictError."""
    found: dict[str, Any] = {}
    for leaf in leaves:
        other = found.setdefault(leaf.label, leaf)
        if other is leaf:
            continue
        same = getattr(other, "same_decision", None)
        if same is not None and type(other) is type(leaf) and same(leaf):
            continue
        if same is None and type(other) is type(leaf):  # modules (LayerChoice): one decision
            continue
        raise LabelConflictError(
            f"label {leaf.label!r} is used by two different choices: {other!r} and {leaf!r}"
        )
    return found


def _condition(pred: Any, true: Any, false: Any) -> Any:
    return true if pred else false


def _max(*args: Any) -> Any:
    return max(args)


def _min(*args: Any) -> Any:
    return min(args)


def _sum(*args: Any) -> Any:
    return sum(args)


def _items(arg0: Any, args: tuple[Any, ...]) -> list[Any]:
    """``max(iterable)`` or ``max(a, b, ...)``: the values compared."""
    if not args and isinstance(arg0, Iterable) and not isinstance(arg0, (str, Mutable)):
        return list(arg0)
    return [arg0, *args]


def _any_mutable(*objects: Any) -> bool:
    return any(isinstance(obj, Mutable) for obj in objects)


class MutableExpression(Mutable):
    """A lazy value computed from choices: ``function(*arguments)`` once they are decided.

    Built by the operators of choices and expressions, or by the static helpers below, which
    also accept plain values (then they compute at once, like the Python built-ins).

    Args:
        function: a picklable function (``operator.add``, ``max``, ...).
        template: how to print it, one ``{}`` per argument (``'{} + {}'``).
        arguments: the operands; at least one is a choice or an expression.

    Example:
        >>> from nasx.space import Categorical, MutableExpression
        >>> a, b = Categorical([1, 4], label='a'), Categorical([2, 3], label='b')
        >>> m = MutableExpression.max(a, b)
        >>> m.freeze({'a': 1, 'b': 3}), m.freeze({'a': 4, 'b': 3})
        (3, 4)
        >>> MutableExpression.condition(a == 1, 'small', 'big').freeze({'a': 4})
        'big'
        >>> MutableExpression.max(1, 2)  # no choice involved: computed at once
        2
    """

    def __init__(self, function: Callable[..., Any], template: str, arguments: list[Any]):
        if not _any_mutable(*arguments):
            raise ValueError(
                "a MutableExpression needs at least one choice or expression among its arguments, "
                f"got {arguments!r}"
            )
        self.function = function
        self.template = template
        self.arguments = list(arguments)

    def leaf_choices(self) -> Iterator[Choice]:
        for arg in self.arguments:
            if isinstance(arg, Mutable):
                yield from arg.leaf_choices()

    def _children(self) -> list[Mutable]:
        return [arg for arg in self.arguments if isinstance(arg, Mutable)]

    def evaluate(self, values: Mapping[str, Any]) -> Any:
        """Compute the expression with ``values`` for its leaves (no validation; see ``freeze``)."""
        args = [
            arg.evaluate(values)
            if isinstance(arg, MutableExpression)
            else (values[cast("Choice", arg).label] if isinstance(arg, Mutable) else arg)
            for arg in self.arguments
        ]
        return self.function(*args)

    def freeze(self, sample: Mapping[str, Any]) -> Any:
        """Validate the leaves' values in ``sample`` (an arch) and compute the expression."""
        values = {label: leaf.freeze(sample) for label, leaf in self.simplify().items()}
        return self.evaluate(values)

    @property
    def default(self) -> Any:
        """The value when every leaf takes its default (NNI's ``default()``, here a property)."""
        return self.freeze({label: leaf.default for label, leaf in self.simplify().items()})

    def equals(self, other: Any) -> bool:
        """Same function and template, and operands equal one by one (choices by :meth:`equals`)."""
        if not isinstance(other, MutableExpression):
            return False
        if self.function is not other.function or self.template != other.template:
            return False
        if len(self.arguments) != len(other.arguments):
            return False
        return all(_equal(a, b) for a, b in zip(self.arguments, other.arguments))

    def __bool__(self) -> bool:
        if self.function is operator.eq and len(self.arguments) == 2:
            return _equal(*self.arguments)
        if self.function is operator.ne and len(self.arguments) == 2:
            return not _equal(*self.arguments)
        raise RuntimeError(
            f"the truth of {self!r} is not known until the arch is: don't use it in an `if`. "
            "Use MutableExpression.condition(pred, a, b), or ensure_frozen(...) to get the value"
        )

    def __repr__(self) -> str:
        parts = [
            f"({arg!r})" if isinstance(arg, MutableExpression) else repr(arg)
            for arg in self.arguments
        ]
        return self.template.format(*parts)

    # Static helpers: NNI's ValueChoice.max / min / condition / to_int / to_float, etc.

    @staticmethod
    def condition(pred: Any, true: Any, false: Any) -> Any:
        """``true if pred else false``, decided lazily when any argument is a choice."""
        if _any_mutable(pred, true, false):
            return MutableExpression(_condition, "{1} if {0} else {2}", [pred, true, false])
        return true if pred else false

    @staticmethod
    def max(arg0: Any, *args: Any) -> Any:
        """``max`` of several values or one iterable, lazily when any is a choice."""
        items = _items(arg0, args)
        if len(items) < 1:
            raise ValueError("max() needs at least one value")
        if _any_mutable(*items):
            return MutableExpression(_max, "max(" + ", ".join(["{}"] * len(items)) + ")", items)
        return max(items)

    @staticmethod
    def min(arg0: Any, *args: Any) -> Any:
        """``min`` of several values or one iterable, lazily when any is a choice."""
        items = _items(arg0, args)
        if len(items) < 1:
            raise ValueError("min() needs at least one value")
        if _any_mutable(*items):
            return MutableExpression(_min, "min(" + ", ".join(["{}"] * len(items)) + ")", items)
        return min(items)

    @staticmethod
    def sum(items: Iterable[Any]) -> Any:
        """``sum`` of an iterable, lazily when any item is a choice."""
        items = list(items)
        if _any_mutable(*items):
            return MutableExpression(_sum, "sum([" + ", ".join(["{}"] * len(items)) + "])", items)
        return sum(items)

    @staticmethod
    def to_int(obj: Any) -> Any:
        """``int(obj)``, lazily when ``obj`` is a choice or an expression."""
        if isinstance(obj, Mutable):
            return MutableExpression(int, "int({})", [obj])
        return int(obj)

    @staticmethod
    def to_float(obj: Any) -> Any:
        """``float(obj)``, lazily when ``obj`` is a choice or an expression."""
        if isinstance(obj, Mutable):
            return MutableExpression(float, "float({})", [obj])
        return float(obj)


def _equal(a: Any, b: Any) -> bool:
    if a is b:
        return True
    if isinstance(a, Mutable) or isinstance(b, Mutable):
        return isinstance(a, Mutable) and a.equals(b)
    return bool(a == b) and type(a) is type(b)
