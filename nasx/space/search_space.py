"""Search-space extraction and arch validation: ``search_space(space) -> SearchSpace``.

A :class:`SearchSpace` is a ``dict[label, Choice]`` with the operations strategies need: the
default arch, seeded sampling, grid enumeration, size, and validation that names what is wrong.

    >>> import torch.nn as nn
    >>> from nasx.space import LayerChoice, ModelSpace, choice, search_space
    >>> class Net(ModelSpace):
    ...     def __init__(self):
    ...         super().__init__()
    ...         self.act = LayerChoice([nn.ReLU(), nn.Tanh()], label='act')
    ...         self.fc = nn.Linear(4, choice('width', [8, 16, 32]))
    >>> space = search_space(Net())
    >>> space.size
    6
    >>> space.sample(seed=0) in list(space.grid())
    True
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import torch.nn as nn

from . import constraints as _constraints
from .base import ModelSpace, MutableModule, space_record
from .base_space import BaseModelSpace
from .choice import Choice
from .constraints import Constraint, ValidCount
from .context import model_context
from .errors import ConstraintViolation, InvalidArchError, LabelConflictError


class SearchSpace(dict[str, Choice]):
    """``dict[label, Choice]``, in the order the space declares its choices.

    It also carries the space's :class:`~nasx.space.constraints.Constraint` s (``constraints``;
    see :mod:`nasx.space.constraints`): :meth:`sample` and :meth:`grid` give only archs that
    satisfy them, :meth:`satisfies` / :meth:`violations` check one arch, and
    :meth:`count_valid` counts the archs left. ``size`` is the count before constraints.
    """

    constraints: tuple[Constraint, ...] = ()
    #: ``model_fn(arch) -> nn.Module`` for constraints that look at the model (set by
    #: :func:`search_space` for a ModelSpace).
    model_fn: Callable[[dict[str, Any]], nn.Module] | None = None
    #: random archs drawn for one valid sample before :class:`EmptySpaceError` is raised.
    max_rejections: int = _constraints.MAX_REJECTIONS

    def with_constraints(
        self, *rules: Any, model_fn: Callable[[dict[str, Any]], nn.Module] | None = None
    ) -> SearchSpace:
        """A copy with ``rules`` (constraints, expressions, functions or filters) added."""
        out = SearchSpace(self)
        out.constraints = self.constraints + tuple(Constraint(r) for r in rules)
        out.model_fn = model_fn if model_fn is not None else self.model_fn
        out.max_rejections = self.max_rejections
        return out

    def to_json(self, **json_kwargs: Any) -> str:
        """The space as JSON text: NNI's search-space format (``{label: {"_type", "_value"}}``,
        :func:`~nasx.space.to_nni_search_space`); read it back with
        :func:`~nasx.space.search_space_from_nni`. ``json_kwargs`` go to :func:`json.dumps`.

        ``json.dumps(search_space(model))`` itself raises ``TypeError``: a SearchSpace maps
        labels to choice objects, which JSON has no form for; this is the JSON form.

        >>> from nasx.space import Categorical
        >>> SearchSpace(k=Categorical([3, 5], label='k')).to_json()
        '{"k": {"_type": "choice", "_value": [3, 5]}}'
        """
        import json

        from .nni_format import to_nni_search_space

        return json.dumps(to_nni_search_space(self), **json_kwargs)

    def default(self) -> dict[str, Any]:
        """The arch of every choice's default (what the search form's ``forward`` runs; it may
        break a constraint)."""
        return {label: c.default for label, c in self.items()}

    def sample(
        self,
        rng: random.Random | None = None,
        *,
        seed: int | None = None,
        constrained: bool = True,
    ) -> dict[str, Any]:
        """A uniformly random arch, from ``rng`` or a fresh ``random.Random(seed)``.

        With constraints, archs are drawn until one satisfies them all (uniform over the valid
        archs); :class:`~nasx.space.constraints.EmptySpaceError` when the space has none or
        almost none (``constrained=False`` ignores the constraints).
        """
        if rng is None:
            rng = random.Random(seed)
        if constrained and self.constraints:
            return _constraints.sample_valid(self, rng)
        return {label: c.sample(rng) for label, c in self.items()}

    def grid(self, constrained: bool = True) -> Iterator[dict[str, Any]]:
        """Every arch (that satisfies the constraints, unless ``constrained=False``), the last
        label varying fastest."""
        labels = list(self)
        check = constrained and bool(self.constraints)
        for values in itertools.product(*(self[label].grid() for label in labels)):
            arch = dict(zip(labels, values))
            if not check or self.first_violation(arch) is None:
                yield arch

    # ----------------------------------------------------------------- constraints
    def first_violation(self, arch: Mapping[str, Any]) -> str | None:
        """The label of the first constraint ``arch`` breaks, or None (verdicts of constraints
        that build a model are cached per arch)."""
        if not self.constraints:
            return None
        cache = self.__dict__.get("_verdicts")
        key = None
        if any(c.needs_model for c in self.constraints):
            key = _constraints.arch_key(arch)
            if cache is None:
                cache = self.__dict__["_verdicts"] = {}
            elif key in cache:
                cached: str | None = cache[key]
                return cached
        build = self.model_fn
        model_fn = None if build is None else (lambda: build(dict(arch)))
        verdict = _constraints.first_violation(self.constraints, arch, model_fn)
        if key is not None and cache is not None:
            if len(cache) >= 100_000:
                cache.clear()
            cache[key] = verdict
        return verdict

    def satisfies(self, arch: Mapping[str, Any]) -> bool:
        """Whether ``arch`` satisfies every constraint."""
        return self.first_violation(arch) is None

    def violations(self, arch: Mapping[str, Any]) -> list[str]:
        """Why ``arch`` breaks constraints: one reason per broken constraint (empty if none)."""
        build = self.model_fn
        model_fn = None if build is None else (lambda: build(dict(arch)))
        return [r for c in self.constraints if (r := c.check(arch, model_fn)) is not None]

    def check(self, arch: Mapping[str, Any]) -> None:
        """Raise :class:`~nasx.space.ConstraintViolation` naming the constraints ``arch`` breaks."""
        broken = self.violations(arch)
        if broken:
            raise ConstraintViolation(f"arch {dict(arch)!r} breaks: {'; '.join(broken)}")

    def valid_archs(self) -> list[dict[str, Any]]:
        """Every arch that satisfies the constraints (enumerated once, then cached)."""
        cached = self.__dict__.get("_valid_archs")
        if cached is None:
            cached = self.__dict__["_valid_archs"] = list(self.grid())
        return cached

    def count_valid(
        self,
        max_enumerate: int | None = None,
        samples: int = 2000,
        max_seconds: float | None = None,
        confidence: float = 0.95,
        seed: int = 0,
    ) -> ValidCount:
        """How many archs satisfy the constraints: exact by enumeration up to ``max_enumerate``
        archs (100,000; 2,000 when a constraint builds models), else estimated from ``samples``
        uniform archs with a Wilson interval at ``confidence``. ``max_seconds`` bounds the time:
        sampling stops when it runs out, and a space whose enumeration would take longer is
        sampled instead. ``str()`` of the result says which it is.

        >>> from nasx.space import Categorical
        >>> s = SearchSpace(a=Categorical(list(range(100)), label='a'))
        >>> s = s.with_constraints(lambda arch: arch['a'] % 4 == 0)
        >>> s.count_valid().count
        25
        >>> print(s.count_valid(max_enumerate=10, samples=1000))  # doctest: +ELLIPSIS
        about 24 of 100 archs satisfy the constraints: 0.237 valid (95% CI 0.212 to 0.264), ...
        """
        return _constraints.count_valid(self, max_enumerate, samples, max_seconds, confidence, seed)

    @property
    def size(self) -> int | float:
        """The number of distinct archs, the product of the choices' sizes (before constraints;
        :meth:`count_valid` applies them), or ``math.inf`` when a choice is continuous (a
        :class:`~nasx.space.Numerical` without quantisation)."""
        if not all(c.finite for c in self.values()):
            return math.inf
        return math.prod(len(c) for c in self.values())

    def validate(self, arch: Mapping[str, Any]) -> dict[str, Any]:
        """Return ``arch`` in canonical form (e.g. ``0`` -> ``[0]`` for input choices).

        Raises :class:`InvalidArchError` for an unknown label, a missing label or a value that is
        not allowed, naming the label, the value and what is allowed.
        """
        if not isinstance(arch, Mapping):
            raise InvalidArchError(
                f"an arch is a dict mapping labels to values, got {type(arch).__name__}"
            )
        unknown = [k for k in arch if k not in self]
        if unknown:
            raise InvalidArchError(
                f"unknown label(s) {unknown!r} in arch; the space's labels are {list(self)!r}"
            )
        missing = [k for k in self if k not in arch]
        if missing:
            details = "; ".join(f"{k!r} (allowed: {self[k].grid()[:10]!r})" for k in missing[:5])
            raise InvalidArchError(f"arch is missing label(s): {details}")
        return {label: c.validate(arch[label]) for label, c in self.items()}


def _module_choices(module: nn.Module) -> list[Choice]:
    found: list[Choice] = []
    if isinstance(module, MutableModule):
        found = module.choices()
    elif isinstance(module, ModelSpace):
        found = module.value_choices()
    for mutable in module.__dict__.get("_nasx_mutables", []):  # add_mutable(...)
        found += mutable.leaf_choices()
    return found


def simplify_module(
    module: nn.Module, is_leaf: Callable[[Any], bool] | None = None
) -> dict[str, Any]:
    """``{label: leaf}`` of ``module`` and its submodules: NNI's ``simplify(is_leaf=...)``.

    Without ``is_leaf`` the leaves are the choices (the search space). ``is_leaf`` is asked about
    every labelled choice module (a ``LayerChoice``, a ``Repeat`` of several depths, ...) met
    walking down, which then stands for its whole subtree, and about every mutable registered on
    a module; it must accept the choices themselves.

    >>> import torch.nn as nn
    >>> from nasx.space import Categorical, LayerChoice
    >>> lc = LayerChoice([nn.ReLU(), nn.Tanh()], label='act')
    >>> leaves = simplify_module(lc, is_leaf=lambda m: isinstance(m, (LayerChoice, Categorical)))
    >>> leaves['act'] is lc, list(simplify_module(lc))
    (True, ['act'])
    """
    if is_leaf is None:
        return dict(search_space(module))
    from .expression import dedup_by_label

    def walk(m: nn.Module) -> Iterator[Any]:
        if isinstance(m, MutableModule) and isinstance(getattr(m, "label", None), str):
            if is_leaf(m):
                yield m
                return
        own: list[Any] = []
        if isinstance(m, MutableModule):
            own += m.choices()
        elif isinstance(m, ModelSpace):
            own += m.value_choices()
        own += m.__dict__.get("_nasx_mutables", [])
        for mutable in own:
            yield from mutable.leaf_mutables(is_leaf)
        for child in m.children():
            yield from walk(child)

    return dedup_by_label(walk(module))


def search_space(space: nn.Module | BaseModelSpace) -> SearchSpace:
    """Every choice in ``space`` (and its submodules), keyed by label.

    A label shared on purpose appears once; two different decisions under one label raise
    :class:`~nasx.space.LabelConflictError`. A fixed model (built under ``model_context``) has an
    empty search space. A :class:`~nasx.space.BaseModelSpace` that is not a ModelSpace (a space
    written NNI's way) gives the choices of its ``simplify()``.
    """
    if isinstance(space, BaseModelSpace) and not isinstance(space, ModelSpace):
        return base_space_search_space(space)
    if not isinstance(space, nn.Module):
        raise TypeError(
            f"search_space expects an nn.Module (a ModelSpace) or a BaseModelSpace, got "
            f"{type(space).__name__}"
        )
    found = SearchSpace()
    constraints: list[Constraint] = []
    for module in space.modules():
        for c in _module_choices(module):
            other = found.setdefault(c.label, c)
            if other is not c and not other.same_decision(c):
                raise LabelConflictError(
                    f"label {c.label!r} is used by two different choices: {other!r} and {c!r}"
                )
        for constraint in _constraints.module_constraints(module):
            # a class attribute is seen once per instance of the class: keep it once
            if all(constraint.rule is not c.rule for c in constraints):
                constraints.append(constraint)
    if constraints:
        found.constraints = tuple(constraints)
        if isinstance(space, ModelSpace) and "_nasx_record" in space.__dict__:
            found.model_fn = _ModelFn(space)
    return found


class _ModelFn:
    """Builds the model of an arch of a space (for constraints that look at the model)."""

    def __init__(self, space: ModelSpace):
        record = space_record(space)
        self.cls, self.args, self.kwargs = type(space), record.args, record.kwargs

    def __call__(self, arch: dict[str, Any]) -> nn.Module:
        with model_context(arch):
            return self.cls(*self.args, **self.kwargs)


def base_space_search_space(space: BaseModelSpace) -> SearchSpace:
    """The search space of a space written NNI's way (a :class:`~nasx.space.BaseModelSpace`).

    Its ``simplify()`` gives the choices; the constraints among its leaves become the search
    space's constraints, and so does its own ``check_contains`` when the class overrides it (an
    arch it refuses is never proposed). A constraint that looks at the model builds it with the
    space's ``freeze``.

    >>> from nasx.space import BaseModelSpace, Categorical, ExpressionConstraint
    >>> class Pair(BaseModelSpace):
    ...     def __init__(self):
    ...         a, b = Categorical([1, 2], label='a'), Categorical([1, 2], label='b')
    ...         self.mutables = [a, b, ExpressionConstraint(a < b, label='a < b')]
    >>> space = search_space(Pair())
    >>> list(space), list(space.grid())
    (['a', 'b'], [{'a': 1, 'b': 2}])
    """
    found = SearchSpace()
    constraints: list[Constraint] = []
    for label, leaf in space.simplify().items():
        if isinstance(leaf, Choice):
            choices = {label: leaf}
        elif isinstance(leaf, Constraint):
            constraints.append(leaf)
            continue
        elif isinstance(leaf, (nn.Module, BaseModelSpace)):
            choices = dict(search_space(leaf))
        else:
            raise TypeError(
                f"{type(space).__name__}.simplify() gives {leaf!r} for label {label!r}: nasx "
                "searches choices (Categorical, Numerical, ...), modules holding them and "
                "constraints"
            )
        for key, choice in choices.items():
            other = found.setdefault(key, choice)
            if other is not choice and not other.same_decision(choice):
                raise LabelConflictError(
                    f"label {key!r} is used by two different choices: {other!r} and {choice!r}"
                )
    if type(space).check_contains is not BaseModelSpace.check_contains:
        constraints.append(
            Constraint(_Contains(space), label=f"{type(space).__name__}.check_contains")
        )
    if constraints:
        found.constraints = tuple(constraints)
        found.model_fn = space.freeze
    return found


class _Contains:
    """A space's own ``check_contains`` as a constraint's rule (picklable with the space)."""

    def __init__(self, space: BaseModelSpace):
        self.space = space

    def __call__(self, arch: Mapping[str, Any]) -> bool:
        return self.space.check_contains(arch) is None
