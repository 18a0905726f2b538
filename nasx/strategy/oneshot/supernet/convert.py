"""One dispatcher turns a model space into a supernet's modules: every choice below a module is
replaced by the mixed module that shares its candidates' weights.

Structural choices (``LayerChoice``, ``InputChoice``, ``Cell``, a ``Repeat`` of searched depth,
``ValueSwitch``) have one mixed module each; ``Mutable*`` layers whose arguments hold choices are
looked up in :data:`MIXED_VALUE_LAYERS`. Adding a mixed value layer is one row there (the mixed
class takes ``(source, state)`` and subclasses :class:`~.mixed_value.MixedValueOp`). A layer of
another kind that declares ``nasx_sliced_parameters`` becomes a
:class:`~.mixed_params.MixedSlicedParameters`; any other searched layer is refused, by name.

    >>> import torch.nn as nn
    >>> from nasx.space import Categorical, MutableLinear
    >>> from nasx.strategy.oneshot.supernet.state import ArchState
    >>> type(to_mixed(MutableLinear(2, Categorical([4, 8], label='w')), ArchState())).__name__
    'MixedLinear'
"""

from __future__ import annotations

from typing import Any

import torch.nn as nn

from nasx.space import Cell, InputChoice, LayerChoice, Repeat
from nasx.space.choice import Categorical
from nasx.space.mutable_ops import (
    MutableBatchNorm2d,
    MutableConv2d,
    MutableLayerNorm,
    MutableLinear,
    MutableMultiheadAttention,
)
from nasx.space.parametrized import ParametrizedModule
from nasx.space.value_switch import ValueSwitch

from .mixed import NONE_OPS, MixedInput, MixedLayer, MixedRepeat
from .mixed_attention import MixedMultiheadAttention
from .mixed_cell import MixedCell
from .mixed_params import MixedSlicedParameters, sliced_parameters
from .mixed_value import (
    MixedBatchNorm2d,
    MixedConv2d,
    MixedLayerNorm,
    MixedLinear,
    MixedSwitch,
    MixedValueOp,
)
from .state import ArchState

#: The mixed layer standing in for each ``Mutable*`` layer whose arguments hold choices.
MIXED_VALUE_LAYERS: dict[type[nn.Module], type[MixedValueOp]] = {
    MutableConv2d: MixedConv2d,
    MutableLinear: MixedLinear,
    MutableBatchNorm2d: MixedBatchNorm2d,
    MutableLayerNorm: MixedLayerNorm,
    MutableMultiheadAttention: MixedMultiheadAttention,
}


def to_mixed(
    module: nn.Module,
    state: ArchState,
    none_ops: tuple[str, ...] = NONE_OPS,
    partial_channels: int = 1,
) -> nn.Module:
    """``module`` with every choice below it (and itself) replaced by a mixed module, reading
    ``state``; children are converted in place (give it a copy of the space)."""

    def convert(child: nn.Module) -> nn.Module:
        return to_mixed(child, state, none_ops, partial_channels)

    mixed_value = _mixed_value_layer(module, state)
    if mixed_value is not None:  # value choices: a sliced shared weight (mixed_value.py)
        return mixed_value
    if isinstance(module, ValueSwitch):
        return MixedSwitch(
            module.label, [(v, convert(module.candidate(v))) for v in module.choice.values], state
        )
    if isinstance(module, LayerChoice):
        cands = [(v, convert(m)) for v, m in module.candidates()]
        return MixedLayer(module.label, cands, state, none_ops)
    if isinstance(module, InputChoice):
        return MixedInput(
            module.label,
            module.n_candidates,
            module.n_chosen,
            module.reduction,
            module.choice.grid(),
            state,
        )
    if isinstance(module, Repeat) and isinstance(module.depth_choice, Categorical):
        blocks = [convert(b) for b in module.blocks]
        return MixedRepeat(module.depth_choice.label, module.depth_choice.values, blocks, state)
    if isinstance(module, Cell):
        module = MixedCell(module, state, none_ops, partial_channels)  # then its children
    for name, child in list(module._modules.items()):
        if child is not None:  # in place: setattr would run a space's own __setattr__ again
            module._modules[name] = convert(child)
    return module


def _mixed_value_layer(module: nn.Module, state: ArchState) -> MixedValueOp | None:
    """The mixed layer of a ``Mutable*`` layer with choices among its arguments, else None."""
    choices = getattr(module, "choices", None)  # Mutable* layers (and other mutable modules)
    if not hasattr(type(module), "torch_layer") and isinstance(module, ParametrizedModule):
        if module.choices():  # built once, at the choices' defaults: the supernet cannot vary it
            raise _unshared_parametrized(module)
        return None
    if not hasattr(type(module), "torch_layer") or not callable(choices) or not choices():
        return None  # not a Mutable* layer, or no choice in its arguments: an ordinary layer
    layer: Any = module  # a Mutable* layer: MutableLayerLike
    mixed = MIXED_VALUE_LAYERS.get(type(module))
    if mixed is not None:
        return mixed(layer, state)
    if sliced_parameters(module):  # a layer declaring its width-sliced parameters
        return MixedSlicedParameters(layer, state)
    raise NotImplementedError(
        f"one-shot strategies cannot share weights over the value choices of a "
        f"{type(module).__name__}; supported: "
        f"{', '.join(t.__name__ for t in MIXED_VALUE_LAYERS)}. Use a LayerChoice, or a "
        "multi-trial strategy"
    )


def _unshared_parametrized(module: ParametrizedModule) -> NotImplementedError:
    """The refusal, by label, of a user's ParametrizedModule whose arguments hold choices: the
    supernet would hold it at the choices' defaults whatever arch is sampled (training with
    wrong shapes, or silently with the wrong value)."""
    labels = ", ".join(repr(c.label) for c in module.choices())
    wrapped = module._bound_type
    what = (
        f"a ParametrizedModule wrapping nn.{wrapped.__name__}"
        if wrapped
        else "a ParametrizedModule"
    )
    return NotImplementedError(
        f"one-shot strategies cannot search label(s) {labels} in {type(module).__name__} "
        f"({what}): it is built once, at the choices' defaults, so a supernet cannot share its "
        f"weights over their values. Size layers with nasx's Mutable* layers "
        f"({', '.join(t.__name__ for t in MIXED_VALUE_LAYERS)}), wrap other modules in a "
        "LayerChoice, or search the space with a multi-trial strategy"
    )
