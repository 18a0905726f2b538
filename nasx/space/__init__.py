"""Model spaces: choices, labels, ``model_context`` and search-space extraction.

Declare a space as an ``nn.Module`` whose constructor contains choices, list its decisions with
:func:`search_space`, and rebuild any arch as a plain model with :func:`model_context`. NNI's
``nni.mutable`` lives here too: choices combine into expressions (:class:`MutableExpression`),
:class:`Numerical` ranges, containers, ``frozen_context`` and NNI's search-space JSON
(:func:`to_nni_search_space`); ``docs/porting_from_nni.md`` maps every NNI name. Relations
between choices (``implies(k == 7, e <= 3)``, a parameter budget, at most two skips per cell) are
declared once with ``add_constraint`` (:mod:`nasx.space.constraints`).
This package imports nothing from strategies, evaluators or experiments.
"""

from typing import Any

from .auto_activation import AutoActivation
from .base import ModelSpace, MutableModule, add_mutable
from .base_space import BaseModelSpace
from .cell import Cell
from .choice import Categorical, CategoricalMultiple, Choice, choice
from .constraints import (
    Constraint,
    EmptySpaceError,
    ExpressionConstraint,
    ValidCount,
    add_constraint,
    at_most,
    implies,
    max_ops_per_cell,
)
from .containers import MutableDict, MutableList
from .context import (
    current_arch,
    current_model,
    ensure_frozen,
    frozen_context,
    frozen_factory,
    model_context,
)
from .derived import derived
from .errors import (
    ConstraintViolation,
    InvalidArchError,
    LabelConflictError,
    SampleMissingError,
    SampleValidationError,
)
from .expression import Mutable, MutableExpression, Sample
from .fingerprint import fingerprint_differences, space_fingerprint
from .input_choice import ChosenInputList, ChosenInputs, InputChoice, ReductionType
from .labels import auto_label, label_scope
from .layer_choice import LayerChoice
from .mutable_ops import (
    MutableBatchNorm1d,
    MutableBatchNorm2d,
    MutableBatchNorm3d,
    MutableConv1d,
    MutableConv2d,
    MutableConv3d,
    MutableConvTranspose2d,
    MutableDropout,
    MutableEmbedding,
    MutableGroupNorm,
    MutableLayerNorm,
    MutableLinear,
    MutableMultiheadAttention,
    mutable_layer,
)
from .nasbench101 import NasBench101Cell
from .nni_format import arch_from_nni, search_space_from_nni, to_nni_search_space
from .numerical import (
    Numerical,
    loguniform,
    normal,
    qloguniform,
    qnormal,
    quniform,
    uniform,
)
from .parametrized import ParametrizedModule
from .repeat import Repeat
from .search_space import SearchSpace, search_space
from .value_switch import ValueSwitch

LabeledMutable = Choice
"""NNI's ``nni.mutable.LabeledMutable``: every labelled mutable of nasx is a :class:`Choice`."""
MutableSymbol = Choice
"""NNI's ``nni.mutable.MutableSymbol``: a leaf decision, nasx's :class:`Choice`."""


def ValueChoice(  # noqa: N802 (NNI's class name)
    candidates: list[Any], *, prior: list[float] | None = None, label: str | None = None
) -> Categorical:
    """NNI 2.x's ``ValueChoice`` (deprecated in NNI 3.0): a :class:`Categorical`, ``prior``
    its weights.

    >>> ValueChoice([16, 32], label='w')
    Categorical([16, 32], label='w')
    """
    return Categorical(candidates, weights=prior, label=label)


__all__ = [
    "AutoActivation",
    "BaseModelSpace",
    "Categorical",
    "CategoricalMultiple",
    "Cell",
    "Choice",
    "ChosenInputList",
    "ChosenInputs",
    "Constraint",
    "ConstraintViolation",
    "EmptySpaceError",
    "ExpressionConstraint",
    "InputChoice",
    "InvalidArchError",
    "LabelConflictError",
    "LabeledMutable",
    "LayerChoice",
    "ModelSpace",
    "NasBench101Cell",
    "Mutable",
    "MutableBatchNorm1d",
    "MutableBatchNorm2d",
    "MutableBatchNorm3d",
    "MutableConv1d",
    "MutableConv2d",
    "MutableConv3d",
    "MutableConvTranspose2d",
    "MutableDict",
    "MutableDropout",
    "MutableEmbedding",
    "MutableExpression",
    "MutableGroupNorm",
    "MutableLayerNorm",
    "MutableLinear",
    "MutableMultiheadAttention",
    "MutableList",
    "MutableModule",
    "MutableSymbol",
    "Numerical",
    "ParametrizedModule",
    "ReductionType",
    "Repeat",
    "Sample",
    "SampleMissingError",
    "SampleValidationError",
    "SearchSpace",
    "ValidCount",
    "add_constraint",
    "add_mutable",
    "at_most",
    "arch_from_nni",
    "auto_label",
    "ValueChoice",
    "ValueSwitch",
    "choice",
    "current_arch",
    "current_model",
    "derived",
    "ensure_frozen",
    "fingerprint_differences",
    "frozen_context",
    "frozen_factory",
    "implies",
    "label_scope",
    "loguniform",
    "max_ops_per_cell",
    "model_context",
    "mutable_layer",
    "normal",
    "qloguniform",
    "qnormal",
    "quniform",
    "search_space",
    "search_space_from_nni",
    "space_fingerprint",
    "to_nni_search_space",
    "uniform",
]


def __getattr__(name: str) -> object:
    """``Mutable<Layer>`` for any other ``torch.nn`` layer (``MutablePReLU``), as in NNI; a
    stand-in that names the nasx way for NNI's names nasx does not provide
    (:mod:`nasx.space.not_provided`)."""
    from .not_provided import not_provided

    stand_in = not_provided(name)
    if stand_in is not None:
        return stand_in
    if name.startswith("Mutable"):
        from . import mutable_ops

        return getattr(mutable_ops, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
