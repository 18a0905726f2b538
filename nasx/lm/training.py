"""Training loops for language models: next-token loss, plain training, the sandwich rule on an
elastic supernet (OFA, Flextron) and knowledge distillation from a parent's logits (Minitron).

Plain PyTorch on purpose: these loops run for a few hundred steps on small models and must be
easy to read; a search at scale runs the same steps under Lightning (see docs/language_models.md).
Every model here maps ``[B, T]`` token ids to ``[B, T, vocab]`` logits.

    >>> import torch, torch.nn as nn
    >>> model = nn.Sequential(nn.Embedding(8, 8))  # logits straight from an embedding
    >>> batch = (torch.zeros(2, 4, dtype=torch.long), torch.ones(2, 4, dtype=torch.long))
    >>> round(lm_loss(model, batch).item(), 2) > 0
    True
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterable, Iterator
from typing import Any

import torch
import torch.nn as nn
import torch.nn.functional as F

from ..hub.gpt import largest_arch, smallest_arch

__all__ = [
    "distill",
    "evaluate_loss",
    "lm_loss",
    "sandwich_archs",
    "train",
    "train_elastic",
]

Batch = tuple[torch.Tensor, torch.Tensor]  # ([B, T] inputs, [B, T] next tokens)


def lm_loss(model: nn.Module, batch: Batch) -> torch.Tensor:
    """Mean next-token cross-entropy (nats per token) of ``model`` on ``batch``."""
    x, y = batch
    logits = model(x)  # [B, T, V]
    return F.cross_entropy(logits.flatten(0, 1), y.flatten())


def _batches(loader: Iterable[Batch]) -> Iterator[Batch]:
    """The loader's batches again and again (a step budget, not an epoch count)."""
    while True:
        empty = True
        for batch in loader:
            empty = False
            yield batch
        if empty:
            raise ValueError("the data loader yields no batch")


def _device(model: nn.Module) -> torch.device:
    return next(iter(model.parameters()), torch.empty(0)).device


def _to(batch: Batch, device: torch.device) -> Batch:
    return batch[0].to(device), batch[1].to(device)


@torch.no_grad()
def evaluate_loss(
    model: nn.Module, loader: Iterable[Batch], max_batches: int | None = None
) -> float:
    """Mean next-token loss over ``loader`` (its first ``max_batches`` batches), in eval mode.

    Example:
        >>> import torch.nn as nn
        >>> data = [(torch.zeros(1, 4, dtype=torch.long), torch.zeros(1, 4, dtype=torch.long))]
        >>> evaluate_loss(nn.Embedding(8, 8), data) > 0
        True
    """
    was_training = model.training
    model.eval()
    total, count = 0.0, 0
    device = _device(model)
    for batch in itertools.islice(loader, max_batches):
        x, y = _to(batch, device)
        total += lm_loss(model, (x, y)).item() * y.numel()
        count += y.numel()
    model.train(was_training)
    if count == 0:
        raise ValueError("the data loader yields no batch")
    return total / count


def _optimizer(model: nn.Module, lr: float) -> torch.optim.Optimizer:
    return torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)


def train(model: nn.Module, loader: Iterable[Batch], steps: int, lr: float = 1e-3) -> list[float]:
    """``steps`` AdamW steps on the next-token loss; returns the losses, one per step.

    Example:
        >>> model = nn.Embedding(8, 8)
        >>> data = [(torch.zeros(1, 4, dtype=torch.long), torch.ones(1, 4, dtype=torch.long))]
        >>> losses = train(model, data, steps=20, lr=0.1)
        >>> losses[-1] < losses[0]
        True
    """
    opt = _optimizer(model, lr)
    model.train()
    device = _device(model)
    losses = []
    for batch in itertools.islice(_batches(loader), steps):
        loss = lm_loss(model, _to(batch, device))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def sandwich_archs(search_space: Any, rng: random.Random, num_random: int = 2) -> list[dict]:
    """The sandwich rule's archs for one step: the largest, the smallest and ``num_random``
    uniformly sampled ones (OFA, BigNAS, Flextron): training the two extremes every step keeps
    both ends of the elastic model good, and the random ones cover the middle.

    Example:
        >>> from nasx.hub.gpt import GPTSpace
        >>> from nasx.space import search_space
        >>> ss = search_space(GPTSpace(block_size=4, search_depth=(1, 2), head_dim=4))
        >>> [a['depth'] for a in sandwich_archs(ss, random.Random(0), num_random=1)][:2]
        [2, 1]
    """
    return [largest_arch(search_space), smallest_arch(search_space)] + [
        search_space.sample(rng) for _ in range(num_random)
    ]


def train_elastic(
    supernet: Any,
    loader: Iterable[Batch],
    steps: int,
    lr: float = 1e-3,
    num_random: int = 2,
    seed: int = 0,
    teacher: nn.Module | None = None,
) -> list[float]:
    """Train a path-mode :class:`~nasx.strategy.oneshot.Supernet` with the sandwich rule.

    Each step accumulates the gradients of :func:`sandwich_archs`' subnets on one batch, then
    takes one AdamW step. With ``teacher``, the subnets learn the teacher's logits (KL) instead
    of the labels, as in-place distillation does; without it, the largest subnet is the teacher
    of the others from its own logits (BigNAS's in-place distillation). Returns the largest
    subnet's loss per step.
    """
    opt = _optimizer(supernet, lr)
    supernet.train()
    rng = random.Random(seed)
    device = _device(supernet)
    history = []
    for batch in itertools.islice(_batches(loader), steps):
        x, y = _to(batch, device)
        opt.zero_grad(set_to_none=True)
        soft: torch.Tensor | None = None
        if teacher is not None:
            with torch.no_grad():
                soft = teacher(x)
        for i, arch in enumerate(sandwich_archs(supernet.search_space, rng, num_random)):
            supernet.use_arch(arch)
            logits = supernet(x)
            if soft is None:  # the largest learns the labels and teaches the rest
                loss = F.cross_entropy(logits.flatten(0, 1), y.flatten())
                soft = logits.detach()
            else:
                loss = kl_logits(logits, soft)
            loss.backward()
            if i == 0:
                history.append(loss.item())
        opt.step()
    return history


def kl_logits(
    student: torch.Tensor, teacher: torch.Tensor, temperature: float = 1.0
) -> torch.Tensor:
    """KL(teacher || student) of the next-token distributions, mean per token (Minitron's
    logit distillation); ``[B, T, V]`` each.

    Example:
        >>> t = torch.randn(1, 3, 5)
        >>> kl_logits(t, t).abs().item() < 1e-6
        True
    """
    s = F.log_softmax(student.flatten(0, 1) / temperature, dim=-1)
    t = F.log_softmax(teacher.flatten(0, 1) / temperature, dim=-1)
    return F.kl_div(s, t, log_target=True, reduction="batchmean") * temperature**2


def distill(
    student: nn.Module,
    teacher: nn.Module,
    loader: Iterable[Batch],
    steps: int,
    lr: float = 1e-3,
    temperature: float = 1.0,
) -> list[float]:
    """``steps`` AdamW steps of ``student`` on :func:`kl_logits` to ``teacher``'s logits (the
    teacher is frozen, in eval mode); returns the KL per step.

    Example:
        >>> teacher, student = nn.Embedding(8, 8), nn.Embedding(8, 8)
        >>> data = [(torch.arange(8).view(1, 8), torch.zeros(1, 8, dtype=torch.long))]
        >>> kls = distill(student, teacher, data, steps=30, lr=0.1)
        >>> kls[-1] < kls[0]
        True
    """
    teacher.eval()
    student.train()
    opt = _optimizer(student, lr)
    device = _device(student)
    history = []
    for batch in itertools.islice(_batches(loader), steps):
        x, _ = _to(batch, device)
        with torch.no_grad():
            soft = teacher(x)
        loss = kl_logits(student(x), soft, temperature)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        history.append(loss.item())
    return history
