"""Model cost counters: parameters, multiply-accumulates (MACs) and FLOPs of one forward pass.

MACs and FLOPs come from torch's own :class:`torch.utils.flop_counter.FlopCounterMode`, which
counts at the level of aten ops: every matrix product and convolution is seen, whether it comes
from a module (``nn.Conv2d``, ``nn.Linear``), a functional call (``F.linear``, ``x @ w``,
``torch.einsum``) or attention (``F.scaled_dot_product_attention``, ``nn.MultiheadAttention``).
A multiply-add is one MAC and two FLOPs; as in the MnasNet/MobileNet papers' "multiply-adds",
biases, norms, activations, pooling and other elementwise ops are not counted.

    >>> import torch.nn as nn
    >>> net = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.Flatten(), nn.Linear(8 * 4 * 4, 10))
    >>> count_parameters(net)
    1514
    >>> count_macs(net, (3, 4, 4))  # 8*16 outputs * 27 + 10 * 128
    4736
    >>> count_flops(net, (3, 4, 4))
    9472
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch
import torch.nn as nn
from torch.utils.flop_counter import FlopCounterMode, sdpa_flop_count

__all__ = ["count_flops", "count_macs", "count_parameters", "count_params"]


def count_parameters(model: nn.Module, trainable_only: bool = False) -> int:
    """Number of parameters, a parameter shared by several modules (tied weights) counted once.

    >>> shared = nn.Linear(3, 3)
    >>> count_parameters(nn.Sequential(shared, nn.ReLU(), shared))
    12
    """
    seen: dict[int, int] = {}
    for p in model.parameters():
        if not trainable_only or p.requires_grad:
            seen[id(p)] = p.numel()
    return sum(seen.values())


count_params = count_parameters  # the short name (timm's spelling)


def _sdpa_flops(query: Any, key: Any, value: Any, *args: Any, **kwargs: Any) -> int:
    return int(sdpa_flop_count(query, key, value))


# Ops FlopCounterMode has no formula for (in torch 2.14): the CPU kernel of
# F.scaled_dot_product_attention, which nn.MultiheadAttention calls.
_EXTRA_FORMULAS: dict[Any, Callable[..., int]] = {}
_cpu_sdpa = getattr(torch.ops.aten, "_scaled_dot_product_flash_attention_for_cpu", None)
if _cpu_sdpa is not None:
    _EXTRA_FORMULAS[_cpu_sdpa] = _sdpa_flops


def count_flops(
    model: nn.Module,
    input_shape: Sequence[int] | None = None,
    *,
    inputs: Any = None,
) -> int:
    """Floating-point operations of one forward pass (a multiply-add counts 2; see the module doc).

    Args:
        model: any module; it runs once in eval mode under ``torch.no_grad`` (its mode is
            restored), on the device of its first parameter. A model on the ``meta`` device is
            counted without computing anything (fast for published, full-size models).
        input_shape: the shape of one input without the batch dimension; the model gets zeros
            of shape ``(1, *input_shape)``.
        inputs: instead of ``input_shape``, the forward's argument(s) as given (a tensor, or a
            tuple of positional arguments), e.g. token ids.

    PyTorch's fused fast path for ``nn.TransformerEncoderLayer`` and ``nn.MultiheadAttention``
    (one op, which no counter sees into) is switched off while counting, so they are counted
    in full: projections, both attention products and the feed-forward layers.

        >>> count_flops(nn.Linear(4, 2), inputs=torch.zeros(3, 4))  # 3 rows * 2 * 4 MACs * 2
        48
    """
    if (input_shape is None) == (inputs is None):
        raise ValueError("give exactly one of input_shape (one sample's shape) or inputs")
    if inputs is None:
        assert input_shape is not None
        device = next((p.device for p in model.parameters()), torch.device("cpu"))
        inputs = torch.zeros(1, *input_shape, device=device)
    args = inputs if isinstance(inputs, tuple) else (inputs,)
    was_training = model.training
    fastpath = torch.backends.mha.get_fastpath_enabled()
    counter = FlopCounterMode(display=False, custom_mapping=_EXTRA_FORMULAS)
    try:
        model.eval()
        torch.backends.mha.set_fastpath_enabled(False)
        with torch.no_grad(), counter:
            model(*args)
    finally:
        torch.backends.mha.set_fastpath_enabled(fastpath)
        model.train(was_training)
    return int(counter.get_total_flops())


def count_macs(
    model: nn.Module,
    input_shape: Sequence[int] | None = None,
    *,
    inputs: Any = None,
) -> int:
    """Multiply-accumulates of one forward pass for one input of ``input_shape`` (no batch dim).

    Half of :func:`count_flops` (same arguments): conv, linear, matmul and attention products.

        >>> import torch.nn.functional as F
        >>> class Functional(nn.Module):
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.w = nn.Parameter(torch.zeros(5, 8))
        ...     def forward(self, x):
        ...         return F.linear(x, self.w)
        >>> count_macs(Functional(), (8,))  # 5 outputs * 8 inputs
        40
    """
    return count_flops(model, input_shape, inputs=inputs) // 2
