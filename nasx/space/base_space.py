"""BaseModelSpace: NNI's framework-neutral model space, a collection of mutables organised as a model.

NNI 3.0's ``nni.nas.space.BaseModelSpace`` is what its model spaces have in common, and what a
space that is not a PyTorch module subclasses: it holds its own mutables (``self.mutables = ...``)
and overrides the methods of NNI's ``Mutable`` protocol, :meth:`~BaseModelSpace.leaf_mutables`
(what it depends on), :meth:`~BaseModelSpace.check_contains` (whether an arch is valid) and
:meth:`~BaseModelSpace.freeze` (the model of an arch). :class:`~nasx.space.ModelSpace` is a
BaseModelSpace too (an ``nn.Module`` whose constructor declares choices, which defines all of them
itself), so ``isinstance(space, BaseModelSpace)`` holds for every space.

A space written NNI's way runs as it is: :func:`~nasx.space.search_space` lists the choices of
its ``simplify()`` (constraints among them join the search space's constraints, and an overridden
``check_contains`` is one more), and ``NasExperiment`` builds each trial's model with its
``freeze(arch)``, which may return anything the evaluator accepts (not only an ``nn.Module``).

    >>> from nasx.space import Categorical, MutableList, current_model, ensure_frozen, model_context
    >>> class Offsets(BaseModelSpace):
    ...     def __init__(self):
    ...         self.mutables = MutableList([Categorical([1, 2], label='a'),
    ...                                      Categorical([10, 20], label='b')])
    ...         if current_model() is not None:
    ...             self.values = ensure_frozen(self.mutables)
    ...     def freeze(self, sample):
    ...         with model_context(sample):
    ...             return Offsets()
    >>> space = Offsets()
    >>> list(space.simplify()), space.freeze({'a': 2, 'b': 10}).values
    (['a', 'b'], [2, 10])
    >>> space.contains({'a': 3, 'b': 10})
    False
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from .choice import Choice
from .context import frozen_factory as _frozen_factory
from .context import model_context
from .errors import ConstraintViolation, InvalidArchError
from .expression import Mutable, Sample, dedup_by_label

__all__ = ["BaseModelSpace"]

_NOT_SET: Any = object()


def is_space_leaf(mutable: Any) -> bool:
    """The default ``is_leaf`` of a BaseModelSpace's ``simplify()``: NNI's labelled mutables,
    that is nasx's choices and the constraints between them."""
    from .constraints import Constraint

    return isinstance(mutable, (Choice, Constraint))


def leaves_of(mutables: Any, is_leaf: Callable[[Any], bool]) -> Iterator[Any]:
    """The leaf mutables of ``mutables``: a mutable, a constraint, a module holding choices, or
    a list, tuple or dict of them (plain values are skipped)."""
    import torch.nn as nn

    from .constraints import Constraint

    if isinstance(mutables, Mutable):
        yield from mutables.leaf_mutables(is_leaf)
    elif isinstance(mutables, Constraint):
        yield mutables
    elif isinstance(mutables, BaseModelSpace):
        yield from mutables.leaf_mutables(is_leaf)
    elif isinstance(mutables, nn.Module):
        from .search_space import simplify_module

        yield from simplify_module(mutables, is_leaf).values()
    elif isinstance(mutables, Mapping):
        for value in mutables.values():
            yield from leaves_of(value, is_leaf)
    elif isinstance(mutables, (list, tuple)):
        for value in mutables:
            yield from leaves_of(value, is_leaf)


class BaseModelSpace:
    """NNI's ``BaseModelSpace``: a model space as a collection of mutables (not necessarily a
    PyTorch module).

    A subclass sets ``self.mutables`` (a choice, a :class:`~nasx.space.MutableList` /
    :class:`~nasx.space.MutableDict`, a list or dict of choices and constraints) or registers
    them with :meth:`add_mutable`, and overrides what it needs, as NNI's subclasses do:

    - :meth:`leaf_mutables` (default: those of ``self.mutables``);
    - :meth:`check_contains` (default: every choice has an allowed value and every constraint
      holds);
    - :meth:`freeze` (default: for a space made by ``nasx.trace(cls)(...)``, the class called
      again with its arguments under :func:`~nasx.space.model_context`; otherwise it must be
      overridden, typically ``with model_context(sample): return MySpace(...)``);
    - :meth:`simplify` (default: :meth:`leaf_mutables` deduplicated by label).

    :meth:`contains`, :meth:`validate`, :meth:`default`, :meth:`random`, :meth:`grid` and
    :meth:`frozen_factory` are written with them. NNI's class derives from ``nni.mutable.Mutable``;
    this one does not derive from :class:`~nasx.space.Mutable`, which carries the arithmetic of
    value choices (``space + 1`` would build an expression).
    """

    # -- what a subclass overrides ------------------------------------------------------------
    def leaf_mutables(self, is_leaf: Callable[[Any], bool]) -> Iterable[Any]:
        """The labelled mutables this space depends on (NNI's ``leaf_mutables``): by default
        those of ``self.mutables``; ``is_leaf`` says which mutables stop the expansion."""
        mutables = getattr(self, "mutables", _NOT_SET)
        if mutables is _NOT_SET:
            raise NotImplementedError(
                f"{type(self).__name__} has no mutables: set self.mutables (a MutableList or "
                "MutableDict of its choices) or self.add_mutable(choice) in __init__, or "
                "override leaf_mutables(is_leaf) to yield them"
            )
        return leaves_of(mutables, is_leaf)

    def check_contains(self, sample: Mapping[str, Any]) -> InvalidArchError | None:
        """The error that freezing with ``sample`` would raise, or None (NNI's
        ``check_contains``): a missing label or a value not allowed, then a broken constraint.
        Labels the space does not have are ignored, as in NNI."""
        from .constraints import Constraint

        leaves = list(self.simplify().values())
        for leaf in leaves:
            if isinstance(leaf, Choice):
                error = leaf.check_contains(sample)
                if error is not None:
                    return error
        for leaf in leaves:
            if isinstance(leaf, Constraint):
                reason = leaf.check(sample, functools.partial(self.freeze, dict(sample)))
                if reason is not None:
                    return ConstraintViolation(
                        f"{type(self).__name__}: the sample breaks the constraint {reason}"
                    )
        return None

    def freeze(self, sample: Mapping[str, Any]) -> Any:
        """The model of ``sample`` (an arch), after :meth:`validate` (NNI's ``freeze``).

        A space made by ``nasx.trace(MySpace)(...)`` is made again with the same arguments under
        ``model_context(sample)`` (as NNI's simplified model format does); any other subclass
        overrides this method.
        """
        self.validate(sample)
        symbol = getattr(self, "trace_symbol", None)
        if symbol is None:
            raise NotImplementedError(
                f"{type(self).__name__}.freeze(sample) is not defined: override it to build the "
                "model of an arch, e.g. `with model_context(sample): return "
                f"{type(self).__name__}(...)` (or make the space with nasx.trace({type(self).__name__})"
                "(...), which rebuilds it with the same arguments)"
            )
        with model_context(dict(sample), strict=False):
            return symbol(*getattr(self, "trace_args", ()), **getattr(self, "trace_kwargs", {}))

    def simplify(self, is_leaf: Callable[[Any], bool] | None = None) -> dict[str, Any]:
        """``{label: leaf}``: the choices and constraints of the space (NNI's ``simplify``);
        ``is_leaf`` as in :meth:`~nasx.space.Mutable.simplify`."""
        return dedup_by_label(self.leaf_mutables(is_leaf or is_space_leaf))

    # -- written with the above --------------------------------------------------------------
    def add_mutable(self, mutable: Any) -> Any:
        """Add ``mutable`` (a choice, an expression or a constraint) to ``self.mutables``;
        returns it."""
        mutables = getattr(self, "mutables", _NOT_SET)
        if mutables is _NOT_SET:
            from .containers import MutableList

            # setattr, not an assignment, which mypy would take for declaring an attribute that
            # ModelSpace's read-only `mutables` property then contradicts
            setattr(self, "mutables", MutableList([mutable]))  # noqa: B010
        elif hasattr(mutables, "append"):
            mutables.append(mutable)
        else:
            raise TypeError(
                f"{type(self).__name__}.add_mutable: self.mutables is a "
                f"{type(mutables).__name__}, which has no append(); add to it yourself"
            )
        return mutable

    def contains(self, sample: Mapping[str, Any]) -> bool:
        """Whether ``sample`` is a valid arch of this space (:meth:`check_contains` found nothing)."""
        return self.check_contains(sample) is None

    def validate(self, sample: Mapping[str, Any]) -> None:
        """Raise the error :meth:`check_contains` returns for ``sample``, if any (NNI's
        ``validate``): :class:`~nasx.space.InvalidArchError` names what is wrong."""
        error = self.check_contains(sample)
        if error is not None:
            raise error

    def default(self, memo: Sample | None = None) -> Any:
        """The model of every choice's default (NNI's ``default``); the labels already in
        ``memo`` keep their values, and the arch is written into it. A default that breaks a
        constraint raises (:meth:`robust_default` then tries random archs)."""
        from .search_space import search_space

        sample = {} if memo is None else memo
        for label, choice in search_space(self).items():
            sample.setdefault(label, choice.default)
        return self.freeze(sample)

    def robust_default(self, memo: Sample | None = None, retries: int = 1000) -> Any:
        """:meth:`default`, or when it is not valid a :meth:`random` model (up to ``retries``
        draws), as NNI's ``robust_default``."""
        sample = {} if memo is None else memo
        for attempt in range(retries + 1):
            tried = dict(sample)
            try:
                model = self.default(tried) if attempt == 0 else self.random(tried)
            except InvalidArchError:
                continue
            sample.update(tried)
            return model
        raise ConstraintViolation(
            f"{type(self).__name__}: no valid arch found in {retries + 1} tries (the default, then "
            "random ones)"
        )

    def random(self, memo: Sample | None = None, random_state: Any = None) -> Any:
        """The model of a random arch (NNI's ``space.random()``).

        Labels already in ``memo`` keep their values; the arch drawn is written into ``memo``.
        ``random_state``: a :class:`random.Random`, an int seed or a NumPy RandomState. The
        space's constraints hold (see :meth:`SearchSpace.sample`).

            >>> import torch.nn as nn
            >>> from nasx.space import LayerChoice, ModelSpace
            >>> class Net(ModelSpace):
            ...     def __init__(self):
            ...         super().__init__()
            ...         self.act = LayerChoice([nn.ReLU(), nn.Tanh()], label='act')
            >>> memo = {}
            >>> type(Net().random(memo, random_state=0)).__name__, list(memo)
            ('Net', ['act'])
        """
        from .expression import _as_rng
        from .search_space import search_space

        space = search_space(self)
        rng = _as_rng(random_state)
        sample = {} if memo is None else memo
        given = {label: sample[label] for label in space if label in sample}
        if given:
            arch = {label: c.sample(rng) for label, c in space.items()}
            arch = space.validate({**arch, **given})
            space.check(arch)
        else:
            arch = space.sample(rng)
        sample.update(arch)
        return self.freeze(arch)

    def grid(self, memo: Sample | None = None, granularity: int | None = None) -> Iterator[Any]:
        """The model of every arch, one after the other (NNI's ``space.grid()``); the last label
        varies fastest, constraints hold.

        Labels in ``memo`` keep their values, and ``memo`` holds the arch of the model just
        given; ``granularity`` lists continuous choices as a :class:`~nasx.space.Numerical`'s
        :meth:`~nasx.space.Choice.grid` does.

            >>> import torch.nn as nn
            >>> from nasx.space import LayerChoice, ModelSpace
            >>> class Net(ModelSpace):
            ...     def __init__(self):
            ...         super().__init__()
            ...         self.act = LayerChoice([nn.ReLU(), nn.Tanh()], label='act')
            >>> [model.act for model in Net().grid()]
            [ReLU(), Tanh()]
        """
        from .search_space import search_space

        space = search_space(self)
        sample = {} if memo is None else memo
        labels = list(space)
        values = [
            [space[label].validate(sample[label])]
            if label in sample
            else space[label].grid(granularity=granularity)
            for label in labels
        ]
        for combination in itertools.product(*values):
            arch = dict(zip(labels, combination))
            if space.constraints and not space.satisfies(arch):
                continue
            sample.update(arch)
            yield self.freeze(arch)

    @classmethod
    def frozen_factory(cls, sample: Mapping[str, Any]) -> Any:
        """``frozen_factory(cls, sample)``: calling it builds the model of ``sample`` (NNI's)."""
        return _frozen_factory(cls, sample)

    def extra_repr(self) -> str:
        """What ``repr()`` shows between the parentheses (NNI's; empty by default)."""
        return ""

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.extra_repr()})"
