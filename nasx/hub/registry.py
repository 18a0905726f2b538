"""Every hub space as a row: its class, a small configuration, the input it expects.

``list_spaces()`` names them, ``space_entry(name)`` gives the row; tests and docs walk this table
rather than hand lists, so a space added here is tested everywhere at once (as timm's registry
is). The published, full-size configurations of searched models are in
:mod:`nasx.hub.pretrained` (``available_models()``).

    >>> list_spaces()[:3]
    ['amoebanet', 'autoformer', 'darts']
    >>> entry = space_entry('darts')
    >>> entry.cls.__name__, entry.small, entry.input_size
    ('DARTS', {'width': 4, 'num_cells': 3}, (3, 16, 16))
"""

from __future__ import annotations

from typing import Any, NamedTuple

from torch import nn

from .autoformer import AutoFormer
from .mnasnet import MnasNet
from .mobilenetv3 import MobileNetV3Space
from .nasbench101 import NasBench101
from .nasbench201 import NasBench201
from .nds import DARTS, ENAS, PNAS, AmoebaNet, NASNet
from .proxylessnas import ProxylessNAS
from .shufflenet import ShuffleNetSpace
from .spinenet import SpineNet


class HubSpace(NamedTuple):
    """One hub space: ``cls(**small)`` is a quick-to-build instance taking ``input_size`` inputs."""

    cls: type[nn.Module]
    small: dict[str, Any]
    input_size: tuple[int, int, int]  # (channels, height, width) of one sample


_SPACES: dict[str, HubSpace] = {
    "darts": HubSpace(DARTS, {"width": 4, "num_cells": 3}, (3, 16, 16)),
    "nasnet": HubSpace(NASNet, {"width": 4, "num_cells": 3}, (3, 16, 16)),
    "enas": HubSpace(ENAS, {"width": 4, "num_cells": 3}, (3, 16, 16)),
    "amoebanet": HubSpace(AmoebaNet, {"width": 4, "num_cells": 3}, (3, 16, 16)),
    "pnas": HubSpace(PNAS, {"width": 4, "num_cells": 3}, (3, 16, 16)),
    "nasbench101": HubSpace(
        NasBench101, {"stem_out_channels": 8, "num_modules_per_stack": 1}, (3, 16, 16)
    ),
    "nasbench201": HubSpace(
        NasBench201, {"stem_out_channels": 4, "num_modules_per_stack": 1}, (3, 16, 16)
    ),
    "mnasnet": HubSpace(MnasNet, {"num_classes": 10}, (3, 32, 32)),
    "proxylessnas": HubSpace(ProxylessNAS, {"num_classes": 10}, (3, 32, 32)),
    "mobilenetv3": HubSpace(MobileNetV3Space, {"num_classes": 10}, (3, 32, 32)),
    "shufflenet": HubSpace(ShuffleNetSpace, {"num_labels": 10}, (3, 32, 32)),
    "autoformer": HubSpace(
        AutoFormer,
        {
            "search_embed_dim": (16, 32),
            "search_mlp_ratio": (1.0, 2.0),
            "search_num_heads": (1, 2),
            "search_depth": (1, 2),
            "img_size": 16,
            "patch_size": 4,
            "num_labels": 10,
        },
        (3, 16, 16),
    ),
    "spinenet": HubSpace(SpineNet, {"scaling": "49S"}, (3, 64, 64)),
}


def list_spaces() -> list[str]:
    """The names of the hub's spaces, sorted."""
    return sorted(_SPACES)


def space_entry(name: str) -> HubSpace:
    """The row of space ``name``; ValueError listing the names otherwise."""
    if name not in _SPACES:
        raise ValueError(f"unknown hub space {name!r}; available: {', '.join(list_spaces())}")
    return _SPACES[name]
