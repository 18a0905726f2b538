"""Model spaces: choices, labels, ``model_context`` and search-space extraction.

Declare a space as an ``nn.Module`` whose constructor contains choices, list its decisions with
:func:`search_space`, and rebuild any arch as a plain model with :func:`model_context`.
This package imports nothing from strategies, evaluators or experiments.
"""

from .base import ModelSpace, MutableModule
from .cell import Cell
from .choice import Categorical, CategoricalMultiple, Choice, choice
from .context import current_arch, ensure_frozen, model_context
from .errors import InvalidArchError, LabelConflictError
from .fingerprint import fingerprint_differences, space_fingerprint
from .input_choice import ChosenInputList, ChosenInputs, InputChoice
from .labels import label_scope
from .layer_choice import LayerChoice
from .mutable_ops import (
    MutableBatchNorm1d,
    MutableBatchNorm2d,
    MutableConv1d,
    MutableConv2d,
    MutableConv3d,
    MutableDropout,
    MutableEmbedding,
    MutableLayerNorm,
    MutableLinear,
)
from .repeat import Repeat
from .search_space import SearchSpace, search_space

__all__ = [
    "Categorical",
    "CategoricalMultiple",
    "Cell",
    "Choice",
    "ChosenInputList",
    "ChosenInputs",
    "InputChoice",
    "InvalidArchError",
    "LabelConflictError",
    "LayerChoice",
    "ModelSpace",
    "MutableBatchNorm1d",
    "MutableBatchNorm2d",
    "MutableConv1d",
    "MutableConv2d",
    "MutableConv3d",
    "MutableDropout",
    "MutableEmbedding",
    "MutableLayerNorm",
    "MutableLinear",
    "MutableModule",
    "Repeat",
    "SearchSpace",
    "choice",
    "current_arch",
    "ensure_frozen",
    "fingerprint_differences",
    "label_scope",
    "model_context",
    "search_space",
    "space_fingerprint",
]
