"""``space.freeze(arch)`` keeps the space's weights: copy them into the model an arch selects.

The model an arch selects is built afresh under :func:`~nasx.space.model_context` (so its
structure is exactly the rebuilt model's), then every parameter and buffer that has a counterpart
in the space takes the space's values. Counterparts are found by walking the two module trees
side by side:

- a ``LayerChoice`` (or ``ValueSwitch``) of the space stands for the candidate the arch picks:
  ``conv.<value>.weight`` in the space is ``conv.weight`` in the model;
- a ``Repeat`` stands for its first ``depth`` blocks (``blocks.<i>`` in both);
- every other module is matched child by child, by name, and its own tensors by name when the
  shapes agree. A tensor whose shape the arch changes (a searched width that is not the space's
  default) has no counterpart and keeps its fresh initialisation, as in NNI, whose
  ``ParametrizedModule.freeze`` builds those layers anew.

The model owns copies (training it leaves the space as it was), on the space's device.

    >>> import torch, torch.nn as nn
    >>> from nasx.space import LayerChoice, ModelSpace
    >>> class Net(ModelSpace):
    ...     def __init__(self):
    ...         super().__init__()
    ...         self.op = LayerChoice([nn.Linear(2, 2), nn.Linear(2, 2, bias=False)], label='op')
    >>> space = Net()
    >>> model = space.freeze({'op': 1})
    >>> torch.equal(model.op.weight, space.op[1].weight)
    True
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import torch
import torch.nn as nn
from torch.nn.parameter import is_lazy

from .input_choice import InputChoice
from .layer_choice import LayerChoice
from .repeat import Repeat
from .value_switch import ValueSwitch

__all__ = ["copy_space_weights", "module_pairs"]


def module_pairs(
    space: nn.Module, model: nn.Module, arch: dict[str, Any]
) -> Iterator[tuple[nn.Module, nn.Module]]:
    """``(space module, model module)`` pairs that hold the same weights for ``arch``."""
    if isinstance(space, LayerChoice):
        if space.label in arch:
            yield from module_pairs(space[arch[space.label]], model, arch)
        return
    if isinstance(space, ValueSwitch):
        if space.label in arch:
            yield from module_pairs(space.candidate(arch[space.label]), model, arch)
        return
    if isinstance(space, Repeat):
        if isinstance(model, nn.Sequential):
            blocks = space.blocks
            for i, block in enumerate(model):
                if i < len(blocks):
                    yield from module_pairs(blocks[i], block, arch)
        return
    if isinstance(space, InputChoice):
        return  # no weights
    yield space, model
    for name, child in model.named_children():
        counterpart = space._modules.get(name)
        if counterpart is not None:
            yield from module_pairs(counterpart, child, arch)


def _same(source: torch.Tensor | None, target: torch.Tensor | None) -> bool:
    return (
        source is not None
        and target is not None
        and not is_lazy(source)  # a lazy layer's weights have no shape until its first call
        and not is_lazy(target)
        and source.shape == target.shape
        and not target.is_meta  # built on the meta device on purpose (cost counting): no data
        and not source.is_meta  # a space built on the meta device has no weights to give
    )


def copy_space_weights(space: nn.Module, model: nn.Module, arch: dict[str, Any]) -> int:
    """Copy ``space``'s parameters and buffers into ``model`` (the model ``arch`` selects, built
    under ``model_context(arch)``) where they correspond; returns how many tensors were copied.

    A module is matched only by one of its own class (or a ``Mutable*`` layer by its ``torch.nn``
    layer), so a same-named module of another kind never receives foreign weights.
    """
    copied = 0
    for source, target in module_pairs(space, model, arch):
        if not isinstance(source, type(target)):
            continue
        for name, param in target._parameters.items():
            theirs = source._parameters.get(name)
            if param is not None and _same(theirs, param):
                assert theirs is not None
                param.data = theirs.detach().clone()  # in place: ties within the model remain
                param.requires_grad_(theirs.requires_grad)
                copied += 1
        for name, buffer in list(target._buffers.items()):
            their_buffer = source._buffers.get(name)
            if buffer is not None and _same(their_buffer, buffer):
                assert their_buffer is not None
                target._buffers[name] = their_buffer.detach().clone()
                copied += 1
    devices = {t.device for t in space.parameters()} | {t.device for t in space.buffers()}
    built_on_meta = any(t.is_meta for t in model.parameters())
    if len(devices) == 1 and not built_on_meta:
        (device,) = devices
        if device.type not in ("cpu", "meta"):
            model.to(device)  # fresh tensors join the copied ones
    model.train(space.training)
    return copied
