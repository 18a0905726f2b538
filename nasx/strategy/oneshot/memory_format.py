"""Which memory format a supernet trains in: channels-last where it is both faster and safe.

Measured (``benchmarks/darts_step.py``, hub DARTS space, width 8, 5 cells, batch 16, 1 thread,
torch 2.14.1, 2-core x86 CPU): channels-last 2.13 s/step against NCHW 3.04 s/step (1.43x), so
it stays the CPU default. On an H100 (issue 12's table) channels-last made the fp32 step 1.19x
*slower*, so on GPUs the default is NCHW.

The unsafe case: oneDNN in torch 2.14.1 corrupts the heap (SIGABRT "corrupted size vs.
prev_size", or SIGSEGV) in the backward pass of a 1x1 ``Conv2d`` with stride > 1 and fewer than 8
input channels when the tensors are channels-last and torch uses one intra-op thread. Plain torch
reproduces it (``tests/strategy/oneshot/test_memory_format.py`` runs it in a subprocess). Such
a supernet trains in NCHW whatever was asked: a slower step beats a dead process.
"""

from __future__ import annotations

import logging
import warnings
from typing import Any

import torch
import torch.nn as nn

from .supernet.mixed_value import MixedConv2d
from .supernet.value_args import outcomes

__all__ = ["resolve_channels_last", "unsafe_channels_last_convs"]

_log = logging.getLogger(__name__)

# Below this many input channels a strided 1x1 convolution can crash oneDNN (2..7 crash, 8 passes).
_SAFE_IN_CHANNELS = 8


def unsafe_channels_last_convs(module: nn.Module) -> list[str]:
    """Names of the convolutions that oneDNN may crash on in channels-last format on CPU.

    Example:
        >>> net = nn.Sequential(nn.Conv2d(3, 4, 3), nn.Conv2d(4, 8, 1, stride=2), nn.Conv2d(8, 8, 1, stride=2))
        >>> unsafe_channels_last_convs(net)
        ['1']
    """

    def risky(kernels: list[Any], strides: list[Any], in_channels: list[int]) -> bool:
        pairs = [(k, k) if isinstance(k, int) else tuple(k) for k in kernels]
        biggest_stride = max(max(s) if isinstance(s, (tuple, list)) else s for s in strides)
        return (1, 1) in pairs and biggest_stride > 1 and min(in_channels) < _SAFE_IN_CHANNELS

    def values(arg: Any) -> list[Any]:  # every value a (possibly searched) argument takes
        return [v for _, v in outcomes(arg)]

    unsafe = []
    for name, m in module.named_modules():
        if isinstance(m, nn.Conv2d):
            if risky([m.kernel_size], [m.stride], [m.in_channels]):
                unsafe.append(name)
        elif isinstance(m, MixedConv2d):  # a searched conv: unsafe if any arch makes it so
            a = m.args
            if risky(values(a["kernel_size"]), values(a["stride"]), values(a["in_channels"])):
                unsafe.append(name)
    return unsafe


def resolve_channels_last(requested: bool | None, module: nn.Module, device_type: str) -> bool:
    """Whether to train ``module`` channels-last on ``device_type`` ('cpu', 'cuda', ...).

    ``requested=None`` (auto) means channels-last on CPU, NCHW elsewhere (the measured faster
    choice). On CPU a module with a convolution from :func:`unsafe_channels_last_convs` always gets
    NCHW; a warning says so when channels-last was asked for explicitly.

    Example:
        >>> net = nn.Sequential(nn.Conv2d(3, 16, 3), nn.Conv2d(16, 16, 1, stride=2))
        >>> resolve_channels_last(None, net, 'cpu'), resolve_channels_last(None, net, 'cuda')
        (True, False)
        >>> resolve_channels_last(None, nn.Conv2d(4, 4, 1, stride=2), 'cpu')
        False
    """
    wanted = (device_type == "cpu") if requested is None else bool(requested)
    if not wanted or device_type != "cpu":
        return wanted
    unsafe = unsafe_channels_last_convs(module)
    if not unsafe:
        return True
    message = (
        f"training in NCHW instead of channels-last: on CPU, torch {torch.__version__}'s oneDNN "
        f"can crash the process in the backward pass of a strided 1x1 convolution with fewer than "
        f"{_SAFE_IN_CHANNELS} input channels ({len(unsafe)} here, e.g. {unsafe[0]!r})"
    )
    if requested:
        warnings.warn(message, RuntimeWarning, stacklevel=3)
    else:
        _log.info(message)
    return False
