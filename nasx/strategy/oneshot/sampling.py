"""Helpers shared by path-sampling strategies: rank-identical random streams and rewards."""

from __future__ import annotations

import contextlib
import random
from collections.abc import Iterator
from typing import Any

import torch
import torch.nn as nn


def step_generator(seed: int, step: int, salt: int = 0) -> torch.Generator:
    """A CPU generator that depends only on (seed, step, salt): every DDP rank draws the same paths."""
    return torch.Generator().manual_seed((seed * 1_000_003 + step * 7919 + salt) % (2**63 - 1))


def step_rng(seed: int, step: int, salt: int = 0) -> random.Random:
    return random.Random(seed * 1_000_003 + step * 7919 + salt)


def batch_reward(output: torch.Tensor, target: torch.Tensor) -> float:
    """Accuracy for class scores and integer targets, else the negative mean squared error.

    Class scores come first after the batch (``[B, C]`` logits against ``[B]`` labels, or per
    pixel ``[B, C, H, W]`` against ``[B, H, W]``) or last (a language model's ``[B, T, V]``
    against ``[B, T]`` tokens: token accuracy).

        >>> batch_reward(torch.tensor([[2.0, 1.0], [0.0, 3.0]]), torch.tensor([0, 0]))
        0.5
        >>> logits = torch.zeros(1, 2, 2, 2); logits[0, 1, 0] = 1.0  # class 1 on the top row
        >>> batch_reward(logits, torch.tensor([[[1, 1], [0, 1]]]))
        0.75
        >>> tokens = torch.zeros(1, 3, 5); tokens[0, :, 4] = 1.0  # [B, T, V]: token 4 each time
        >>> round(batch_reward(tokens, torch.tensor([[4, 4, 0]])), 4)
        0.6667
    """
    if not torch.is_tensor(output):
        raise TypeError(
            f"the model's output is a {type(output).__name__}, not a tensor of scores: this "
            "strategy's default reward cannot score it; pass reward_fn=(model, batch) -> float"
        )
    if not target.is_floating_point() and output.dim() == target.dim() + 1 >= 2:
        if output.shape[:1] + output.shape[2:] == target.shape:  # [B, C, ...] against [B, ...]
            return float((output.argmax(1) == target).float().mean())
        if output.shape[:-1] == target.shape:  # [B, ..., C] against [B, ...]
            return float((output.argmax(-1) == target).float().mean())
        raise ValueError(
            f"the default reward scores class scores [B, C, ...] or [B, ..., C] against labels "
            f"[B, ...]; got scores {list(output.shape)} and labels {list(target.shape)}: pass "
            "reward_fn=(model, batch) -> float"
        )
    return -float(((output.float() - target.float().view_as(output)) ** 2).mean())


def scoring_model(supernet: nn.Module, inner: Any) -> nn.Module:
    """The model whose outputs a reward scores: the evaluator module's whole model when it built
    one around the supernet (a segmentation head on a searched backbone), else the supernet.

        >>> supernet = nn.Linear(2, 2)
        >>> class Module:  # an evaluator's LightningModule after set_model(supernet)
        ...     model = nn.Sequential(supernet, nn.Conv1d(2, 3, 1))
        >>> scoring_model(supernet, Module()) is Module.model, scoring_model(supernet, None) is supernet
        (True, True)
    """
    model = getattr(inner, "model", None)
    return model if isinstance(model, nn.Module) else supernet


@contextlib.contextmanager
def modes_kept(*models: nn.Module) -> Iterator[None]:
    """Put every module of ``models`` back in its own training mode after the block, however the
    block (a reward that calls ``eval()``) left it, and even when it raised. Restoring per module
    keeps a submodule that was deliberately in eval mode (frozen batch norm) there.

        >>> net = nn.Sequential(nn.Linear(2, 2), nn.BatchNorm1d(2).eval())
        >>> with modes_kept(net):
        ...     _ = net.eval()
        >>> net.training, net[1].training
        (True, False)
    """
    modes = [(m, m.training) for model in models for m in model.modules()]
    try:
        yield
    finally:
        for m, training in modes:
            m.training = training


def split_batch(batch: Any) -> tuple[Any, Any]:
    """``(inputs, target)`` of a ``(x, y)`` batch; path strategies' rewards need this shape."""
    if isinstance(batch, (list, tuple)) and len(batch) == 2:
        return batch[0], batch[1]
    raise TypeError(
        f"this strategy scores architectures on (inputs, target) batches, got a {type(batch).__name__}; "
        "pass reward_fn=(model, batch) -> float"
    )


def split_scored_batch(batch: Any) -> tuple[Any, torch.Tensor]:
    """``(inputs, target)`` for the default reward (:func:`batch_reward`), which scores tensor
    targets only: class labels, masks or values. Other targets (a detector's list of box
    dicts) are refused before the model runs, with what to pass instead.

        >>> split_scored_batch((torch.zeros(2, 3), torch.tensor([0, 1])))[1]
        tensor([0, 1])
        >>> split_scored_batch(([torch.zeros(3, 8, 8)], [{'boxes': torch.zeros(0, 4)}]))
        Traceback (most recent call last):
        TypeError: this strategy's default reward scores tensor targets ... pass reward_fn=(model, batch) -> float
    """
    inputs, target = split_batch(batch)
    if not torch.is_tensor(target):
        raise TypeError(
            "this strategy's default reward scores tensor targets (class labels, masks or "
            f"values), got a {type(target).__name__} of targets; "
            "pass reward_fn=(model, batch) -> float"
        )
    return inputs, target
