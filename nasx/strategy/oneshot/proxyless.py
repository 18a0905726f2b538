"""ProxylessNAS (Cai et al., ICLR 2019): binarised paths, so only the sampled path is computed and
memory stays near that of one model; architecture gradients come from binary gates, over two
sampled paths per choice (the paper's Sec. 3.2.1) or over every alternative."""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Literal

import torch

from nasx.space.constraints import sample_valid_path

from .base import BaseOneShotStrategy
from .distributed import average_across_ranks
from .nni_args import nni_strategy_arguments
from .sampling import step_generator
from .topk import prob_key

if TYPE_CHECKING:  # imported when a run starts (it imports Lightning)
    from .lightning import OneShotModule


class Proxyless(BaseOneShotStrategy):
    """Sample one path per step from softmax(alpha) per label; the arch step passes the binary-gate
    gradient ``<dL/d out, out_k>`` of the alternatives k to the alphas.

    ``arch_paths='two'`` (the default; the paper's Sec. 3.2.1, "training binarized architecture
    parameters"): per label, two paths are drawn from the multinomial over its values (without
    replacement) and the others are masked out as if they did not exist: the two get the
    probabilities ``softmax(alpha_a, alpha_b)``, the path that runs is drawn from those, and
    only the other one is recomputed in backward. So an arch step costs about two sampled paths
    per choice. Only the two alphas move, and after the optimizer step they are shifted together
    so that ``exp(alpha_a) + exp(alpha_b)`` is what it was: every unsampled path keeps its
    probability exactly. The cost penalty sees the same two-path probabilities (zero outside the
    pair). This holds for every kind of choice (layer, input, repeat depth, value choices in
    sliced layers and attention heads), which all score alternatives by grid index; a label with
    one value has nothing to learn and is not gated.

    ``arch_paths='all'`` (NNI's and the earlier behaviour): every alternative is scored against
    the full softmax, recomputing each in backward (the chosen one too): an arch step costs
    about ``1 + n`` paths per choice of ``n`` values.

    Args:
        arc_learning_rate: Adam learning rate of the alphas.
        cost: ``{label: {value: cost}}`` (e.g. latency in ms or MFLOPs of each candidate); adds
            ``penalty_weight * expected cost`` (differentiable in the alphas) to the arch loss.
        cost_fn: ``(probs: dict[label, Tensor]) -> Tensor``, a custom differentiable penalty
            (a profiler's estimate); added like ``cost``.
        penalty_weight: weight of the penalty.
        arch_paths: ``'two'`` or ``'all'``: which alternatives the arch step scores (above).

    NNI's ``log_prob_every_n_step`` (nasx's ``log_arch_every``) and ``penalty=`` (a profiler-based
    penalty, refused naming ``cost=`` / ``cost_fn=``) are accepted as keywords and translated by
    :mod:`nasx.strategy.oneshot.nni_args`.

    Example:
        >>> from nasx.strategy import Proxyless
        >>> Proxyless(cost={'op': {'big': 3.0, 'small': 1.0}}, penalty_weight=0.1).arch_paths
        'two'
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
        arch_paths: Literal["two", "all"] = "two",
        **kwargs: Any,
    ):
        if arch_paths not in ("two", "all"):
            raise ValueError(
                f"Proxyless(arch_paths={arch_paths!r}): allowed are 'two' (two sampled paths per "
                "choice, the paper's update) and 'all' (every alternative, NNI's)"
            )
        nni_strategy_arguments(kwargs, "Proxyless", "cost=... or cost_fn=...")
        super().__init__(gradient_clip_val=gradient_clip_val, **kwargs)
        self.arc_learning_rate, self.arc_weight_decay = arc_learning_rate, arc_weight_decay
        self.cost, self.cost_fn, self.penalty_weight = cost or {}, cost_fn, penalty_weight
        self.arch_paths = arch_paths

    def configure_arch_optimizer(self, module: OneShotModule) -> torch.optim.Optimizer:
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

    def _sample_two(
        self, supernet: Any, gen: torch.Generator
    ) -> tuple[dict[str, Any], dict[str, torch.Tensor], dict[str, tuple[int, int]]]:
        """(arch, gate probabilities, {label: (chosen, other)}) of the two-path update.

        Per label of two or more values: a pair drawn from softmax(alpha) without replacement,
        the chosen path drawn from the pair's own softmax; the gate probabilities are that
        softmax scattered into zeros (differentiable in the pair's alphas only).
        """
        space, alphas = supernet.search_space, supernet.alphas()
        gates: dict[str, torch.Tensor] = {}
        pairs: dict[str, tuple[int, int]] = {}

        def draw() -> dict[str, Any]:
            arch: dict[str, Any] = {}
            for label in space:
                grid, alpha = space[label].grid(), alphas[label]
                p = alpha.detach().float().softmax(-1).cpu()
                if len(grid) < 2:
                    arch[label], gates[label] = grid[0], alpha.softmax(-1)
                    pairs.pop(label, None)
                    continue
                pair = torch.multinomial(p, 2, replacement=False, generator=gen)  # [2]
                p2 = alpha[pair.to(alpha.device)].softmax(-1)  # [2], grad to the pair's alphas
                c = int(torch.multinomial(p2.detach().float().cpu(), 1, generator=gen))
                chosen, other = int(pair[c]), int(pair[1 - c])
                arch[label], pairs[label] = grid[chosen], (chosen, other)
                gates[label] = torch.zeros_like(alpha).index_put((pair.to(alpha.device),), p2)
            return arch

        arch = sample_valid_path(space, draw)  # redrawn until within the space's constraints
        return arch, gates, pairs

    def arch_step(
        self,
        module: OneShotModule,
        train_batch: Any,
        val_batch: Any,
        arch_optimizer: torch.optim.Optimizer | None,
    ) -> None:
        assert arch_optimizer is not None  # configure_arch_optimizer made one
        supernet, step = module.supernet, self._step(module)
        arch_optimizer.zero_grad()
        gen = step_generator(self.seed, step, 1)
        pairs: dict[str, tuple[int, int]] = {}
        if self.arch_paths == "two":
            arch, probs, pairs = self._sample_two(supernet, gen)
        else:
            probs = self._probs(supernet)
            arch = self._sample(supernet, probs, gen)
        # (in 'two' mode a label of one value has no pair: nothing to learn, no gate)
        gates = {k: p for k, p in probs.items() if k in pairs} if pairs else probs
        supernet.use_arch(arch, gates=gates, gate_paths=pairs)
        loss = module.loss(val_batch)
        extra = self.penalty(probs)
        if extra is not None and self.penalty_weight:
            loss = loss + self.penalty_weight * extra
        alphas = supernet.arch_parameters()
        module.run_backward(loss, inputs=alphas)
        average_across_ranks([a.grad for a in alphas])
        before = {label: supernet.alphas()[label].detach().clone() for label in pairs}
        arch_optimizer.step()
        if pairs:
            rescale_pairs(supernet.alphas(), before, pairs)
        supernet.use_arch(arch)  # drop the gates

    def _step(self, module: OneShotModule) -> int:
        return module.step_index

    def before_weight_step(self, module: OneShotModule) -> None:
        supernet, step = module.supernet, self._step(module)
        with torch.no_grad():
            supernet.use_arch(
                self._sample(supernet, self._probs(supernet), step_generator(self.seed, step))
            )

    def before_validation(self, module: OneShotModule) -> None:
        arch = module.supernet.export()
        if not module.supernet.search_space.satisfies(arch):
            arch = self.export_top_models(1)[0]  # the most probable arch within the constraints
        module.supernet.use_arch(arch)

    def export_top_models(self, top_k: int = 1) -> list[dict[str, Any]]:
        from .topk import top_k_archs

        supernet = self._need_supernet()
        return top_k_archs(supernet.export(), supernet.export_probs(), supernet.search_space, top_k)


@torch.no_grad()
def rescale_pairs(
    alphas: Mapping[str, torch.Tensor],
    before: Mapping[str, torch.Tensor],
    pairs: Mapping[str, tuple[int, int]],
) -> None:
    """After a two-path update: keep the pair's new alphas up to a common shift that restores
    ``logsumexp`` over the pair, and every other alpha as it was (an optimizer's weight decay
    would have moved it), so the unsampled paths keep their probabilities.

    Example:
        >>> a = {'op': torch.tensor([0.0, 1.5, -0.5])}  # after the step: 1 and 2 moved
        >>> rescale_pairs(a, {'op': torch.tensor([0.0, 1.0, 0.0])}, {'op': (1, 2)})
        >>> round(float(torch.softmax(a['op'], -1)[0]), 4)  # 1 / (1 + e + 1), as before
        0.2119
    """
    for label, pair in pairs.items():
        alpha, old = alphas[label], before[label]
        idx = torch.tensor(pair, device=alpha.device)
        new = alpha[idx]
        offset = torch.logsumexp(new.float(), 0) - torch.logsumexp(old[idx].float(), 0)
        alpha.copy_(old)
        alpha[idx] = (new.float() - offset).to(alpha.dtype)
