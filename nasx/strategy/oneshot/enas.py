"""ENAS (Pham et al., ICML 2018): an LSTM controller samples paths through shared weights and
learns by REINFORCE from the sampled path's validation reward."""

from __future__ import annotations

import math
import random
from typing import TYPE_CHECKING, Any

import torch
import torch.nn as nn

from nasx._checks import check_int
from nasx.space import SearchSpace
from nasx.space.constraints import sample_valid_path

from .base import BaseOneShotStrategy
from .distributed import average_across_ranks
from .nni_args import enas_nni_arguments
from .sampling import (
    batch_reward,
    modes_kept,
    scoring_model,
    split_scored_batch,
    step_generator,
)
from .supernet import Supernet
from .topk import prob_key

if TYPE_CHECKING:  # imported when a run starts (it imports Lightning)
    from .lightning import OneShotModule


class Controller(nn.Module):
    """Autoregressive LSTM policy over a search space: one softmax head per label, over the label's
    ``grid()`` values; the embedding of each decision feeds the next step.

    Example:
        >>> from nasx.space import Categorical, SearchSpace
        >>> c = Controller(SearchSpace(op=Categorical(['a', 'b'], label='op')), hidden=8)
        >>> arch, log_prob, entropy = c.sample(torch.Generator().manual_seed(0))
        >>> arch['op'] in ('a', 'b'), log_prob.shape
        (True, torch.Size([]))
    """

    def __init__(
        self,
        space: SearchSpace,
        hidden: int = 64,
        temperature: float = 5.0,
        tanh_constant: float = 2.5,
    ):
        super().__init__()
        self.labels = list(space)
        self.grids = [space[label].grid() for label in self.labels]
        self.temperature, self.tanh_constant = temperature, tanh_constant
        self.start = nn.Parameter(torch.zeros(1, hidden))
        self.lstm = nn.LSTMCell(hidden, hidden)
        self.heads = nn.ModuleList(nn.Linear(hidden, len(g)) for g in self.grids)
        self.embeddings = nn.ModuleList(nn.Embedding(len(g), hidden) for g in self.grids)

    def _logits(self, h: torch.Tensor, i: int) -> torch.Tensor:
        logits = self.heads[i](h).squeeze(0) / self.temperature  # [n values]
        return self.tanh_constant * torch.tanh(logits) if self.tanh_constant else logits

    def sample(
        self,
        generator: torch.Generator | None = None,
        greedy: bool = False,
        forced: dict[str, Any] | None = None,
    ) -> tuple[dict[str, Any], torch.Tensor, torch.Tensor]:
        """``(arch, sum of log-probs, sum of entropies)``; ``forced`` scores a given arch instead."""
        x, state = self.start, None
        arch, log_prob, entropy = {}, self.start.new_zeros(()), self.start.new_zeros(())
        for i, label in enumerate(self.labels):
            state = self.lstm(x, state)
            dist = torch.distributions.Categorical(logits=self._logits(state[0], i))
            if forced is not None:
                index = self.grids[i].index(forced[label])
            elif greedy:
                index = int(dist.probs.argmax())
            else:
                index = int(
                    torch.multinomial(dist.probs.detach().float().cpu(), 1, generator=generator)
                )
            idx = torch.tensor(index, device=self.start.device)
            log_prob = log_prob + dist.log_prob(idx)  # type: ignore[no-untyped-call]  # torch's stub: Categorical.log_prob has no annotations
            entropy = entropy + dist.entropy()  # type: ignore[no-untyped-call]  # torch's stub, as above
            arch[label] = self.grids[i][index]
            x = self.embeddings[i](idx.view(1))
        return arch, log_prob, entropy


class ENAS(BaseOneShotStrategy):
    """ENAS: a controller samples a path per weight step; every arch step it samples a path,
    scores it on a validation batch and takes a REINFORCE step with a moving-average baseline.

    Args:
        arc_learning_rate: the controller's Adam learning rate (paper: 3.5e-4).
        entropy_weight: bonus on the policy's entropy (keeps it exploring).
        baseline_decay: decay of the reward's moving average.
        ctrl_steps_aggregate: sampled paths per arch step (their gradients are averaged).
        reward_fn: ``(model, val_batch) -> float`` (``model``: the evaluator's whole model, a
            head around the supernet where its module builds one); default: accuracy for class
            scores (per pixel for segmentation), else negative MSE, on ``(inputs, target)``
            batches. The model comes in training mode; a ``reward_fn`` may switch it to
            ``eval()`` (a detector predicts boxes only there), and every module's mode is put
            back after the call.
        reward_metric_name: NNI's way to name the reward: the metric of that name that the
            evaluator's module logs in ``validation_step`` on the validation batch (for example
            ``'val_acc'``), or that the step returns in a dict. Give it or ``reward_fn``, not both.

    NNI's ``batches_per_update`` (nasx's ``ctrl_steps_aggregate``), ``log_prob_every_n_step``
    (``log_arch_every``), ``replay_buffer_size`` and ``penalty`` (NNI 3.0 settings with no nasx
    counterpart: its controller trains by PPO from a replay buffer; only None is accepted) are
    accepted as keywords and translated.

    Example:
        >>> from nasx.strategy import ENAS
        >>> ENAS(arc_learning_rate=3.5e-4).is_one_shot
        True
    """

    supernet_mode = "path"
    needs_alphas = False

    def __init__(
        self,
        arc_learning_rate: float = 3.5e-4,
        entropy_weight: float = 1e-4,
        baseline_decay: float = 0.95,
        ctrl_steps_aggregate: int = 1,
        hidden: int = 64,
        reward_fn: Any = None,
        gradient_clip_val: float | None = 5.0,
        reward_metric_name: str | None = None,
        **kwargs: Any,
    ):
        ctrl_steps_aggregate = enas_nni_arguments(kwargs, ctrl_steps_aggregate)
        super().__init__(gradient_clip_val=gradient_clip_val, **kwargs)
        if reward_fn is not None and reward_metric_name is not None:
            raise ValueError("give reward_fn or reward_metric_name, not both")
        if reward_metric_name is not None and not isinstance(reward_metric_name, str):
            raise TypeError(f"reward_metric_name must be a str, got {reward_metric_name!r}")
        self.reward_metric_name = reward_metric_name
        self.arc_learning_rate, self.entropy_weight = arc_learning_rate, entropy_weight
        check_int("ctrl_steps_aggregate", ctrl_steps_aggregate, minimum=1, allow_none=False)
        check_int("hidden", hidden, minimum=1, allow_none=False)
        self.baseline_decay, self.ctrl_steps_aggregate = baseline_decay, ctrl_steps_aggregate
        self.hidden, self.reward_fn = hidden, reward_fn
        self.controller: Controller | None = None
        self.baseline: float | None = None

    def build_supernet(self, model_space: nn.Module) -> Supernet:
        supernet = super().build_supernet(model_space)
        self.controller = Controller(supernet.search_space, hidden=self.hidden)
        return supernet

    def extra_modules(self) -> nn.Module:
        # empty before build_supernet (a ModuleDict entry of None holds nothing either)
        return nn.ModuleDict({} if self.controller is None else {"controller": self.controller})

    def configure_arch_optimizer(self, module: OneShotModule) -> torch.optim.Optimizer:
        return torch.optim.Adam(self._need_controller().parameters(), lr=self.arc_learning_rate)

    def _reward(self, supernet: nn.Module, batch: Any, inner: Any = None) -> float:
        model = scoring_model(supernet, inner)  # with the evaluator's head, if it built one
        if self.reward_fn is not None:
            with modes_kept(model):  # the weight step after it must train, whatever the reward did
                return float(self.reward_fn(model, batch))
        if self.reward_metric_name is not None:
            metrics = logged_validation_metrics(inner, batch)
            if self.reward_metric_name not in metrics:
                raise KeyError(
                    f"ENAS reward_metric_name={self.reward_metric_name!r} was not logged by "
                    f"{type(inner).__name__}.validation_step; it logged: "
                    f"{', '.join(sorted(metrics)) or 'nothing'}"
                )
            return metrics[self.reward_metric_name]
        x, y = split_scored_batch(batch)
        with torch.no_grad():
            return batch_reward(model(x), y)

    def arch_step(
        self,
        module: OneShotModule,
        train_batch: Any,
        val_batch: Any,
        arch_optimizer: torch.optim.Optimizer | None,
    ) -> None:
        supernet, step = module.supernet, module.step_index
        controller = self._need_controller()
        assert arch_optimizer is not None  # configure_arch_optimizer made one
        arch_optimizer.zero_grad()
        for n in range(self.ctrl_steps_aggregate):
            arch, log_prob, entropy = self._sample_valid(step_generator(self.seed, step, 1 + n))
            supernet.use_arch(arch)
            shared = torch.tensor(self._reward(supernet, val_batch, module.inner))
            average_across_ranks([shared])  # every rank sees the same reward and baseline
            reward = float(shared)
            self.baseline = (
                reward
                if self.baseline is None
                else (self.baseline_decay * self.baseline + (1 - self.baseline_decay) * reward)
            )
            loss = -(reward - self.baseline) * log_prob - self.entropy_weight * entropy
            torch.autograd.backward(loss / self.ctrl_steps_aggregate)
        params = [p for p in controller.parameters() if p.grad is not None]
        average_across_ranks([p.grad for p in params])
        arch_optimizer.step()

    # The controller is a module (checkpointed with the supernet); its reward baseline is not.
    def state_dict(self) -> dict[str, Any]:
        return {"baseline": self.baseline}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.baseline = state.get("baseline", self.baseline)

    def before_weight_step(self, module: OneShotModule) -> None:
        step = module.step_index
        with torch.no_grad():
            arch, _, _ = self._sample_valid(step_generator(self.seed, step))
        module.supernet.use_arch(arch)

    def before_validation(self, module: OneShotModule) -> None:
        with torch.no_grad():
            module.supernet.use_arch(self.export_top_models(1)[0])

    def _sample_valid(
        self, generator: torch.Generator
    ) -> tuple[dict[str, Any], torch.Tensor, torch.Tensor]:
        """A controller sample within the space's constraints (redrawn until it is)."""
        controller, space = self._need_controller(), self._need_supernet().search_space
        drawn: list[tuple[dict[str, Any], torch.Tensor, torch.Tensor]] = []

        def draw() -> dict[str, Any]:
            drawn.append(controller.sample(generator))
            return drawn[-1][0]

        sample_valid_path(space, draw)
        return drawn[-1]

    @torch.no_grad()
    def export_probs(self) -> dict[str, dict[Any, float]]:
        """Per label, the controller's probabilities along its greedy decoding."""
        c = self._need_controller()
        x, state, out = c.start, None, {}
        for i, label in enumerate(c.labels):
            state = c.lstm(x, state)
            probs = c._logits(state[0], i).softmax(-1)
            out[label] = {prob_key(v): float(p) for v, p in zip(c.grids[i], probs, strict=False)}
            x = c.embeddings[i](probs.argmax().view(1))
        return out

    @torch.no_grad()
    def export_top_models(self, top_k: int = 1) -> list[dict[str, Any]]:
        """The greedy decoding first, then the most probable distinct sampled archs."""
        c = self._need_controller()
        space = self._need_supernet().search_space
        best = c.sample(greedy=True)[0]
        scored = {repr(best): (math.inf, best)} if space.satisfies(best) else {}
        gen = torch.Generator().manual_seed(self.seed)
        draws = max(0, 20 * (top_k - 1))
        if space.constraints:  # archs outside the constraints are skipped: sample until enough
            draws = max(draws, 20 * top_k)
        extra = space.max_rejections if space.constraints else 0
        for i in range(draws + extra):
            if i >= draws and len(scored) >= top_k:
                break
            arch, log_prob, _ = c.sample(gen)
            if space.satisfies(arch):
                scored.setdefault(repr(arch), (float(log_prob), arch))
        if not scored:  # the controller puts (almost) no mass on valid archs
            return [space.sample(random.Random(self.seed))]  # EmptySpaceError if there are none
        ranked = sorted(scored.values(), key=lambda t: -t[0])
        return [arch for _, arch in ranked[:top_k]]

    def _need_controller(self) -> Controller:
        if self.controller is None:
            raise RuntimeError("ENAS has not run yet: call run(space, evaluator) first")
        return self.controller


def logged_validation_metrics(inner: Any, batch: Any) -> dict[str, float]:
    """``{name: value}`` of what ``inner.validation_step(batch, 0)`` logs (or returns in a dict).

    The step runs without gradients, with the module's ``log``/``log_dict`` shadowed by a recorder
    for the length of the call (as the one-shot module routes them, see CONTRIBUTING.md). A logged
    ``torchmetrics.Metric`` is computed on this batch alone and reset, so the module's validation
    epoch starts clean.

    Example:
        >>> import pytorch_lightning as pl
        >>> class M(pl.LightningModule):
        ...     def validation_step(self, batch, batch_idx):
        ...         self.log('val_acc', 0.75)
        >>> logged_validation_metrics(M(), None)
        {'val_acc': 0.75}
    """
    import torchmetrics

    logged: dict[str, float] = {}

    def value_of(value: Any) -> float:
        if isinstance(value, torchmetrics.Metric):
            out = float(value.compute())
            value.reset()
            return out
        return float(value)

    def log(name: str, value: Any, *args: Any, **kwargs: Any) -> None:
        logged[name] = value_of(value)

    def log_dict(values: Any, *args: Any, **kwargs: Any) -> None:
        for name, value in values.items():
            logged[name] = value_of(value)

    inner.__dict__["log"], inner.__dict__["log_dict"] = log, log_dict
    try:
        with torch.no_grad():
            out = inner.validation_step(batch, 0)
    finally:
        inner.__dict__.pop("log", None)
        inner.__dict__.pop("log_dict", None)
    if isinstance(out, dict):
        for name, value in out.items():
            if (
                isinstance(value, (int, float, torch.Tensor))
                and torch.as_tensor(value).numel() == 1
            ):
                logged.setdefault(name, float(value))
    return logged
