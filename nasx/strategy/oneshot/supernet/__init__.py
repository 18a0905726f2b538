"""The supernet library: a model space turned into one weight-sharing network, and back.

- :mod:`.network`: :class:`Supernet` (the converted space, its architecture weights, how it runs).
- :mod:`.convert`: the one dispatcher from choices to mixed modules (``MIXED_VALUE_LAYERS``:
  one row per mixed value layer).
- :mod:`.state`: :class:`ArchState`, what the mixed modules read at forward time.
- :mod:`.mixed`, :mod:`.mixed_cell`: LayerChoice, InputChoice, Repeat and Cell stand-ins;
  :mod:`.batched_edges`: a cell's edges run as one wide op per candidate.
- :mod:`.mixed_value`, :mod:`.mixed_attention`, :mod:`.mixed_params`: layers that slice one shared
  largest weight over value choices; :mod:`.value_args`: their arguments' values under an arch.
- :mod:`.inherit`: a fixed model of an arch with the supernet's weights.

It knows nothing of training: the strategies beside this package (``..darts``, ``..enas``, ...)
and the Lightning module (``..lightning``) train it.
"""

from .inherit import SupernetLike, fixed_state_keys, inherit_weights, subnet
from .mixed import MixedInput, MixedLayer, MixedRepeat
from .mixed_cell import MixedCell
from .network import MIXED_TYPES, MixedModule, Supernet, softmax_weights
from .state import ArchState

__all__ = [
    "MIXED_TYPES",
    "ArchState",
    "MixedCell",
    "MixedInput",
    "MixedLayer",
    "MixedModule",
    "MixedRepeat",
    "Supernet",
    "SupernetLike",
    "fixed_state_keys",
    "inherit_weights",
    "softmax_weights",
    "subnet",
]
