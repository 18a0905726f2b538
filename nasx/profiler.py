"""Model cost counters: parameters and multiply-accumulates (MACs) of conv and linear layers.

MACs are counted with forward hooks on one sample: a convolution costs
``output_elements * (in_channels / groups) * kernel_elements``, a linear layer
``output_elements * in_features`` (biases, norms, activations and pooling are not counted, as in
the MnasNet/MobileNet papers' "multiply-adds").

    >>> import torch.nn as nn
    >>> net = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.Flatten(), nn.Linear(8 * 4 * 4, 10))
    >>> count_parameters(net)
    1514
    >>> count_macs(net, (3, 4, 4))  # 8*16 outputs * 27 + 10 * 128
    4736
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
import torch.nn as nn

_CONVS = (nn.Conv1d, nn.Conv2d, nn.Conv3d)


def count_parameters(model: nn.Module, trainable_only: bool = False) -> int:
    """Number of parameters (shared tensors counted once)."""
    seen: dict[int, int] = {}
    for p in model.parameters():
        if not trainable_only or p.requires_grad:
            seen[id(p)] = p.numel()
    return sum(seen.values())


def count_macs(model: nn.Module, input_shape: Sequence[int]) -> int:
    """Multiply-accumulates of conv and linear layers for one input of ``input_shape`` (no batch dim).

    The model runs once in eval mode on zeros, under ``torch.no_grad``; its mode is restored.
    """
    total = 0

    def conv_hook(module: nn.Module, inputs: tuple, output: torch.Tensor) -> None:
        nonlocal total
        assert isinstance(module, nn.Conv2d)
        per_output = module.in_channels // module.groups * math.prod(module.kernel_size)
        total += output[0].numel() * per_output  # output[0]: the single sample

    def linear_hook(module: nn.Linear, inputs: tuple, output: torch.Tensor) -> None:
        nonlocal total
        total += output[0].numel() * module.in_features

    handles = []
    for m in model.modules():
        if isinstance(m, _CONVS):
            handles.append(m.register_forward_hook(conv_hook))
        elif isinstance(m, nn.Linear):
            handles.append(m.register_forward_hook(linear_hook))
    was_training = model.training
    try:
        model.eval()
        device = next((p.device for p in model.parameters()), torch.device("cpu"))
        with torch.no_grad():
            model(torch.zeros(1, *input_shape, device=device))
    finally:
        for h in handles:
            h.remove()
        model.train(was_training)
    return total
