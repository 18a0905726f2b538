"""Gradient and metric averaging across DDP ranks, done by hand (no Lightning import here)."""

from __future__ import annotations

import torch
import torch.distributed as dist


def world_size() -> int:
    """Number of DDP processes (1 when torch.distributed is not initialised)."""
    return dist.get_world_size() if dist.is_available() and dist.is_initialized() else 1


def average_across_ranks(tensors: list[torch.Tensor | None]) -> None:
    """All-reduce (mean) ``tensors`` in place across DDP ranks, as one flat buffer.

    >>> t = torch.ones(2); average_across_ranks([t]); t   # one process: unchanged
    tensor([1., 1.])
    """
    if world_size() == 1:
        return
    present = [t for t in tensors if t is not None]  # a parameter without a gradient has None
    if not present:
        return
    flat = torch.cat([t.reshape(-1) for t in present])
    dist.all_reduce(flat)
    flat /= world_size()
    offset = 0
    for t in present:
        t.copy_(flat[offset : offset + t.numel()].view_as(t))
        offset += t.numel()
