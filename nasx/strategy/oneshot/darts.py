"""DARTS (first and second order) and GumbelDARTS: continuous relaxation of every choice.

DARTS (Liu et al., ICLR 2019) mixes all candidates with softmax(alpha) weights and alternates an
architecture step on validation data with a weight step on training data. The second-order
variant differentiates through one unrolled weight step ``w' = w - xi * dL_train/dw``:

    dL_val(w', a)/da - xi * d2L_train(w, a)/(da dw) . dL_val(w', a)/dw'

with the Hessian-vector product taken by central finite differences, as in the paper.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal

import torch
import torch.nn.functional as F

from nasx._checks import check_number

from .base import BaseOneShotStrategy
from .distributed import average_across_ranks
from .nni_args import LinearTemperature, gumbel_nni_arguments, nni_strategy_arguments
from .supernet import softmax_weights
from .topk import top_k_archs

if TYPE_CHECKING:  # imported when a run starts (it imports Lightning)
    from .lightning import OneShotModule


def second_order_arch_grad(
    loss_fn: Callable[[Any], torch.Tensor],
    weights: Sequence[torch.Tensor],
    alphas: Sequence[torch.Tensor],
    train_batch: Any,
    val_batch: Any,
    xi: float,
    eps_scale: float = 0.01,
) -> list[torch.Tensor]:
    """DARTS's unrolled architecture gradient (finite-difference Hessian-vector product).

    ``loss_fn(batch)`` runs the model with its current ``weights`` and ``alphas``. Weights are
    restored on return. Example on a tiny model (xi=0 gives the first-order gradient):

        >>> w, a = torch.ones(2, requires_grad=True), torch.zeros(2, requires_grad=True)
        >>> loss = lambda b: ((w * a.softmax(0)).sum() - b) ** 2
        >>> [g.shape for g in second_order_arch_grad(loss, [w], [a], 1.0, 2.0, xi=0.1)]
        [torch.Size([2])]
    """
    weights, alphas = list(weights), list(alphas)
    backup = [w.detach().clone() for w in weights]
    # 1. unrolled step w' = w - xi * dL_train(w, a)/dw
    g_train = torch.autograd.grad(loss_fn(train_batch), weights, allow_unused=True)
    with torch.no_grad():
        for w, g in zip(weights, g_train, strict=False):
            if g is not None:
                w.sub_(xi * g)
    # 2. gradients of L_val at w'
    grads = torch.autograd.grad(loss_fn(val_batch), alphas + weights, allow_unused=True)
    d_alpha = [
        torch.zeros_like(a) if g is None else g
        for a, g in zip(alphas, grads[: len(alphas)], strict=False)
    ]
    d_w = [
        torch.zeros_like(w) if g is None else g
        for w, g in zip(weights, grads[len(alphas) :], strict=False)
    ]
    # 3. Hessian-vector product: (dL_train(w+)/da - dL_train(w-)/da) / (2 eps), w+- = w +- eps d_w
    # reduce, not sum(): the same additions, but a Tensor to the type checker (sum starts at 0)
    norm = torch.sqrt(functools.reduce(operator.add, [(g.float() ** 2).sum() for g in d_w]))
    eps = eps_scale / float(norm.clamp(min=1e-12))
    hessian = []
    for sign in (1.0, -1.0):
        with torch.no_grad():
            for w, b, g in zip(weights, backup, d_w, strict=False):
                w.copy_(b + sign * eps * g)
        gs = torch.autograd.grad(loss_fn(train_batch), alphas, allow_unused=True)
        hessian.append(
            [torch.zeros_like(a) if g is None else g for a, g in zip(alphas, gs, strict=False)]
        )
    with torch.no_grad():
        for w, b in zip(weights, backup, strict=False):
            w.copy_(b)
    return [da - xi * (hp - hm) / (2 * eps) for da, hp, hm in zip(d_alpha, *hessian, strict=False)]


class DARTS(BaseOneShotStrategy):
    """Differentiable architecture search over LayerChoice, InputChoice, Repeat and Cell.

    Args:
        arc_learning_rate: Adam learning rate of the architecture weights (paper: 3e-4).
        arc_weight_decay: their weight decay (paper: 1e-3).
        order: 1 (first-order, the default) or 2 (unrolled second-order).
        unrolled_lr: ``xi`` of the unrolled step; default: the weight optimizer's learning rate.
        cost_penalty: ``fn(probs, search_space) -> Tensor`` added to the architecture loss, e.g.
            :class:`~nasx.strategy.oneshot.cost.CostPenalty` (expected latency or MACs).
        gradient_clip_val, warmup_epochs, ...: see :class:`BaseOneShotStrategy`.

    NNI's ``log_prob_every_n_step`` (nasx's ``log_arch_every``) and ``penalty`` (refused, naming
    ``cost_penalty``) are accepted as keywords and translated by
    :mod:`nasx.strategy.oneshot.nni_args`.

    Example:
        >>> from nasx.strategy import DARTS
        >>> strategy = DARTS(arc_learning_rate=3e-4, order=2)
        >>> strategy.is_one_shot
        True

    After ``strategy.run(space, evaluator)``: ``export_top_models()`` gives the arch (top
    ``num_ops_per_node`` incoming edges per cell node by their strongest non-'none' op) and
    ``export_probs()`` the softmax weights per label.
    """

    def __init__(
        self,
        arc_learning_rate: float = 3e-4,
        gradient_clip_val: float | None = 5.0,
        warmup_epochs: int = 0,
        order: int = 1,
        arc_weight_decay: float = 1e-3,
        unrolled_lr: float | None = None,
        cost_penalty: Callable[..., torch.Tensor] | None = None,
        **kwargs: Any,
    ):
        nni_strategy_arguments(kwargs, type(self).__name__, "cost_penalty=CostPenalty(...)")
        super().__init__(gradient_clip_val=gradient_clip_val, warmup_epochs=warmup_epochs, **kwargs)
        if order not in (1, 2):
            raise ValueError(
                f"DARTS order must be 1 (first order) or 2 (second order), got {order!r}"
            )
        self.arc_learning_rate = arc_learning_rate
        self.arc_weight_decay = arc_weight_decay
        self.order = order
        self.unrolled_lr = unrolled_lr
        self.cost_penalty = cost_penalty
        if cost_penalty is not None:
            self.graph_blocker_reason = "with cost_penalty= runs eagerly"

    def mixture_weights(self, key: str, alpha: torch.Tensor) -> torch.Tensor:
        return alpha.softmax(-1)

    graph_blocker_reason = "order=2 reads the gradient norm on the host in every step"

    def graph_key(self) -> Any:
        if self.cost_penalty is not None:
            # the penalty is user code (host tables, autograd.grad): not captured; runs eagerly.
            return None
        return None if self.order == 2 else ("darts",)

    def configure_arch_optimizer(self, module: OneShotModule) -> torch.optim.Optimizer:
        return torch.optim.Adam(
            module.supernet.arch_parameters(),
            lr=self.arc_learning_rate,
            betas=(0.5, 0.999),
            weight_decay=self.arc_weight_decay,
        )

    def arch_step(
        self,
        module: OneShotModule,
        train_batch: Any,
        val_batch: Any,
        arch_optimizer: torch.optim.Optimizer | None,
    ) -> None:
        supernet = module.supernet
        supernet.use_mixture(self.mixture_weights)
        assert arch_optimizer is not None  # configure_arch_optimizer made one
        arch_optimizer.zero_grad()
        alphas = supernet.arch_parameters()
        if self.order == 1:
            module.run_backward(module.loss(val_batch), inputs=alphas)
        else:
            w_opt = module.opts()[0]
            xi = self.unrolled_lr if self.unrolled_lr is not None else w_opt.param_groups[0]["lr"]
            grads = second_order_arch_grad(
                module.loss, module.weight_params(), alphas, train_batch, val_batch, xi
            )
            for a, g in zip(alphas, grads, strict=False):
                a.grad = g
        if self.cost_penalty is not None:
            from .cost import add_penalty_gradient

            add_penalty_gradient(self.cost_penalty, supernet)
        average_across_ranks([a.grad for a in alphas])
        arch_optimizer.step()

    def before_weight_step(self, module: OneShotModule) -> None:
        module.supernet.use_mixture(self.mixture_weights)

    def before_validation(self, module: OneShotModule) -> None:
        module.supernet.use_mixture(self.mixture_weights)

    def export_top_models(self, top_k: int = 1) -> list[dict[str, Any]]:
        supernet = self._need_supernet()
        best = supernet.export()
        return top_k_archs(best, supernet.export_probs(), supernet.search_space, top_k)


class GumbelDARTS(DARTS):
    """DARTS with Gumbel-softmax samples of the architecture weights (SNAS/GDAS style).

    Args:
        gumbel_temperature: the temperature of the first epoch (> 0).
        temperature_decay: how it changes after each epoch: a factor in (0, 1] multiplied in
            (down to ``min_temperature``), or ``'linear'``: falling linearly to
            ``min_temperature`` at ``max_epochs`` (NNI's schedule,
            :class:`~nasx.strategy.oneshot.nni_args.LinearTemperature`).
        min_temperature: the lowest temperature (> 0).
        hard: straight-through one-hot samples (forward like one path, gradient like the softmax).

    NNI's spellings of the schedule are accepted as keywords and translated: 3.0's
    ``temperature`` (a float: fixed; ``(init, min)``, ``{'init': .., 'min': ..}`` or a
    scheduler: linear) and 2.x's ``use_temp_anneal`` (linear from ``gumbel_temperature`` to
    ``min_temp``, default 0.33; ``False``: fixed).

    Example:
        >>> s = GumbelDARTS(gumbel_temperature=1.0, temperature_decay=0.9)
        >>> s.temperature
        1.0
        >>> GumbelDARTS(temperature=(1.0, 0.33)).schedule  # NNI 3.0's default
        LinearTemperature(init=1.0, min=0.33)
    """

    def __init__(
        self,
        gumbel_temperature: float = 1.0,
        temperature_decay: float | Literal["linear"] = 0.95,
        min_temperature: float = 0.33,
        hard: bool = False,
        **kwargs: Any,
    ):
        nni = gumbel_nni_arguments(kwargs, gumbel_temperature)
        if nni is not None:
            gumbel_temperature, temperature_decay, min_temperature = nni
        super().__init__(**kwargs)
        for name, value in (
            ("gumbel_temperature", gumbel_temperature),
            ("min_temperature", min_temperature),
        ):
            check_number(name, value, minimum=0.0)
            if not value > 0:
                raise ValueError(
                    f"GumbelDARTS({name}={value!r}): a Gumbel-softmax temperature must be > 0 "
                    "(it divides the logits)"
                )
        if temperature_decay == "linear":
            if gumbel_temperature < min_temperature:
                raise ValueError(
                    f"GumbelDARTS(temperature_decay='linear'): gumbel_temperature="
                    f"{gumbel_temperature} must be >= min_temperature={min_temperature}"
                )
        elif isinstance(temperature_decay, str) or not 0 < temperature_decay <= 1:
            raise ValueError(
                f"GumbelDARTS(temperature_decay={temperature_decay!r}): a factor in (0, 1] or "
                "'linear'"
            )
        self.gumbel_temperature = float(gumbel_temperature)
        self.temperature_decay = temperature_decay
        self.min_temperature = float(min_temperature)
        self.hard = hard
        self.temperature = self.gumbel_temperature  # the current epoch's (checkpointed)

    @property
    def schedule(self) -> LinearTemperature | None:
        """The linear schedule when ``temperature_decay='linear'`` (NNI's), else None."""
        if self.temperature_decay != "linear":
            return None
        return LinearTemperature(self.gumbel_temperature, self.min_temperature)

    def mixture_weights(self, key: str, alpha: torch.Tensor) -> torch.Tensor:
        return F.gumbel_softmax(alpha, tau=self.temperature, hard=self.hard, dim=-1)

    def graph_key(self) -> Any:
        # the temperature is a Python float inside the step: a new one captures the step again
        return None if self.order == 2 else ("gumbel", self.temperature, self.hard)

    def before_validation(self, module: OneShotModule) -> None:
        module.supernet.use_mixture(softmax_weights)

    def on_epoch_end(self, module: OneShotModule) -> None:
        schedule = self.schedule
        if schedule is not None:  # NNI's linear schedule: the next epoch's temperature
            self.temperature = schedule.value(module.current_epoch + 1, module.trainer.max_epochs)
            return
        assert not isinstance(self.temperature_decay, str)  # 'linear' is the schedule above
        self.temperature = max(self.min_temperature, self.temperature * self.temperature_decay)

    def state_dict(self) -> dict[str, Any]:
        return {"temperature": self.temperature}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.temperature = float(state.get("temperature", self.temperature))
