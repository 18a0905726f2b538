"""ProxylessNAS (Cai et al., ICLR 2019): binarised paths, so only the sampled path is computed and
memory stays near that of one model; architecture gradients come from binary gates."""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable
from typing import Any

import torch

from nasx.space.constraints import sample_valid_path

from .base import BaseOneShotStrategy
from .distributed import average_across_ranks
from .nni_args import apply_log_prob_every_n_step, refuse_nni_penalty
from .sampling import step_generator
from .topk import prob_key


class Proxyless(BaseOneShotStrategy):
    """Sample one path per step from softmax(alpha) per label; the arch step passes the gradient
    ``<dL/d out, out_k>`` of every alternative k to the alphas (recomputed one at a time).

    Args:
        arc_learning_rate: Adam learning rate of the alphas.
        cost: ``{label: {value: cost}}`` (e.g. latency in ms or MFLOPs of each candidate); adds
            ``penalty_weight * expected cost`` (differentiable in the alphas) to the arch loss.
        cost_fn: ``(probs: dict[label, Tensor]) -> Tensor``, a custom differentiable penalty
            (a profiler's estimate); added like ``cost``.
        penalty_weight: weight of the penalty.
        log_prob_every_n_step: NNI's name for ``log_arch_every``.
        nni_penalty: NNI's ``penalty=`` (a profiler-based penalty), refused naming ``cost=`` /
            ``cost_fn=`` (``penalty`` is this class's method for the expected cost).

    Example:
        >>> from nasx.strategy import Proxyless
        >>> Proxyless(cost={'op': {'big': 3.0, 'small': 1.0}}, penalty_weight=0.1).is_one_shot
        True
    """

    supernet_mode = "path"

    def __init__(
        self,
        arc_learning_rate: float = 1e-3,
        arc_weight_decay: float = 0.0,
        cost: dict[str, dict[Any, float]] | None = None,
        cost_fn: Callable[[dict[str, torch.Tensor]], torch.Tensor] | None = None,
        penalty_weight: float = 0.0,
        gradient_clip_val: float | None = 5.0,
        log_prob_every_n_step: int | None = None,
        **kwargs: Any,
    ):
        # NNI's penalty= arrives in kwargs (the name is this class's method)
        refuse_nni_penalty(kwargs.pop("penalty", None), "Proxyless", "cost=... or cost_fn=...")
        apply_log_prob_every_n_step(log_prob_every_n_step, kwargs, "Proxyless")
        super().__init__(gradient_clip_val=gradient_clip_val, **kwargs)
        self.arc_learning_rate, self.arc_weight_decay = arc_learning_rate, arc_weight_decay
        self.cost, self.cost_fn, self.penalty_weight = cost or {}, cost_fn, penalty_weight

    def configure_arch_optimizer(self, module: Any) -> torch.optim.Optimizer:
        return torch.optim.Adam(
            module.supernet.arch_parameters(),
            lr=self.arc_learning_rate,
            betas=(0.0, 0.999),
            weight_decay=self.arc_weight_decay,
        )

    def _probs(self, supernet: Any) -> dict[str, torch.Tensor]:
        return {label: a.softmax(-1) for label, a in supernet.alphas().items()}

    def _sample(
        self, supernet: Any, probs: dict[str, torch.Tensor], gen: torch.Generator
    ) -> dict[str, Any]:
        space = supernet.search_space

        def draw() -> dict[str, Any]:
            return {
                label: space[label].grid()[
                    int(torch.multinomial(probs[label].detach().float().cpu(), 1, generator=gen))
                ]
                for label in space
            }

        return sample_valid_path(space, draw)  # redrawn until within the space's constraints

    def penalty(self, probs: dict[str, torch.Tensor]) -> torch.Tensor | None:
        """Expected cost under the current probabilities (None without a cost model)."""
        terms: list[torch.Tensor] = []
        for label, table in self.cost.items():
            grid = self._need_supernet().search_space[label].grid()
            costs = torch.tensor(
                [float(table[prob_key(v)]) for v in grid], device=probs[label].device
            )
            terms.append((probs[label] * costs).sum())
        if self.cost_fn is not None:
            terms.append(self.cost_fn(probs))
        return functools.reduce(operator.add, terms) if terms else None

    def arch_step(self, module: Any, train_batch: Any, val_batch: Any, arch_optimizer: Any) -> None:
        supernet, step = module.supernet, self._step(module)
        arch_optimizer.zero_grad()
        probs = self._probs(supernet)
        supernet.use_arch(
            self._sample(supernet, probs, step_generator(self.seed, step, 1)), gates=probs
        )
        loss = module.loss(val_batch)
        extra = self.penalty(probs)
        if extra is not None and self.penalty_weight:
            loss = loss + self.penalty_weight * extra
        alphas = supernet.arch_parameters()
        module.run_backward(loss, inputs=alphas)
        average_across_ranks([a.grad for a in alphas])
        arch_optimizer.step()
        supernet.use_arch(supernet.state.arch)  # drop the gates

    def _step(self, module: Any) -> int:
        return module.step_index

    def before_weight_step(self, module: Any) -> None:
        supernet, step = module.supernet, self._step(module)
        with torch.no_grad():
            supernet.use_arch(
                self._sample(supernet, self._probs(supernet), step_generator(self.seed, step))
            )

    def before_validation(self, module: Any) -> None:
        arch = module.supernet.export()
        if not module.supernet.search_space.satisfies(arch):
            arch = self.export_top_models(1)[0]  # the most probable arch within the constraints
        module.supernet.use_arch(arch)

    def export_top_models(self, top_k: int = 1) -> list[dict[str, Any]]:
        from .topk import top_k_archs

        supernet = self._need_supernet()
        return top_k_archs(supernet.export(), supernet.export_probs(), supernet.search_space, top_k)
