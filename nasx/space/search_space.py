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
from collections.abc import Iterator, Mapping
from typing import Any

import torch.nn as nn

from .base import ModelSpace, MutableModule
from .choice import Choice
from .errors import InvalidArchError, LabelConflictError


class SearchSpace(dict[str, Choice]):
    """``dict[label, Choice]``, in the order the space declares its choices."""

    def default(self) -> dict[str, Any]:
        """The arch of every choice's default (what the search form's ``forward`` runs)."""
        return {label: c.default for label, c in self.items()}

    def sample(
        self, rng: random.Random | None = None, *, seed: int | None = None
    ) -> dict[str, Any]:
        """A uniformly random arch, from ``rng`` or a fresh ``random.Random(seed)``."""
        if rng is None:
            rng = random.Random(seed)
        return {label: c.sample(rng) for label, c in self.items()}

    def grid(self) -> Iterator[dict[str, Any]]:
        """Every arch, the last label varying fastest."""
        labels = list(self)
        for values in itertools.product(*(self[label].grid() for label in labels)):
            yield dict(zip(labels, values))

    @property
    def size(self) -> int | float:
        """Number of distinct archs (product of the choices' sizes); ``math.inf`` when a choice
        is continuous (a :class:`~nasx.space.Numerical` without quantisation)."""
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


def search_space(space: nn.Module) -> SearchSpace:
    """Every choice in ``space`` (and its submodules), keyed by label.

    A label shared on purpose appears once; two different decisions under one label raise
    :class:`~nasx.space.LabelConflictError`. A fixed model (built under ``model_context``) has an
    empty search space.
    """
    if not isinstance(space, nn.Module):
        raise TypeError(
            f"search_space expects an nn.Module (a ModelSpace), got {type(space).__name__}"
        )
    found = SearchSpace()
    for module in space.modules():
        for c in _module_choices(module):
            other = found.setdefault(c.label, c)
            if other is not c and not other.same_decision(c):
                raise LabelConflictError(
                    f"label {c.label!r} is used by two different choices: {other!r} and {c!r}"
                )
    return found
