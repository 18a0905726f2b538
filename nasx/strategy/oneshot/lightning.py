"""OneShotModule: the Lightning module that trains a supernet with the evaluator's own module.

The evaluator's LightningModule (its criterion, metrics, optimizer config) gets the supernet as
its model; this wrapper alternates, per training batch ``{'train': ..., 'val': ...}``, an
architecture step on the validation batch (delegated to the strategy) and a weight step on the
training batch, with Lightning's manual optimisation. Under DDP, gradients are averaged by hand
(DDP's own reducer is kept out of every backward), so architecture parameters get identical
updates and stay identical on every rank however many backward passes a step makes.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Any, Protocol

import pytorch_lightning as pl
import torch
import torch.nn as nn

from .distributed import average_across_ranks
from .graphed_step import GraphedSearchStep
from .supernet import Supernet


class SearchHooks(Protocol):
    """What :class:`OneShotModule` reads from its strategy: the settings of a search step and the
    hooks, documented (with the order they are called in) on
    :class:`~nasx.strategy.oneshot.base.BaseOneShotStrategy`, which has them all. (A protocol, so
    that this module does not import the base that builds it.)"""

    use_channels_last: bool
    warmup_epochs: int
    gradient_clip_val: float | None
    log_arch_every: int
    cuda_graphs: bool | None
    identity: dict[str, Any] | None

    @property
    def supernet_mode(self) -> str: ...
    @property
    def graph_blocker_reason(self) -> str: ...
    def extra_modules(self) -> nn.Module: ...
    def load_state_dict(self, state: dict[str, Any]) -> None: ...
    def configure_arch_optimizer(self, module: OneShotModule) -> torch.optim.Optimizer | None: ...
    def graph_key(self) -> Any: ...
    def arch_step(
        self,
        module: OneShotModule,
        train_batch: Any,
        val_batch: Any,
        arch_optimizer: torch.optim.Optimizer | None,
    ) -> None: ...
    def before_weight_step(self, module: OneShotModule) -> None: ...
    def weight_losses(
        self, module: OneShotModule, train_batch: Any, batch_idx: int, log: bool
    ) -> Iterator[torch.Tensor]: ...
    def export_probs(self) -> dict[str, dict[Any, float]]: ...
    def before_validation(self, module: OneShotModule) -> None: ...
    def on_epoch_end(self, module: OneShotModule) -> None: ...
    def state_dict(self) -> dict[str, Any]: ...


def split_optimizer_config(conf: Any) -> tuple[torch.optim.Optimizer, list[Any]]:
    """The (single) optimizer and its LR schedulers from any ``configure_optimizers`` return value."""
    schedulers: list[Any] = []
    if isinstance(conf, dict):
        sched = conf.get("lr_scheduler")
        if sched is not None:
            schedulers.append(sched["scheduler"] if isinstance(sched, dict) else sched)
        conf = conf["optimizer"]
    if isinstance(conf, (list, tuple)):
        if len(conf) == 2 and isinstance(conf[0], (list, tuple)):
            schedulers += [s["scheduler"] if isinstance(s, dict) else s for s in conf[1]]
            conf = conf[0]
        if len(conf) != 1:
            raise ValueError(
                f"one-shot search needs exactly one weight optimizer, the evaluator's module configured {len(conf)}"
            )
        conf = conf[0]
        if isinstance(conf, dict):
            return split_optimizer_config(conf)
    if not isinstance(conf, torch.optim.Optimizer):
        raise TypeError(
            f"configure_optimizers returned {type(conf).__name__}, expected an optimizer"
        )
    return conf, schedulers


def loss_of(output: Any) -> torch.Tensor:
    """The loss from a ``training_step`` result (a tensor or a dict with 'loss')."""
    loss: torch.Tensor = output["loss"] if isinstance(output, dict) else output
    return loss


def to_channels_last(batch: Any) -> Any:
    """4-D tensors of a batch in channels-last memory format (others unchanged)."""
    if torch.is_tensor(batch):
        return batch.contiguous(memory_format=torch.channels_last) if batch.dim() == 4 else batch
    if isinstance(batch, (list, tuple)):
        return type(batch)(to_channels_last(b) for b in batch)
    if isinstance(batch, dict):
        return {k: to_channels_last(v) for k, v in batch.items()}
    return batch


class OneShotModule(pl.LightningModule):
    """Wraps the evaluator's module around a supernet and runs a one-shot strategy's steps.

    Strategies build it in ``run``; it also works without a trainer (benchmarks, tests):

        >>> import torch, torch.nn as nn
        >>> from nasx.evaluator import Classification
        >>> from nasx.space import LayerChoice, ModelSpace
        >>> from nasx.strategy import DARTS
        >>> from nasx.strategy.oneshot import Supernet
        >>> class Net(ModelSpace):
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.op = LayerChoice([nn.Linear(4, 2), nn.Sequential(nn.Linear(4, 2), nn.Tanh())], label='op')
        ...     def forward(self, x):
        ...         return self.op(x)
        >>> strategy = DARTS(arc_learning_rate=0.1)
        >>> module = OneShotModule(Classification().module, Supernet(Net()), strategy)
        >>> _ = module.configure_optimizers()
        >>> batch = (torch.randn(8, 4), torch.randint(0, 2, (8,)))
        >>> before = module.supernet.alpha('op').detach().clone()
        >>> loss = module.search_step(batch, batch)
        >>> module.step_index, bool((module.supernet.alpha('op') != before).any())
        (1, True)
    """

    # Declared so mypy reads them as what they are, not as nn.Module's `Tensor | Module`
    # attribute fallback (supernet and strategy are kept out of the module registry below).
    inner: pl.LightningModule
    supernet: Supernet
    strategy: SearchHooks
    extra: nn.Module
    search_steps: torch.Tensor

    def __init__(self, inner: pl.LightningModule, supernet: Supernet, strategy: SearchHooks):
        super().__init__()
        self.automatic_optimization = False
        self.inner = inner
        if strategy.supernet_mode == "path" and not supernet.state.path_mode:
            # A path supernet runs only with an arch chosen, and an evaluator's module may run the
            # model once while attaching it (Segmentation sizes its head by a probe forward of
            # the backbone): any valid arch will do until the first step samples one.
            supernet.use_arch(supernet.search_space.sample(seed=0))
        # hooks an evaluator module may have; getattr, as nn.Module types any attribute as a tensor
        set_model = getattr(inner, "set_model", None)
        if set_model is not None:
            set_model(supernet)
        else:
            inner.model = supernet
        self.__dict__["supernet"] = supernet  # already registered as inner.model: not twice
        self.__dict__["strategy"] = strategy  # not a module: hooks only
        self.extra = (
            strategy.extra_modules()
        )  # e.g. the ENAS controller (checkpointed with the rest)
        # Search steps done (one arch + one weight step each); checkpointed, so a resumed run
        # continues the same path-sampling stream. (Lightning's global_step counts both optimizers.)
        self.register_buffer("search_steps", torch.zeros((), dtype=torch.long))
        self._schedulers: list[Any] = []
        self._raw_optimizers: list[torch.optim.Optimizer] = []
        self._weight_params: list[nn.Parameter] | None = None  # listed once per fit
        # The CUDA-graph replay of the search step: decided at the first step (on its device).
        self._graphed: GraphedSearchStep | None = None
        self._graph_decided = False
        self._rng_to_restore: dict[str, Any] | None = None  # from a checkpoint, set at train start

    # -- plumbing --------------------------------------------------------------------------
    @contextlib.contextmanager
    def _inner_logging(self, enabled: bool = True) -> Iterator[None]:
        """Route the inner module's ``self.log``/``log_dict`` to this module (or silence them).

        The evaluator's module calls ``self.log`` in its own steps, which we call from ours.
        Lightning (2.6) has no public way to make that work by itself: its trainer setter does
        attach the inner module (a direct child) to the trainer, but ``log`` also needs the name
        of the hook being run, which the trainer sets only on the module it trains (the private
        ``_current_fx_name``), so the inner's own ``log`` raises "not managed by the Trainer
        control flow" (tests/strategy/oneshot/test_lightning.py keeps checking this). The arch
        step's loss on the validation batch must not be logged at all, and Lightning has no
        switch for that either. So for the length of one call an instance attribute shadows the
        two public methods: the inner's logs land under this module's current hook (metrics found
        by their attribute path here, ``inner.val_metric``), and nothing else is changed. Why the
        alternatives were not taken: CONTRIBUTING.md, "Decisions".
        """

        def quiet(*args: Any, **kwargs: Any) -> None:
            return None

        recording = self._recording_step()
        log, log_dict = recording.log_functions() if recording else (self.log, self.log_dict)
        self.inner.__dict__["log"] = log if enabled else quiet
        self.inner.__dict__["log_dict"] = log_dict if enabled else quiet
        try:
            yield
        finally:
            self.inner.__dict__.pop("log", None)
            self.inner.__dict__.pop("log_dict", None)

    def loss(self, batch: Any, batch_idx: int = 0, log: bool = False) -> torch.Tensor:
        """The evaluator module's training loss of the supernet (current mode) on ``batch``."""
        with self._inner_logging(log):
            return loss_of(self.inner.training_step(batch, batch_idx))

    def run_backward(
        self, loss: torch.Tensor, inputs: Sequence[torch.Tensor] | None = None
    ) -> None:
        """Backward through Lightning when attached to a trainer (precision, DDP), else plainly.

        ``inputs`` restricts the gradients computed: an architecture step that names only the
        alphas skips every convolution's weight gradient (about half of a backward pass).
        """
        only = list(inputs) if inputs else None
        if self._recording_step() is not None:
            # Inside a captured step: a plain backward (Lightning's backward hooks would run once,
            # at capture, not at every replay; bf16-mixed needs nothing more).
            torch.autograd.backward(loss, inputs=only)
        elif self._trainer is not None:
            ddp = self.trainer.model
            if isinstance(ddp, nn.parallel.DistributedDataParallel):
                # Lightning re-enables DDP's reducer after every forward; a search step makes
                # several backward passes over different parameters, so we average gradients
                # ourselves (average_across_ranks) and keep the reducer out of it.
                ddp.require_backward_grad_sync = False
            self.manual_backward(loss, **({"inputs": only} if only else {}))
        else:
            torch.autograd.backward(loss, inputs=only)

    def opts(self) -> list[Any]:
        if self._trainer is not None:
            opts = self.optimizers()
            opts = list(opts) if isinstance(opts, (list, tuple)) else [opts]
            if self._recording_step() is not None:
                # Inside a captured step: torch's own optimizers (Lightning's wrappers count
                # steps in Python, which a replay skips; count_graphed_steps does it instead).
                return [getattr(o, "optimizer", o) for o in opts]
            return opts
        return self._raw_optimizers

    @property
    def graphed_step(self) -> GraphedSearchStep | None:
        """The CUDA-graph replay of the search step; None before the first step and where
        steps run eagerly (see ``graphed_step.py``)."""
        return self._graphed

    def _recording_step(self) -> GraphedSearchStep | None:
        """The graphed step when this module's step runs inside its capture or replay."""
        graphed = self._graphed
        return graphed if graphed is not None and graphed.recording else None

    def count_graphed_steps(self, warm: bool) -> None:
        """Tell Lightning about the optimizer steps a graphed search step made (its global_step,
        which max_steps and step-wise logging read, counts them in its optimizer wrappers)."""
        if self._trainer is None:
            return
        opts = self.opts()
        for opt in opts[:1] if warm else opts:
            for hook in ("_on_before_step", "_on_after_step"):
                getattr(opt, hook, lambda: None)()

    def configure_optimizers(self) -> list[torch.optim.Optimizer]:
        self._weight_params = None  # listed again for this fit
        make_optimizer = getattr(self.inner, "make_optimizer", None)
        if make_optimizer is not None:  # nasx's supervised modules: weights only
            w_opt, self._schedulers = make_optimizer(self.supernet.model_parameters()), []
        else:
            w_opt, self._schedulers = split_optimizer_config(self.inner.configure_optimizers())
        # The evaluator's optimizer sees all parameters; keep only model weights in it.
        arch_ids = {id(p) for p in self.supernet.arch_parameters()} | {
            id(p) for p in self.extra.parameters()
        }
        for group in w_opt.param_groups:
            group["params"] = [p for p in group["params"] if id(p) not in arch_ids]
        a_opt = self.strategy.configure_arch_optimizer(self)
        self._raw_optimizers = [w_opt] + ([a_opt] if a_opt is not None else [])
        return self._raw_optimizers

    def weight_params(self) -> list[nn.Parameter]:
        """The supernet's trainable weights; listed once per fit (walking a supernet's thousands of
        modules at every step cost RandomOneShot a fifth of its host time per step)."""
        if self._weight_params is None:
            self._weight_params = [p for p in self.supernet.model_parameters() if p.requires_grad]
        return self._weight_params

    # -- steps ----------------------------------------------------------------------------
    def search_step(self, train_batch: Any, val_batch: Any, batch_idx: int = 0) -> torch.Tensor:
        """One architecture step (after warm-up) then one weight step; returns the weight loss.

        On a GPU, strategies whose step takes the same path every time (DARTS, GumbelDARTS)
        replay it from a CUDA graph (see :mod:`nasx._cuda_graph` and ``cuda_graphs`` of the
        strategy); otherwise, and for batches of another shape, it runs eagerly.
        """
        if self.strategy.use_channels_last:
            train_batch, val_batch = to_channels_last(train_batch), to_channels_last(val_batch)
        warm = self._trainer is not None and self.current_epoch < self.strategy.warmup_epochs
        log = self._trainer is not None
        if not self._graph_decided:  # the first step: the module is on its device now
            self._graphed, self._graph_decided = GraphedSearchStep.for_module(self), True
        graphed = self._graphed
        if graphed is not None and graphed.enabled:
            loss = graphed(train_batch, val_batch, warm, log)
        else:
            loss = self.eager_search_step(train_batch, val_batch, batch_idx, warm, log)
        self.search_steps += 1
        return loss

    def eager_search_step(
        self, train_batch: Any, val_batch: Any, batch_idx: int, warm: bool, log: bool
    ) -> torch.Tensor:
        """The search step run op by op (what a CUDA graph captures, see ``graphed_step.py``)."""
        opts = self.opts()
        if not warm:
            self.strategy.arch_step(
                self, train_batch, val_batch, opts[1] if len(opts) > 1 else None
            )
        self.strategy.before_weight_step(self)
        w_opt = opts[0]
        w_opt.zero_grad()
        params = self.weight_params()
        loss: torch.Tensor | None = None
        # One loss per path the strategy trains on this batch (one, or the sandwich rule's
        # several): each backward adds to the same gradients, then one optimizer step.
        for path_loss in self.strategy.weight_losses(self, train_batch, batch_idx, log):
            self.run_backward(path_loss, inputs=params)
            loss = path_loss.detach() if loss is None else loss
        if loss is None:
            raise RuntimeError(
                f"{type(self.strategy).__name__}.weight_losses yielded no loss: a weight step "
                "trains at least one path"
            )
        average_across_ranks([p.grad for p in params])
        if self.strategy.gradient_clip_val:
            nn.utils.clip_grad_norm_(params, self.strategy.gradient_clip_val)
        w_opt.step()
        return loss

    @property
    def step_index(self) -> int:
        """Index of the current search step (0-based)."""
        return int(self.search_steps)

    def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        step = self.step_index
        loss = self.search_step(batch["train"], batch["val"], batch_idx)
        every = self.strategy.log_arch_every
        if every and step % every == 0 and self.logger is not None:
            probs = self.strategy.export_probs()
            self.logger.log_metrics(
                {
                    f"arch/{label}/{value}": p
                    for label, d in probs.items()
                    for value, p in d.items()
                },
                step=step,
            )
        return loss

    def on_train_epoch_end(self) -> None:
        for sched in self._schedulers:
            sched.step()
        self.strategy.on_epoch_end(self)

    # The strategy's own state (e.g. GumbelDARTS's temperature) travels with the checkpoint, so
    # a resumed run continues its schedules instead of restarting them.
    # RNG states too (restored when training starts, after Lightning's sanity check), so a
    # resumed run draws the same paths, noise and dropout as an uninterrupted one.
    def on_save_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        from .checkpoint import rng_states

        checkpoint["strategy"] = self.strategy.state_dict()
        checkpoint["nasx_rng"] = rng_states()
        identity = self.strategy.identity
        if identity is not None:  # refuse a resume by another space or strategy (see checkpoint.py)
            checkpoint["nasx_identity"] = identity

    def on_load_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        self.strategy.load_state_dict(checkpoint.get("strategy", {}))
        self._rng_to_restore = checkpoint.get("nasx_rng")

    def on_train_start(self) -> None:
        from .checkpoint import set_rng_states

        states, self._rng_to_restore = self._rng_to_restore, None
        if states:
            set_rng_states(states)

    def validation_step(self, batch: Any, batch_idx: int) -> Any:
        self.strategy.before_validation(self)
        if self.strategy.use_channels_last:
            batch = to_channels_last(batch)
        with self._inner_logging(True):
            return self.inner.validation_step(batch, batch_idx)

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        return self.supernet(*args, **kwargs)
