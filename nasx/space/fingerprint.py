"""A space's fingerprint: what must not change between a run and its resume.

``search_space`` names each decision's values; for a :class:`~nasx.space.LayerChoice` the values
are candidate names or indices, so reordering the candidates keeps the search space and silently
moves trained weights and results onto other modules. The fingerprint adds, per label, each
candidate's type and configuration, in order.

    >>> import torch.nn as nn
    >>> from nasx.space import LayerChoice, ModelSpace
    >>> class Net(ModelSpace):
    ...     def __init__(self, order):
    ...         super().__init__()
    ...         ops = [nn.ReLU(), nn.Tanh()]
    ...         self.act = LayerChoice(ops if order else ops[::-1], label='act')
    >>> space_fingerprint(Net(True))
    {'act': "Categorical([0, 1], label='act') over [0: ReLU(), 1: Tanh()]"}
    >>> fingerprint_differences(space_fingerprint(Net(True)), space_fingerprint(Net(False)))
    ["label 'act': was Categorical(...) over [0: ReLU(), 1: Tanh()], now ... over [0: Tanh(), 1: ReLU()]"]
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

import torch.nn as nn

from .base_space import BaseModelSpace
from .layer_choice import LayerChoice
from .search_space import search_space


def space_fingerprint(space: nn.Module | BaseModelSpace) -> dict[str, str]:
    """``{label: description}``: the choice, and for a LayerChoice its candidates in order (a
    space that is not an ``nn.Module``, a :class:`~nasx.space.BaseModelSpace` written NNI's
    way, has its choices only)."""
    found = {label: repr(c) for label, c in search_space(space).items()}
    if not isinstance(space, nn.Module):
        return found
    for module in space.modules():
        if isinstance(module, LayerChoice) and module.label in found:
            described = ", ".join(f"{key}: {_describe(m)}" for key, m in module.candidates())
            found[module.label] = f"{found[module.label]} over [{described}]"
    return found


def _describe(module: nn.Module) -> str:
    """A short, stable description: ``Conv2d(3, 8, kernel_size=(3, 3), ...)``; a module with
    children gets a digest of its full repr (short enough for a message, still exact)."""
    text = f"{type(module).__name__}({module.extra_repr()})"
    if any(True for _ in module.children()):
        text += "#" + hashlib.sha256(repr(module).encode()).hexdigest()[:8]
    return text


def fingerprint_differences(
    stored: Mapping[str, Any], now: Mapping[str, Any], what: str = "label"
) -> list[str]:
    """What differs between two fingerprints (or configurations), one line per key."""
    lines = []
    for key in stored:
        if key not in now:
            lines.append(f"{what} {key!r}: was {stored[key]}, now absent")
        elif stored[key] != now[key]:
            lines.append(f"{what} {key!r}: was {stored[key]}, now {now[key]}")
    lines += [f"{what} {key!r}: new ({now[key]})" for key in now if key not in stored]
    return lines
