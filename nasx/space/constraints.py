"""Constraints between choices: relations every arch of a space must satisfy, declared once.

A constraint is declared on the space (``self.add_constraint(...)`` in its constructor, a
``constraints = [...]`` class attribute, or :func:`add_constraint` on a built space) and travels
with its :class:`~nasx.space.SearchSpace`: ``sample()`` and ``grid()`` then give only archs that
satisfy every constraint, strategies check the archs they build themselves (mutations, TPE's
asks), and :meth:`~nasx.space.SearchSpace.count_valid` says how many archs are left. Three kinds
of rule are accepted:

- a boolean expression of choices (:class:`~nasx.space.MutableExpression`), e.g.
  ``implies(kernel == 7, expansion <= 3)``;
- a plain function ``f(arch) -> bool`` over the arch dict;
- an object with ``check(arch, model_fn) -> reason | None``: nasx's filters, e.g.
  ``CostFilter(input_shape, params=(None, 1e6), flops=...)`` for a parameter or FLOPs budget
  (the model is built on the ``meta`` device, so a check costs milliseconds, not a training run).

Cell spaces get a ready-made rule, :func:`max_ops_per_cell` ("at most two skip connections per
cell"), and :func:`at_most` counts a value over any labels.

    >>> from nasx.space import Categorical, SearchSpace
    >>> kernel = Categorical([3, 5, 7], label='kernel')
    >>> expansion = Categorical([3, 6], label='expansion')
    >>> space = SearchSpace(kernel=kernel, expansion=expansion).with_constraints(
    ...     Constraint(implies(kernel == 7, expansion <= 3), label='k7 -> e3'))
    >>> space.violations({'kernel': 7, 'expansion': 6})
    ['k7 -> e3']
    >>> sorted((a['kernel'], a['expansion']) for a in space.grid())
    [(3, 3), (3, 6), (5, 3), (5, 6), (7, 3)]
    >>> print(space.count_valid())
    5 of 6 archs satisfy the constraints (exact, by enumeration)
"""

from __future__ import annotations

import itertools
import json
import math
import random
import statistics
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import torch.nn as nn

from .cell import CELL_LABEL_PATTERN
from .errors import ConstraintViolation, InvalidArchError
from .expression import Mutable, MutableExpression

if TYPE_CHECKING:
    from .search_space import SearchSpace

__all__ = [
    "Constraint",
    "EmptySpaceError",
    "ExpressionConstraint",
    "ValidCount",
    "add_constraint",
    "at_most",
    "implies",
    "max_ops_per_cell",
]

# Random archs drawn for one valid sample before giving up (SearchSpace.max_rejections).
MAX_REJECTIONS = 1000
# Up to this many archs a space is enumerated: exact counts, and the fallback of a sampler that
# found nothing by rejection. Constraints that build models are slower per arch: a smaller limit.
ENUMERATE_LIMIT = 100_000
ENUMERATE_LIMIT_MODEL = 2_000


class EmptySpaceError(ConstraintViolation):
    """No arch (or almost none) of a space satisfies its constraints; the message says which
    constraint rejected how many archs and estimates the valid fraction."""


def _implies(a: Any, b: Any) -> bool:
    return (not a) or bool(b)


def implies(premise: Any, conclusion: Any) -> Any:
    """``premise implies conclusion`` (``not premise or conclusion``), lazily over choices.

    Example:
        >>> from nasx.space import Categorical
        >>> k, e = Categorical([3, 7], label='k'), Categorical([3, 6], label='e')
        >>> rule = implies(k == 7, e <= 3)
        >>> rule
        (Categorical([3, 7], label='k') == 7) implies (Categorical([3, 6], label='e') <= 3)
        >>> rule.freeze({'k': 7, 'e': 6}), rule.freeze({'k': 3, 'e': 6})
        (False, True)
    """
    if isinstance(premise, Mutable) or isinstance(conclusion, Mutable):
        return MutableExpression(_implies, "{} implies {}", [premise, conclusion])
    return _implies(premise, conclusion)


class Constraint:
    """One relation an arch must satisfy.

    Args:
        rule: a boolean :class:`~nasx.space.MutableExpression` of choices; a function
            ``f(arch) -> bool``; or an object with ``check(arch, model_fn) -> str | None`` (a
            nasx filter such as ``CostFilter``: it builds the model through ``model_fn``).
        label: how violations are named in errors and counts (default: the expression, the
            function's name or the filter's name).

    Example:
        >>> c = Constraint(lambda arch: arch['a'] + arch['b'] <= 3, label='a + b <= 3')
        >>> c.check({'a': 1, 'b': 2}), c.check({'a': 2, 'b': 2})
        (None, 'a + b <= 3')
    """

    rule: Any

    def __init__(self, rule: Any, label: str | None = None):
        if isinstance(rule, Constraint):
            rule, label = rule.rule, label or rule.label
        self.rule = rule
        self.needs_model = not isinstance(rule, Mutable) and callable(getattr(rule, "check", None))
        if not (isinstance(rule, Mutable) or self.needs_model or callable(rule)):
            raise TypeError(
                "a constraint is a boolean expression of choices (implies(k == 7, e <= 3)), a "
                "function arch -> bool, or a filter with check(arch, model_fn) (CostFilter); "
                f"got {type(rule).__name__}"
            )
        if label is None:
            if isinstance(rule, Mutable):
                label = repr(rule)
            else:
                label = getattr(rule, "name", None) or getattr(rule, "__name__", None)
                label = label or type(rule).__name__
        self.label = str(label)

    def check(
        self, arch: Mapping[str, Any], model_fn: Callable[[], nn.Module] | None = None
    ) -> str | None:
        """None when ``arch`` satisfies the constraint, else why not (starting with its label)."""
        if isinstance(self.rule, MutableExpression):
            ok = bool(self.rule.evaluate(arch))
        elif isinstance(self.rule, Mutable):  # a bare choice used as a flag
            ok = bool(self.rule.freeze(arch))
        elif self.needs_model:
            if model_fn is None:
                raise ValueError(
                    f"constraint {self.label!r} looks at the model, but this search space cannot "
                    "build one (search_space() of a ModelSpace instance can)"
                )
            reason = self.rule.check(dict(arch), model_fn)
            return None if reason is None else f"{self.label}: {reason}"
        else:
            ok = bool(self.rule(arch))
        return None if ok else self.label

    def __repr__(self) -> str:
        return f"Constraint({self.label!r})"


class ExpressionConstraint(Constraint, Mutable):
    """NNI's ``ExpressionConstraint(expression, label=...)``: a constraint that is a boolean
    expression of choices. Registered with ``self.add_mutable(...)`` in a space's constructor,
    as NNI's docs do, it joins the space's constraints (:func:`add_constraint`).

    As in NNI it is also a mutable, so it can stand among a space's mutables (a
    :class:`~nasx.space.BaseModelSpace`'s ``self.mutables = MutableList([a, b, constraint])``):
    ``leaf_mutables`` gives the expression's choices and then the constraint itself,
    ``check_contains`` reports a broken constraint as a
    :class:`~nasx.space.ConstraintViolation`, and ``freeze`` checks the sample and gives ``None``.

    Example:
        >>> from nasx.space import Categorical, MutableList
        >>> a, b = Categorical([1, 2], label='a'), Categorical([1, 2], label='b')
        >>> ExpressionConstraint(a <= b, label='a <= b').check({'a': 2, 'b': 1})
        'a <= b'
        >>> MutableList([a, b, ExpressionConstraint(a <= b, label='a <= b')]).freeze({'a': 1, 'b': 2})
        [1, 2, None]
    """

    rule: MutableExpression

    def __init__(self, expression: Any, *, label: str | None = None):
        if not isinstance(expression, MutableExpression):
            raise TypeError(
                "ExpressionConstraint takes a boolean expression of choices (a <= b, "
                f"implies(...)), got {type(expression).__name__}; for a function of the arch "
                "use Constraint(fn) / add_constraint"
            )
        super().__init__(expression, label)

    @property
    def expression(self) -> MutableExpression:
        """The boolean expression (NNI's attribute)."""
        return self.rule

    # -- the Mutable protocol (NNI's) --------------------------------------------------------
    def leaf_choices(self) -> Iterator[Any]:
        return self.rule.leaf_choices()

    def leaf_mutables(self, is_leaf: Callable[[Any], bool]) -> Iterator[Any]:
        yield from self.rule.leaf_mutables(is_leaf)
        if is_leaf(self):
            yield self

    def check_contains(self, sample: Mapping[str, Any]) -> InvalidArchError | None:
        error = self.rule.check_contains(sample)  # a missing label, a value not allowed
        if error is not None:
            return error
        if self.check(sample) is not None:
            return ConstraintViolation(f"the constraint {self.label!r} is not satisfied")
        return None

    def freeze(self, sample: Mapping[str, Any]) -> None:
        """Raise :class:`~nasx.space.ConstraintViolation` unless ``sample`` satisfies the
        constraint; ``None`` (NNI's)."""
        error = self.check_contains(sample)
        if error is not None:
            raise error

    def equals(self, other: Any) -> bool:
        return (
            type(other) is type(self) and other.label == self.label and self.rule.equals(other.rule)
        )

    def __repr__(self) -> str:
        return f"ExpressionConstraint({self.rule!r}, label={self.label!r})"


class _CountAtMost:
    """Picklable rule behind :func:`at_most` and :func:`max_ops_per_cell`."""

    def __init__(self, value: Any, n: int, labels: Sequence[str] | None, cell: str | None):
        self.value, self.n, self.labels, self.cell = value, n, labels, cell

    def counts(self, arch: Mapping[str, Any]) -> dict[str, int]:
        """``{group: how many of its labels take the value}`` (a group is a cell, or 'labels')."""
        if self.labels is not None:
            return {"labels": sum(arch[label] == self.value for label in self.labels)}
        out: Counter[str] = Counter()
        for label, value in arch.items():
            m = CELL_LABEL_PATTERN.match(label)
            if m and m.group("kind") == "op" and self.cell in (None, m.group("cell")):
                out[m.group("cell")] += value == self.value
        return dict(out)

    def __call__(self, arch: Mapping[str, Any]) -> bool:
        return all(c <= self.n for c in self.counts(arch).values())


def at_most(n: int, value: Any, labels: Iterable[str]) -> Constraint:
    """At most ``n`` of ``labels`` take ``value`` (e.g. two of a stage's LayerChoices are skips).

    Example:
        >>> c = at_most(1, 'skip', ['b1', 'b2', 'b3'])
        >>> c.check({'b1': 'skip', 'b2': 'conv', 'b3': 'conv'}), c.check({'b1': 'skip', 'b2': 'skip', 'b3': 'x'})
        (None, "at most 1 of 3 labels = 'skip'")
    """
    labels = list(labels)
    return Constraint(
        _CountAtMost(value, n, labels, None),
        label=f"at most {n} of {len(labels)} labels = {value!r}",
    )


def max_ops_per_cell(op: Any, n: int, cell: Any = None) -> Constraint:
    """At most ``n`` edges of each :class:`~nasx.space.Cell` choose ``op`` ("at most two skip
    connections per cell"); ``cell`` (a Cell or its label) limits the rule to that cell.

    Cells are found by their labels (``<cell>/op_<node>_<k>``, NNI's format), so the rule works on
    any Cell-based space, the hub's DARTS family included, and counts each cell (``normal``,
    ``reduce``) on its own.

    Example:
        >>> c = max_ops_per_cell('skip_connect', 1)
        >>> arch = {'normal/op_2_0': 'skip_connect', 'normal/op_2_1': 'sep_conv_3x3',
        ...         'reduce/op_2_0': 'skip_connect', 'reduce/op_2_1': 'skip_connect'}
        >>> c.check(arch)
        "at most 1 'skip_connect' per cell"
        >>> c.rule.counts(arch)
        {'normal': 1, 'reduce': 2}
    """
    name = cell if cell is None or isinstance(cell, str) else getattr(cell, "label", None)
    if cell is not None and not isinstance(name, str):
        raise TypeError(f"cell must be a Cell or its label, got {type(cell).__name__}")
    where = "per cell" if name is None else f"in cell {name!r}"
    return Constraint(_CountAtMost(op, n, None, name), label=f"at most {n} {op!r} {where}")


def add_constraint(module: nn.Module, rule: Any, label: str | None = None) -> Constraint:
    """Declare a constraint on ``module`` (a space, or any module inside one); returns it.

    :func:`~nasx.space.search_space` collects the constraints of every module of a space, so
    a constraint can be declared where its choices are (in a block's constructor) or added to
    a built space (a hub space) from outside.

    Example:
        >>> import torch.nn as nn
        >>> from nasx.space import ModelSpace, choice, search_space
        >>> class Net(ModelSpace):
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.fc = nn.Linear(4, choice('width', [8, 16, 32]))
        >>> space = Net()
        >>> _ = add_constraint(space, lambda arch: arch['width'] < 32, label='narrow')
        >>> sorted(a['width'] for a in search_space(space).grid())
        [8, 16]
    """
    constraint = Constraint(rule, label)
    module.__dict__.setdefault("_nasx_constraints", []).append(constraint)
    return constraint


def module_constraints(module: nn.Module) -> list[Constraint]:
    """The constraints declared on ``module`` itself: its class's ``constraints`` attribute and
    those added with :func:`add_constraint`."""
    from .base import ModelSpace, MutableModule

    declared: list[Any] = []
    if isinstance(module, (ModelSpace, MutableModule)):
        declared = list(getattr(type(module), "constraints", None) or ())
    return [
        c if isinstance(c, Constraint) else Constraint(c)
        for c in declared + module.__dict__.get("_nasx_constraints", [])
    ]


def arch_key(arch: Mapping[str, Any]) -> str:
    return json.dumps(arch, sort_keys=True, default=repr)


@dataclass(frozen=True)
class ValidCount:
    """How many archs of a space satisfy its constraints.

    ``exact`` counts come from enumerating the space; otherwise ``count`` is an estimate (the
    valid fraction of ``samples`` uniform archs times the space's size) and ``low``/``high`` its
    Wilson interval at ``confidence``. ``rejected`` counts, per constraint, the archs it was the
    first to reject.
    """

    count: float
    total: float
    exact: bool
    low: float
    high: float
    samples: int
    confidence: float = 0.95
    rejected: dict[str, int] = field(default_factory=dict)

    @property
    def fraction(self) -> float:
        """The valid fraction (estimated unless exact)."""
        if self.exact:
            return self.count / self.total if self.total else 0.0
        valid = self.samples - sum(self.rejected.values())
        return valid / self.samples if self.samples else math.nan

    def __str__(self) -> str:
        if self.exact:
            return (
                f"{int(self.count)} of {int(self.total)} archs satisfy the constraints "
                "(exact, by enumeration)"
            )
        level = f"{self.confidence:.0%}"
        if self.samples == 0:
            return "valid fraction unknown (no arch sampled)"
        lo = self.low / self.total if math.isfinite(self.total) else self.low
        hi = self.high / self.total if math.isfinite(self.total) else self.high
        frac = f"{self.fraction:.3g} valid ({level} CI {lo:.3g} to {hi:.3g})"
        if not math.isfinite(self.total):
            return f"{frac}, estimated from {self.samples} random archs (continuous space)"
        return (
            f"about {_fmt(self.count)} of {_fmt(self.total)} archs satisfy the constraints: "
            f"{frac}, estimated from {self.samples} random archs"
        )


def _fmt(x: float) -> str:
    return f"{x:.0f}" if x < 1e6 else f"{x:.3g}"


def wilson(successes: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval of a binomial proportion.

    >>> [round(x, 4) for x in wilson(0, 1000)]
    [0.0, 0.0038]
    """
    if n == 0:
        return 0.0, 1.0
    z = statistics.NormalDist().inv_cdf(0.5 + confidence / 2)
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return max(0.0, centre - half), min(1.0, centre + half)


def enumerate_limit(space: SearchSpace) -> int:
    return (
        ENUMERATE_LIMIT_MODEL if any(c.needs_model for c in space.constraints) else ENUMERATE_LIMIT
    )


def count_valid(
    space: SearchSpace,
    max_enumerate: int | None = None,
    samples: int = 2000,
    max_seconds: float | None = None,
    confidence: float = 0.95,
    seed: int = 0,
) -> ValidCount:
    """See :meth:`SearchSpace.count_valid`."""
    total = space.size
    limit = enumerate_limit(space) if max_enumerate is None else max_enumerate
    rejected: Counter[str] = Counter()
    start = time.monotonic()
    if total <= limit:
        valid = 0
        for i, arch in enumerate(space.grid(constrained=False)):
            failed = space.first_violation(arch)
            if failed is None:
                valid += 1
            else:
                rejected[failed] += 1
            if i == 19 and max_seconds is not None:
                projected = (time.monotonic() - start) / 20 * total
                if projected > max_seconds:  # too slow to enumerate in time: estimate instead
                    rejected.clear()
                    break
        else:
            return ValidCount(
                valid, total, True, valid, valid, int(total), confidence, dict(rejected)
            )
    rng = random.Random(seed)
    start, n = time.monotonic(), 0
    while n < samples and (max_seconds is None or time.monotonic() - start < max_seconds):
        failed = space.first_violation(space.sample(rng, constrained=False))
        if failed is not None:
            rejected[failed] += 1
        n += 1
    valid = n - sum(rejected.values())
    lo, hi = wilson(valid, n, confidence)
    scale = total if math.isfinite(total) else 1.0
    est = valid / n * scale if n else math.nan
    return ValidCount(est, total, False, lo * scale, hi * scale, n, confidence, dict(rejected))


def sample_valid(space: SearchSpace, rng: random.Random) -> dict[str, Any]:
    """A uniformly random arch that satisfies ``space``'s constraints, by rejection.

    After ``space.max_rejections`` rejections a small space is enumerated (and sampled from its
    valid archs, still uniformly); otherwise :class:`EmptySpaceError` says which constraint
    rejected how many archs and bounds the valid fraction.
    """
    rejected: Counter[str] = Counter()
    tries = space.max_rejections
    for _ in range(tries):
        arch = space.sample(rng, constrained=False)
        failed = space.first_violation(arch)
        if failed is None:
            return arch
        rejected[failed] += 1
    if space.size <= enumerate_limit(space):
        valid = space.valid_archs()
        if valid:
            return dict(rng.choice(valid))
        raise EmptySpaceError(
            f"no arch satisfies the constraints: none of the {int(space.size)} archs of the space "
            f"(exact, by enumeration); {tries} random archs were rejected by "
            f"{_describe(rejected)}. Relax a constraint or widen the space"
        )
    _, high = wilson(0, tries)
    raise EmptySpaceError(
        f"the constraints rejected {tries} random archs in a row ({_describe(rejected)}): the "
        f"valid fraction is below {high:.2g} (95% upper bound), so the space is empty or nearly "
        f"so (it has {_fmt(space.size)} archs before the constraints). Relax a constraint, or "
        "raise search_space.max_rejections to keep trying"
    )


def sample_valid_path(
    space: SearchSpace, draw: Callable[[], dict[str, Any]], what: str = "path"
) -> dict[str, Any]:
    """``draw()`` again until its arch satisfies ``space``'s constraints (one-shot path sampling
    from a learned distribution); :class:`EmptySpaceError` after ``space.max_rejections``."""
    arch = draw()
    if not space.constraints:
        return arch
    rejected: Counter[str] = Counter()
    for _ in range(space.max_rejections):
        failed = space.first_violation(arch)
        if failed is None:
            return arch
        rejected[failed] += 1
        arch = draw()
    raise EmptySpaceError(
        f"{space.max_rejections} sampled {what}s in a row broke the constraints "
        f"({_describe(rejected)}); the distribution puts almost no mass on valid archs, or the "
        "space has none (search_space(space).count_valid() tells)"
    )


def _describe(rejected: Counter[str]) -> str:
    return ", ".join(f"{label!r} rejected {n}" for label, n in rejected.most_common())


def first_violation(
    constraints: Sequence[Constraint],
    arch: Mapping[str, Any],
    model_fn: Callable[[], nn.Module] | None,
) -> str | None:
    """The label of the first constraint ``arch`` breaks (arch rules before model rules)."""
    for c in itertools.chain(
        (c for c in constraints if not c.needs_model), (c for c in constraints if c.needs_model)
    ):
        if c.check(arch, model_fn) is not None:
            return c.label
    return None
