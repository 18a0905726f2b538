"""NNI names that nasx does not provide: importing one works, using it says what to do instead.

A ported script that imports such a name (often only for a type hint or an ``isinstance``) keeps
importing; calling it, subclassing it or reading an attribute of it raises ``NotImplementedError``
naming the nasx way. ``docs/porting_from_nni.md`` lists each with the same reason, and
``tests/nni_compat/test_porting_table.py`` checks the two agree.

    >>> from nasx.space import GraphModelSpace
    >>> GraphModelSpace()
    Traceback (most recent call last):
    ...
    NotImplementedError: nni.nas.space.GraphModelSpace is not provided by nasx: nasx has no graph engine; ...
"""

from __future__ import annotations

from typing import Any, NoReturn

__all__ = ["NotProvided", "SPACE_NOT_PROVIDED"]


class NotProvided:
    """Stands for an NNI name nasx does not provide (see the module docstring)."""

    def __init__(self, nni_name: str, instead: str):
        self.nni_name = nni_name
        self.instead = instead

    @property
    def message(self) -> str:
        return f"{self.nni_name} is not provided by nasx: {self.instead}"

    def _refuse(self) -> NoReturn:
        raise NotImplementedError(self.message)

    def __call__(self, *args: Any, **kwargs: Any) -> NoReturn:
        self._refuse()

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):  # copy, pickle, doctest and inspect probe dunders
            raise AttributeError(name)
        self._refuse()

    def __mro_entries__(self, bases: tuple[Any, ...]) -> NoReturn:  # ``class X(Stub):``
        self._refuse()

    def __repr__(self) -> str:
        return f"<{self.nni_name}: not provided by nasx>"


_GRAPH = "nasx has no graph engine; a space is a ModelSpace, space.freeze(arch) gives the model"
_ONE_FORMAT = (
    "nasx has one model format: a space is a ModelSpace, search_space(space) its simplified form "
    "and space.freeze(arch) the model"
)
_CONTEXT = (
    "nasx keeps the construction state in one context variable (nasx.space.state); use "
    "model_context / frozen_context / label_scope"
)

SPACE_NOT_PROVIDED = {
    # nni.mutable
    "MutableAnnotation": (
        "nni.mutable.MutableAnnotation",
        "constraints are not mutables in nasx: declare them with add_constraint / "
        "ExpressionConstraint / Constraint(fn)",
    ),
    "uid": ("nni.mutable.uid", _CONTEXT),
    "reset_uid": ("nni.mutable.reset_uid", _CONTEXT),
    "NoContextError": ("nni.mutable.NoContextError", _CONTEXT),
    "ContextStack": ("nni.mutable.ContextStack", _CONTEXT),
    "get_current_context": ("nni.mutable.get_current_context", _CONTEXT),
    # nni.nas.nn.pytorch
    "recursive_freeze": (
        "nni.nas.nn.pytorch.recursive_freeze",
        "space.freeze(arch) builds the model with the space's weights; a Mutable* layer or "
        "ParametrizedModule has freeze(sample)",
    ),
    "MutationAnchor": ("nni.nas.nn.pytorch.MutationAnchor", _GRAPH),
    # nni.nas.space
    "GraphModelSpace": ("nni.nas.space.GraphModelSpace", _GRAPH),
    "Graph": ("nni.nas.space.Graph", _GRAPH),
    "Node": ("nni.nas.space.Node", _GRAPH),
    "Edge": ("nni.nas.space.Edge", _GRAPH),
    "IllegalGraphError": ("nni.nas.space.IllegalGraphError", _GRAPH),
    "MutationSampler": ("nni.nas.space.MutationSampler", _GRAPH),
    "StationaryMutator": ("nni.nas.space.StationaryMutator", _GRAPH),
    "InvalidMutation": ("nni.nas.space.InvalidMutation", _GRAPH),
    "MutatorSequence": ("nni.nas.space.MutatorSequence", _GRAPH),
    "Mutation": ("nni.nas.space.Mutation", _GRAPH),
    "ExecutableModelSpace": ("nni.nas.space.ExecutableModelSpace", _ONE_FORMAT),
    "RawFormatModelSpace": ("nni.nas.space.RawFormatModelSpace", _ONE_FORMAT),
    "SimplifiedModelSpace": ("nni.nas.space.SimplifiedModelSpace", _ONE_FORMAT),
    "ModelStatus": (
        "nni.nas.space.ModelStatus",
        "a trial carries its status: nasx.trial.Trial.status (a TrialStatus literal)",
    ),
    "Metrics": (
        "nni.nas.space.Metrics",
        "a trial carries its metrics: nasx.trial.Trial.metrics and .intermediates",
    ),
    "Mutator": (
        "nni.nas.space.Mutator (the graph mutator)",
        "nasx has no graph engine; the one-shot Mutator of NNI's one-shot docs is "
        "nasx.strategy.Mutator",
    ),
}
"""``name -> (NNI's dotted name, what to do instead)`` for :mod:`nasx.space`."""


def not_provided(name: str) -> NotProvided | None:
    """The stand-in for ``name`` in :mod:`nasx.space`, or None if NNI has no such name."""
    entry = SPACE_NOT_PROVIDED.get(name)
    return None if entry is None else NotProvided(*entry)
