"""When a one-shot search step can be replayed from a CUDA graph (see :mod:`nasx._cuda_graph`).

A step can be captured when it does the same tensor work every time: a mixture strategy (DARTS
first order, GumbelDARTS) on one GPU. Path-sampling strategies (ENAS, RandomOneShot, Proxyless)
run another sub-network at every step, second-order DARTS reads a norm on the host, DDP
all-reduces between backward passes, and fp16 mixed precision's loss scaler checks for
infinities on the host: those run eagerly.
"""

from __future__ import annotations

from typing import Any

from .distributed import world_size


def graph_blocker(module: Any) -> str | None:
    """Why ``module`` (a :class:`~nasx.strategy.oneshot.lightning.OneShotModule`) must run its
    search steps eagerly, or None when they can be replayed from a CUDA graph.

        >>> from types import SimpleNamespace
        >>> from nasx.strategy import DARTS
        >>> graph_blocker(SimpleNamespace(strategy=DARTS(cuda_graphs=False)))
        'cuda_graphs=False'
    """
    strategy = module.strategy
    if strategy.cuda_graphs is False:
        return "cuda_graphs=False"
    device = next(iter(module.supernet.parameters())).device
    if device.type != "cuda":
        return f"the supernet trains on {device.type}, not on a CUDA GPU"
    if strategy.graph_key() is None:
        return f"{type(strategy).__name__} {strategy.graph_blocker_reason}"
    if world_size() > 1:
        return "it runs under DDP (gradients are all-reduced between its backward passes)"
    trainer = getattr(module, "_trainer", None)
    precision = str(getattr(trainer, "precision", "")) if trainer is not None else ""
    if precision.startswith("16"):
        return f"precision {precision!r} scales the loss with checks on the host (use 'bf16-mixed')"
    return None
