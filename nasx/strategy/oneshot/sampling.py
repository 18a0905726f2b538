"""Helpers shared by path-sampling strategies: rank-identical random streams and rewards."""

from __future__ import annotations

import random
from typing import Any

import torch


def step_generator(seed: int, step: int, salt: int = 0) -> torch.Generator:
    """A CPU generator that depends only on (seed, step, salt): every DDP rank draws the same paths."""
    return torch.Generator().manual_seed((seed * 1_000_003 + step * 7919 + salt) % (2**63 - 1))


def step_rng(seed: int, step: int, salt: int = 0) -> random.Random:
    return random.Random(seed * 1_000_003 + step * 7919 + salt)


def batch_reward(output: torch.Tensor, target: torch.Tensor) -> float:
    """Accuracy for class logits and integer targets, else the negative mean squared error."""
    if output.dim() == 2 and not target.is_floating_point():
        return float((output.argmax(-1) == target).float().mean())
    return -float(((output.float() - target.float().view_as(output)) ** 2).mean())


def split_batch(batch: Any) -> tuple[Any, Any]:
    """``(inputs, target)`` of a ``(x, y)`` batch; path strategies' rewards need this shape."""
    if isinstance(batch, (list, tuple)) and len(batch) == 2:
        return batch[0], batch[1]
    raise TypeError(
        f"this strategy scores architectures on (inputs, target) batches, got a {type(batch).__name__}; "
        "pass reward_fn=(model, batch) -> float"
    )
