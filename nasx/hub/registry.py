"""Every hub space as a row: its class, a small configuration, the input it expects.

``list_spaces()`` names them, ``space_entry(name)`` gives the row; tests and docs walk this table
rather than hand lists, so a space added here is tested everywhere at once (as timm's registry
is). The published, full-size configurations of searched models are in
:mod:`nasx.hub.pretrained` (``available_models()``).

Most rows take images (``input_kind='image'``: float ``(channels, height, width)``); the GPT
language-model space takes token ids (``'tokens'``: ``input_size`` is ``(sequence length,)``, ids
below the row's ``vocab_size``). ``entry.example_input(batch)`` builds either, so code that walks
the table runs every row; code that needs images (``nasx run``'s classification pipelines) asks
``list_spaces('image')``.

    >>> list_spaces()[:3]
    ['amoebanet', 'autoformer', 'darts']
    >>> entry = space_entry('darts')
    >>> entry.cls.__name__, entry.small, entry.input_size
    ('DARTS', {'width': 4, 'num_cells': 3}, (3, 16, 16))
    >>> space_entry('gpt').example_input(2).shape, 'gpt' in list_spaces('image')
    (torch.Size([2, 16]), False)
"""

from __future__ import annotations

from typing import Any, Literal, NamedTuple

import torch
from torch import nn

from .autoformer import AutoFormer
from .gpt import GPTSpace
from .mnasnet import MnasNet
from .mobilenetv3 import MobileNetV3Space
from .nasbench101 import NasBench101
from .nasbench201 import NasBench201
from .nds import DARTS, ENAS, PNAS, AmoebaNet, NASNet
from .proxylessnas import ProxylessNAS
from .shufflenet import ShuffleNetSpace
from .spinenet import SpineNet

#: The inputs a hub space takes, float images (``'image'``) or int64 token ids (``'tokens'``).
InputKind = Literal["image", "tokens"]


class HubSpace(NamedTuple):
    """One hub space: ``cls(**small)`` is a quick-to-build instance taking ``input_size`` inputs
    of kind ``input_kind``."""

    cls: type[nn.Module]
    small: dict[str, Any]
    input_size: tuple[int, ...]  # one sample: (channels, height, width), or (tokens,)
    input_kind: InputKind = "image"  # float images, or int64 token ids below small['vocab_size']

    def example_input(self, batch: int = 1, seed: int = 0) -> torch.Tensor:
        """A random batch of ``batch`` inputs the space takes: ``[batch, *input_size]`` floats
        (``'image'``) or int64 token ids (``'tokens'``).

        Example:
            >>> space_entry('darts').example_input(2).shape
            torch.Size([2, 3, 16, 16])
        """
        g = torch.Generator().manual_seed(seed)
        if self.input_kind == "tokens":
            return torch.randint(
                0, self.small["vocab_size"], (batch, *self.input_size), generator=g
            )
        return torch.randn(batch, *self.input_size, generator=g)


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
    "gpt": HubSpace(
        GPTSpace,
        {
            "vocab_size": 32,
            "block_size": 16,
            "search_embed_dim": (16, 32),
            "search_depth": (1, 2),
            "search_num_heads": (1, 2),
            "search_mlp_ratio": (1.0, 2.0),
            "head_dim": 8,
        },
        (16,),
        "tokens",
    ),
}


def list_spaces(input_kind: InputKind | None = None) -> list[str]:
    """The names of the hub's spaces, sorted; only those taking ``input_kind`` inputs when given
    (``'image'`` or ``'tokens'``)."""
    if input_kind not in (None, "image", "tokens"):
        raise ValueError(f"input_kind must be None, 'image' or 'tokens', got {input_kind!r}")
    return sorted(n for n, e in _SPACES.items() if input_kind in (None, e.input_kind))


def space_entry(name: str) -> HubSpace:
    """The row of space ``name``; ValueError listing the names otherwise."""
    if name not in _SPACES:
        raise ValueError(f"unknown hub space {name!r}; available: {', '.join(list_spaces())}")
    return _SPACES[name]
