"""Train with Lightning, but replay each training step from one CUDA graph (issue 12).

Retraining a searched model on a GPU is bound by the host: a DARTS-V2 step launches thousands of
small kernels, and the GPU waits between them. :class:`CudaGraphTraining` is a Lightning callback
that captures the whole step (forward, loss, backward, gradient clipping, optimizer step) once and
replays it for every later batch of the same shape, with :class:`nasx._cuda_graph.CapturedStep`.
``Classification``/``Regression`` (and any :class:`~nasx.evaluator.Lightning` evaluator) add it
by default (``cuda_graphs=None``: on where it can be used).

How it fits into Lightning: at ``on_fit_start`` it checks that the run can be replayed (see
:func:`graph_blocker`), switches the module to manual optimization and wraps its
``training_step``; epoch-wise learning-rate schedulers are stepped at the end of each training
epoch as Lightning would (a new learning rate captures the step again, once per epoch);
``self.log`` calls of the step are recorded at capture and repeated after each replay. At
``on_fit_end`` the module is as it was.

What the step may do (the same rules as for any CUDA graph): tensor work only (no ``.item()``,
no printing of values, no Python branching on tensors); the same path at every batch (``batch_idx``
is frozen at capture); no logging of torchmetrics objects in ``training_step`` (those runs fall back
to eager steps, with a log line saying why). Python numbers the step reads that change during
training (a drop-path probability set each epoch) must be returned by the module's
``graph_key()`` method, so that a change captures the step again.

    >>> import pytorch_lightning as pl
    >>> callback = CudaGraphTraining()
    >>> isinstance(callback, pl.Callback), callback.enabled
    (True, None)
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from typing import Any

import pytorch_lightning as pl
import torch
from torch.utils._pytree import tree_flatten, tree_unflatten

_log = logging.getLogger("nasx.evaluator")

# Module and callback hooks that automatic optimization calls around backward and the optimizer
# step; a replayed step runs neither, so a run that overrides one of them stays eager.
_STEP_HOOKS = (
    "on_before_backward",
    "on_after_backward",
    "on_before_optimizer_step",
    "on_before_zero_grad",
    "optimizer_step",
    "optimizer_zero_grad",
    "backward",
)


def _overridden(obj: Any, base: type, names: tuple[str, ...]) -> list[str]:
    return [n for n in names if hasattr(base, n) and getattr(type(obj), n) is not getattr(base, n)]


def graph_blocker(trainer: pl.Trainer, module: pl.LightningModule) -> str | None:
    """Why ``trainer`` must train ``module`` with eager steps, or None when a graph can replay them.

    >>> import torch
    >>> from nasx.evaluator import Classification
    >>> ev = Classification(max_epochs=1, accelerator='cpu')
    >>> module = ev.module
    >>> module.set_model(torch.nn.Linear(2, 2))
    >>> graph_blocker(ev.trainer.build(), module)
    'the model trains on cpu, not on a CUDA GPU'
    """
    params = list(module.parameters())
    device = params[0].device if params else torch.device("cpu")
    if device.type != "cuda":
        return f"the model trains on {device.type}, not on a CUDA GPU"
    if trainer.world_size > 1:
        return "it runs on several processes (DDP all-reduces gradients during backward)"
    precision = str(trainer.precision)
    if precision.startswith("16"):
        return f"precision {precision!r} scales the loss with checks on the host (use 'bf16-mixed')"
    if not module.automatic_optimization:
        return "the module optimizes manually (its training_step steps its own optimizers)"
    if trainer.accumulate_grad_batches != 1:
        return f"accumulate_grad_batches={trainer.accumulate_grad_batches}"
    if len(trainer.optimizers) != 1:
        return f"it has {len(trainer.optimizers)} optimizers (one is supported)"
    for config in trainer.lr_scheduler_configs:
        if config.interval == "step":
            return (
                "a learning-rate scheduler steps at every batch (interval='step'); the rate is "
                "frozen into the graph, so only epoch-wise schedules can be replayed"
            )
        if config.reduce_on_plateau:
            return "ReduceLROnPlateau reads a logged metric on the host"
    hooks = _overridden(module, pl.LightningModule, _STEP_HOOKS)
    for callback in trainer.callbacks:  # type: ignore[attr-defined]  # Lightning's property
        hooks += _overridden(callback, pl.Callback, _STEP_HOOKS)
    if hooks:
        return f"{', '.join(sorted(set(hooks)))} would not run around a replayed step"
    return None


class CudaGraphTraining(pl.Callback):
    """Replay each training step from a CUDA graph where the run allows it (see the module doc).

    Args:
        enabled: ``None`` (default) uses graphs where ``graph_blocker`` finds nothing in the
            way and says why in a log line otherwise; ``True`` raises that reason instead;
            ``False`` never uses them.

    Usable in any Lightning run, not only nasx's evaluators:
    ``pl.Trainer(callbacks=[CudaGraphTraining()])``. After a fit, ``steps`` holds how many steps
    were replayed (``replays``) and captured (``captures``), and ``disabled_reason`` why
    graphs were not used, if so.
    """

    def __init__(self, enabled: bool | None = None) -> None:
        if enabled not in (None, True, False):
            raise ValueError(f"enabled must be None, True or False, got {enabled!r}")
        self.enabled = enabled
        self.disabled_reason = ""
        self.steps: dict[str, int] = {"replays": 0, "captures": 0, "eager": 0}
        self._graphed: Any = None
        self._saved: dict[str, Any] = {}

    # -- switching the module in and out of the graphed step ------------------------------------
    def on_fit_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        if self.enabled is False:
            self.disabled_reason = "cuda_graphs=False"
            return
        reason = graph_blocker(trainer, pl_module)
        if reason is not None:
            if self.enabled:
                raise ValueError(f"cuda_graphs=True, but this training cannot use them: {reason}")
            self.disabled_reason = reason
            _log.debug("training without CUDA graphs: %s", reason)
            return
        self._install(trainer, pl_module)

    def _install(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        from nasx._cuda_graph import CapturedStep

        optimizer = trainer.optimizers[0]
        original_step = pl_module.training_step
        params = [p for group in optimizer.param_groups for p in group["params"]]
        clip_val = trainer.gradient_clip_val
        algorithm = trainer.gradient_clip_algorithm  # None (norm), or Lightning's str enum
        clip_by_value = getattr(algorithm, "value", algorithm) == "value"
        context: dict[str, Any] = {}

        def step(*leaves: torch.Tensor) -> torch.Tensor:
            batch = tree_unflatten(list(leaves), context["spec"])
            optimizer.zero_grad(set_to_none=True)
            with self._recording_logs(pl_module):
                output = original_step(batch, context["batch_idx"])
            loss = output["loss"] if isinstance(output, dict) else output
            if not torch.is_tensor(loss):
                raise RuntimeError(
                    "training_step returned no loss tensor (skipping a batch by returning None "
                    "is Python branching a replayed graph cannot repeat)"
                )
            loss.backward()
            if clip_val:
                if clip_by_value:
                    torch.nn.utils.clip_grad_value_(params, float(clip_val))
                else:
                    torch.nn.utils.clip_grad_norm_(params, float(clip_val), foreach=True)
            optimizer.step()
            return loss.detach()

        graphed = CapturedStep(step, [optimizer], name="training step")

        def training_step(batch: Any, batch_idx: int, *args: Any) -> Any:
            leaves, spec = tree_flatten(batch)
            if not all(torch.is_tensor(t) for t in leaves):
                graphed.disable("the batches hold values other than tensors")
            context.update(spec=spec, batch_idx=batch_idx, logged=[])
            captures, replays = graphed.captures, graphed.replays
            # A module's graph_key() names Python values its step reads (DartsRetrainModule: the
            # drop-path probability, set each epoch); a new value captures the step again.
            module_key = getattr(pl_module, "graph_key", lambda: ())()
            loss = graphed(leaves, key=(str(spec), module_key))
            self._count_step(trainer, pl_module)
            recorded = context["logged"]
            if graphed.captures != captures:
                context["graph_logs"] = recorded  # the tensors every replay overwrites
            replayed = graphed.replays != replays
            for name, value, kwargs in context.get("graph_logs", []) if replayed else recorded:
                pl_module.log(
                    name, value.detach().clone() if torch.is_tensor(value) else value, **kwargs
                )
            key = "replays" if replayed else "eager"
            self.steps[key] += 1
            self.steps["captures"] = graphed.captures
            if not graphed.enabled:
                self.disabled_reason = graphed.disabled_reason
            return loss.clone()

        self._context = context
        self._graphed = graphed
        self._saved = {"automatic_optimization": pl_module.automatic_optimization}
        pl_module.automatic_optimization = False
        pl_module.__dict__["training_step"] = (
            training_step  # an instance attribute: undone at the end
        )

    @staticmethod
    def _count_step(trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        """Count the optimizer step the graph made: Lightning's global_step (read by max_steps and
        step-wise logging) counts the steps of its optimizer wrapper, which a replay bypasses."""
        optimizer = pl_module.optimizers()
        for hook in ("_on_before_step", "_on_after_step"):
            getattr(optimizer, hook, lambda: None)()

    @contextlib.contextmanager
    def _recording_logs(self, pl_module: pl.LightningModule) -> Iterator[None]:
        """Record ``self.log``/``self.log_dict`` of the step instead of running them: Lightning's
        epoch accumulation is host-side state that a replay would skip."""
        from torchmetrics import Metric

        logged = self._context["logged"]

        def record(name: str, value: Any, *args: Any, **kwargs: Any) -> None:
            if isinstance(value, Metric) or args:
                raise RuntimeError(
                    f"training_step logs {name!r} as a torchmetrics object or with positional "
                    "options, which a replayed graph cannot repeat"
                )
            logged.append((name, value, kwargs))

        def record_dict(values: dict[str, Any], *args: Any, **kwargs: Any) -> None:
            for name, value in values.items():
                record(name, value, *args, **kwargs)

        pl_module.__dict__.update(log=record, log_dict=record_dict)
        try:
            yield
        finally:
            for name in ("log", "log_dict"):
                pl_module.__dict__.pop(name, None)

    def on_train_epoch_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        # Manual optimization leaves schedulers to the module: step the epoch-wise ones as
        # Lightning's automatic loop does (every `frequency` epochs).
        if self._graphed is None:
            return
        for config in trainer.lr_scheduler_configs:
            if (trainer.current_epoch + 1) % config.frequency == 0:
                config.scheduler.step()  # type: ignore[call-arg]  # plateau ones are refused

    def on_fit_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        self._restore(trainer, pl_module)

    def on_exception(
        self, trainer: pl.Trainer, pl_module: pl.LightningModule, exception: BaseException
    ) -> None:
        self._restore(trainer, pl_module)

    def _restore(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        if self._graphed is None:
            return
        # trainer.global_step reads the automatic loop's step counter once the module is back in
        # automatic optimization: hand it the steps the manual loop counted.
        loop = trainer.fit_loop.epoch_loop
        counted = loop.manual_optimization.optim_step_progress.state_dict()
        loop.automatic_optimization.optim_progress.optimizer.step.load_state_dict(counted)
        pl_module.__dict__.pop("training_step", None)
        pl_module.automatic_optimization = self._saved["automatic_optimization"]
        self._graphed = None
