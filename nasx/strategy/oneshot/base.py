"""The one-shot seam: :class:`OneShotStrategy` (what the experiment calls), :class:`OneShotEvaluator`
(what a one-shot strategy needs from its evaluator) and :class:`BaseOneShotStrategy`, what every
one-shot strategy shares (the run loop, trainer set-up, checkpoint/resume, export), leaving the
architecture step and the path choice to subclasses."""

from __future__ import annotations

import abc
import copy
import logging
import os
import pathlib
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, runtime_checkable

import torch
import torch.nn as nn

from nasx._checks import check_int, check_number
from nasx._contracts import require
from nasx._workdir_lock import acquire_workdir_lock

from ..._third_party import quiet_lightning_logs, quiet_third_party_warnings
from .data import in_order, search_loaders
from .memory_format import resolve_channels_last
from .supernet import Supernet
from .topk import prob_key

if TYPE_CHECKING:  # imported when a run starts (Lightning is not imported with nasx.strategy)
    import pytorch_lightning as pl

    from .lightning import OneShotModule

_log = logging.getLogger(__name__)


def _has_cuda_bf16() -> bool:
    return torch.cuda.is_available() and torch.cuda.is_bf16_supported()


@runtime_checkable
class OneShotStrategy(Protocol):
    """What :class:`~nasx.experiment.NasExperiment` needs from a one-shot strategy: two methods.

    ``run(model_space, evaluator, workdir)`` is called once per ``NasExperiment.run()``: search
    the space (typically by training a weight-sharing supernet), checkpointing to ``workdir`` and
    resuming from it when a checkpoint is there. ``export_top_models(top_k)`` is called after it
    and returns the ``top_k`` best archs, best first, as ``dict[label, value]`` (the same format a
    multi-trial search exports). Subclass :class:`BaseOneShotStrategy` to get the supernet, the
    Lightning loop and checkpointing, and write only the architecture step.

    A minimal implementation (no training: it exports each space's default arch):

        >>> import torch.nn as nn
        >>> from nasx.space import ModelSpace, choice, search_space
        >>> class DefaultArch:
        ...     is_one_shot = True  # optional, read by NasExperiment.is_one_shot's callers
        ...     def run(self, model_space, evaluator, workdir=None):
        ...         self.best = search_space(model_space).default()
        ...     def export_top_models(self, top_k=1):
        ...         return [self.best][:top_k]
        >>> class Net(ModelSpace):
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.fc = nn.Linear(2, choice('width', [4, 8]))
        >>> s = DefaultArch(); s.run(Net(), evaluator=None)
        >>> isinstance(s, OneShotStrategy), s.export_top_models()
        (True, [{'width': 4}])
    """

    def run(
        self, model_space: nn.Module, evaluator: Any, workdir: pathlib.Path | None = None
    ) -> None:
        """Called by ``NasExperiment.run()``: search ``model_space`` using ``evaluator``."""

    def export_top_models(self, top_k: int = 1) -> list[dict[str, Any]]:
        """Called after :meth:`run`: the ``top_k`` best archs, best first."""


@runtime_checkable
class TrainerSpec(Protocol):
    """A picklable recipe for ``pytorch_lightning.Trainer`` (:class:`nasx.evaluator.Trainer`)."""

    kwargs: dict[str, Any]

    def build(self, **overrides: Any) -> Any:
        """A fresh ``pl.Trainer`` from the spec's kwargs, then ``overrides``."""

    def fresh_callbacks(self) -> list[Any]:
        """Copies of the spec's callbacks (their state must not leak between trainers)."""


@runtime_checkable
class OneShotEvaluator(Protocol):
    """What a one-shot strategy needs from its evaluator; :class:`nasx.evaluator.Lightning` (and so
    ``Classification`` and ``Regression``) has it all.

    ``module`` is the ``LightningModule`` whose ``training_step``/``configure_optimizers`` train
    the supernet (it gets it through ``set_model``); ``trainer`` is a :class:`TrainerSpec` (epochs,
    devices, precision...); the data is ``datamodule`` or ``train_dataloaders`` /
    ``val_dataloaders`` (unused ones are None). Without validation data the training data is split
    in two halves, one for the weights and one for the architecture.

        >>> from nasx.evaluator import Classification
        >>> isinstance(Classification(), OneShotEvaluator)
        True
    """

    module: Any
    trainer: TrainerSpec
    train_dataloaders: Any
    val_dataloaders: Any
    datamodule: Any


def _secondary_rank() -> bool:
    """True in a process a distributed launcher started for a rank other than 0 (Lightning's
    DDP re-runs the script with ``LOCAL_RANK`` set; torchrun and SLURM set ``RANK`` /
    ``SLURM_PROCID``): those processes share the rank-0 process's workdir and its lock.

    >>> from unittest import mock
    >>> with mock.patch.dict(os.environ, {"LOCAL_RANK": "1"}):
    ...     _secondary_rank()
    True
    >>> with mock.patch.dict(os.environ, {"RANK": "0", "LOCAL_RANK": "0"}):
    ...     _secondary_rank()
    False
    """
    ranks = (os.environ.get(v) for v in ("RANK", "LOCAL_RANK", "NODE_RANK", "SLURM_PROCID"))
    return any(r not in (None, "", "0") for r in ranks)


class BaseOneShotStrategy(abc.ABC):
    """Trains a weight-sharing supernet with a Lightning evaluator, then exports archs.

    A subclass writes the hooks; :meth:`run` builds the supernet, the trainer and the checkpoints,
    and :class:`~nasx.strategy.oneshot.lightning.OneShotModule` calls the hooks in this order::

        run(space, evaluator, workdir)
          build_supernet(space)                  the weight-sharing network
          extra_modules()                        modules trained beside it (ENAS's controller)
          load_state_dict(state)                 when resuming from a checkpoint
          configure_arch_optimizer(module)       when training starts
          every training batch (a search step):
            graph_key()                          on a GPU: the Python values a CUDA graph freezes
            arch_step(module, train, val, opt)   after the warm-up epochs
            before_weight_step(module)           then the weight step:
            weight_losses(module, batch, i, log)   its losses, one per path trained (one step)
            export_probs()                       every log_arch_every steps
          every validation batch:
            before_validation(module)
          on_epoch_end(module)                   after every training epoch
          state_dict()                           whenever a checkpoint is written
          after_fit()                            when training ends (RandomOneShot's search)
        export_top_models(top_k)                 after run: the best archs (abstract)
        export_scores(archs)                     then, by NasExperiment: each one's metrics

    Args:
        warmup_epochs: epochs of weight steps only, before architecture steps start.
        gradient_clip_val: clip the weight gradients' norm (Trainer-level clipping does not apply
            to manual optimisation, so a ``gradient_clip_val`` in the evaluator's trainer kwargs is
            moved here).
        log_arch_every: log the architecture probabilities to the Lightning logger every n steps
            (0: never).
        channels_last: channels-last memory format for 4-D inputs and weights. ``None`` (the
            default) picks it on CPU, where it measured 1.4x faster, and NCHW on GPUs, where it
            measured slower; a CPU supernet with a convolution that crashes oneDNN in
            channels-last trains in NCHW whatever is asked (see ``memory_format.py``).
        precision: Lightning precision; ``'auto'`` picks ``'bf16-mixed'`` on a GPU that supports it.
        checkpoint_edges: activation checkpointing of mixed edges (less memory, more compute).
        partial_channels: PC-DARTS partial-channel cell edges (DARTS family; op factories must
            offer ``.partial(k)``); 1 = off.
        seed: seeds the path sampling (identical on every DDP rank) and the data split.
        checkpoint_every_n_steps, checkpoint_every_minutes: with a ``workdir``, write a checkpoint
            every so many search steps / minutes, besides the one at every epoch end (see
            :mod:`nasx.strategy.oneshot.checkpoint`); a killed search loses at most one interval.
        checkpoints_kept: how many checkpoints to keep (``step=<n>.ckpt``; ``last.ckpt`` is the
            newest).
        cuda_graphs: replay each search step from a CUDA graph (one launch instead of tens of
            thousands; see :mod:`nasx._cuda_graph`). ``None`` (the default) uses them wherever the
            step can be captured: on one GPU, for strategies that run the same sub-networks every
            step (DARTS first order, GumbelDARTS). ``True`` raises where they cannot be used.

    Subclasses implement the hooks below; ``run`` does the rest. Example (any subclass):

        >>> from nasx.strategy import RandomOneShot
        >>> s = RandomOneShot(warmup_epochs=1, log_arch_every=10)
        >>> s.is_one_shot, s.channels_last
        (True, None)
    """

    is_one_shot: ClassVar[bool] = True
    supernet_mode: ClassVar[str] = "mixture"
    needs_alphas: ClassVar[bool] = True

    def __new__(cls, *args: Any, **kwargs: Any) -> BaseOneShotStrategy:
        # Keeps the arguments as given, for repr() only (what __init__ stores may be derived).
        strategy = super().__new__(cls)
        strategy.__dict__["_given_arguments"] = (args, kwargs)
        return strategy

    def __repr__(self) -> str:
        """The class and the arguments it was given: ``DARTS()`` with none, as NNI's repr.

        >>> from nasx.strategy import DARTS
        >>> DARTS(), DARTS(warmup_epochs=1)
        (DARTS(), DARTS(warmup_epochs=1))
        """
        args, kwargs = self.__dict__.get("_given_arguments", ((), {}))
        shown = [repr(a) for a in args] + [f"{k}={v!r}" for k, v in kwargs.items()]
        return f"{type(self).__name__}({', '.join(shown)})"

    def mutate_model(self, model: nn.Module) -> Supernet:
        """NNI's ``mutate_model``: the one-shot supernet of ``model`` (:meth:`build_supernet`),
        to inspect before a search. nasx builds it from a copy, so ``model`` is left as it is
        (NNI converts the space in place and returns it); the supernet answers ``simplify()``
        and ``freeze(arch)`` as the space does, ``freeze`` with the supernet's weights.

        >>> import torch.nn as nn
        >>> from nasx.space import LayerChoice, ModelSpace
        >>> from nasx.strategy import DARTS
        >>> class Net(ModelSpace):
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.op = LayerChoice([nn.Linear(2, 2), nn.Identity()], label='op')
        ...     def forward(self, x):
        ...         return self.op(x)
        >>> supernet = DARTS().mutate_model(Net())
        >>> list(supernet.simplify()), [name for name, _ in supernet.named_parameters()][-1]
        (['op'], 'arch_params.op')
        >>> supernet.freeze({'op': 1}).op
        Identity()
        """
        return self.build_supernet(model)

    def __init__(
        self,
        *,
        warmup_epochs: int = 0,
        gradient_clip_val: float | None = 5.0,
        log_arch_every: int = 50,
        channels_last: bool | None = None,
        precision: str = "auto",
        checkpoint_edges: bool = False,
        partial_channels: int = 1,
        seed: int = 0,
        checkpoint_every_n_steps: int | None = None,
        checkpoint_every_minutes: float | None = None,
        checkpoints_kept: int = 1,
        cuda_graphs: bool | None = None,
    ):
        self.warmup_epochs = check_int("warmup_epochs", warmup_epochs, allow_none=False)
        self.gradient_clip_val = gradient_clip_val
        self.log_arch_every = check_int(
            "log_arch_every", log_arch_every, minimum=1, allow_none=False
        )
        self.channels_last = channels_last
        self.use_channels_last = False  # what run() resolved for the device it trains on
        self.precision = precision
        self.checkpoint_edges = checkpoint_edges
        self.partial_channels = check_int(
            "partial_channels", partial_channels, minimum=1, allow_none=False
        )
        self.seed = seed
        self.checkpoint_every_n_steps = check_int(
            "checkpoint_every_n_steps", checkpoint_every_n_steps, minimum=1
        )
        if checkpoint_every_minutes is not None:
            check_number("checkpoint_every_minutes", checkpoint_every_minutes, minimum=0.001)
        self.checkpoint_every_minutes = checkpoint_every_minutes
        self.checkpoints_kept = check_int(
            "checkpoints_kept", checkpoints_kept, minimum=1, allow_none=False
        )
        if cuda_graphs not in (None, True, False):
            raise ValueError(f"cuda_graphs must be None (auto), True or False, got {cuda_graphs!r}")
        self.cuda_graphs = cuda_graphs
        # What run() sets; None before the first run.
        self.supernet: Supernet | None = None
        self.device = torch.device("cpu")  # where the supernet was trained
        self.module: OneShotModule | None = None  # the Lightning module of the last run
        self.space: nn.Module | None = None  # the model space searched
        self.val_loader: Any = (
            None  # the architecture half of the data (RandomOneShot scores on it)
        )
        self.trainer: pl.Trainer | None = None  # the trainer of the last run, once it has trained
        self.identity: dict[str, Any] | None = None  # what a checkpoint must match (checkpoint.py)
        #: resume a checkpoint written with other strategy or evaluator settings (never another
        #: space): set by ``NasExperiment(..., resume="force")``
        self.resume_other_settings = False
        #: a Lightning callback that shows the search's progress in place of Lightning's text bar
        #: (set by NasExperiment in a Jupyter kernel: refreshing HTML, as multi-trial runs show)
        self.display_callback: Any = None

    # -- hooks for subclasses, in the order a run calls them (see the class docstring) -----------
    def extra_modules(self) -> nn.Module:
        """Called when the Lightning module is built: modules trained and checkpointed beside the
        supernet (e.g. ENAS's RL controller)."""
        return nn.ModuleDict()

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Called when a run resumes from a checkpoint, with what :meth:`state_dict` returned."""
        return None  # by default, nothing

    def configure_arch_optimizer(self, module: OneShotModule) -> torch.optim.Optimizer | None:
        """Called when training starts: the optimizer of the architecture (None: no arch step
        optimizer, as for RandomOneShot)."""
        return None

    #: Why :meth:`graph_key` is None for this strategy (read in messages).
    graph_blocker_reason: str = "runs another sub-network at every step"

    def graph_key(self) -> Any:
        """Called before every search step on a GPU: the Python values the step reads (a
        temperature), frozen into a CUDA graph of it; None when the step cannot be captured (a new
        path every step). A new key makes the graph be captured again."""
        return None

    def arch_step(
        self,
        module: OneShotModule,
        train_batch: Any,
        val_batch: Any,
        arch_optimizer: torch.optim.Optimizer | None,
    ) -> None:
        """Called at every search step after the warm-up epochs, before the weight step: update
        the architecture from ``val_batch`` (no-op for RandomOneShot)."""
        return None  # by default, nothing

    def before_weight_step(self, module: OneShotModule) -> None:
        """Called at every search step before the weight step: set the supernet's mode for it
        (mixture, or a sampled path)."""
        return None  # by default, nothing

    def weight_losses(
        self, module: OneShotModule, train_batch: Any, batch_idx: int, log: bool
    ) -> Iterator[torch.Tensor]:
        """Called at every search step after :meth:`before_weight_step`: the weight step's losses
        on ``train_batch``, one per path trained. The module back-propagates each loss as it is
        yielded (so one path's graph is freed before the next path runs), sums the gradients and
        steps the weight optimizer once; the first loss is the step's reported loss. By default,
        the one loss of the supernet as :meth:`before_weight_step` set it (the evaluator's
        ``training_step``, logged when ``log``); RandomOneShot's sandwich rule yields several."""
        yield module.loss(train_batch, batch_idx, log=log)

    def export_probs(self) -> dict[str, dict[Any, float]]:
        """Called every ``log_arch_every`` steps (logged) and by users: ``{label: {value: p}}``."""
        return self._need_supernet().export_probs()

    def before_validation(self, module: OneShotModule) -> None:
        """Called before every validation batch: set the supernet's mode for validation."""
        return None  # by default, nothing

    def on_epoch_end(self, module: OneShotModule) -> None:
        """Called when a training epoch ends: per-epoch schedules (a Gumbel temperature)."""
        return None  # by default, nothing

    def state_dict(self) -> dict[str, Any]:
        """Called when a checkpoint is saved: the strategy's own state that is not in a module
        or optimizer (a schedule's position), stored under ``checkpoint['strategy']``."""
        return {}

    def after_fit(self) -> None:
        """Called when training ends, before :meth:`run` returns (RandomOneShot searches the
        trained supernet here)."""
        return None  # by default, nothing

    @abc.abstractmethod
    def export_top_models(self, top_k: int = 1) -> list[dict[str, Any]]:
        """Called after :meth:`run`: the ``top_k`` best archs, best first."""

    def export_scores(self, archs: list[dict[str, Any]]) -> list[dict[str, float]]:
        """Called by ``NasExperiment`` after :meth:`export_top_models`: what the search knows of
        each arch, stored as its row's ``metrics``. By default ``{'arch_probability': p}``, the
        product over labels of :meth:`export_probs` (labels it has no probability for count 1)."""
        probs = self.export_probs()
        scores = []
        for arch in archs:
            p = 1.0
            for label, dist in probs.items():
                if label in arch:
                    p *= float(dist.get(prob_key(arch[label]), 0.0))
            scores.append({"arch_probability": p})
        return scores

    # -- the run --------------------------------------------------------------------------
    def build_supernet(self, model_space: nn.Module) -> Supernet:
        """Called when a run starts: the weight-sharing network of ``model_space``."""
        return Supernet(
            model_space,
            mode=self.supernet_mode,
            alphas=self.needs_alphas,
            checkpoint=self.checkpoint_edges,
            partial_channels=self.partial_channels,
        )

    def run(
        self,
        model_space: nn.Module,
        evaluator: OneShotEvaluator,
        workdir: pathlib.Path | None = None,
    ) -> None:
        """Train the supernet of ``model_space`` with ``evaluator`` (a Lightning evaluator).

        Afterwards the supernet stays on the device it was trained on (``self.device``), and so
        do the models :meth:`subnet` returns; move them with ``.to(...)`` as any module.

        With ``workdir``, checkpoints go to ``workdir/checkpoints`` and a run finding
        ``last.ckpt`` there resumes from it (optimizer states, arch weights, epoch, step). The
        workdir is locked while the search runs, as a multi-trial experiment's is: a second run
        into it fails at once, naming the process that holds it. (Under DDP the rank-0 process
        holds the lock; the ranks a launcher started train into the same workdir by design.)
        """
        lock = None
        if workdir is not None and not _secondary_rank():
            lock = acquire_workdir_lock(pathlib.Path(workdir), reentrant=True)
        try:
            self._search(model_space, evaluator, workdir)
        finally:
            if lock is not None:
                lock.release()

    def _search(
        self,
        model_space: nn.Module,
        evaluator: OneShotEvaluator,
        workdir: pathlib.Path | None,
    ) -> None:
        """:meth:`run`'s search, in a locked workdir."""
        require(  # before importing Lightning: a wrong evaluator fails at once
            evaluator,
            OneShotEvaluator,
            "the evaluator of a one-shot strategy (a Lightning evaluator: Classification, "
            "Regression or Lightning)",
        )
        from pytorch_lightning.utilities import CombinedLoader

        from .lightning import OneShotModule

        module = evaluator.module
        self.supernet = self.build_supernet(model_space)
        self.space = model_space
        train, val = search_loaders(evaluator, self.seed)
        self.val_loader = val
        trainer = self._build_trainer(evaluator, workdir)
        if workdir is not None and (evaluator.trainer.kwargs or {}).get("strategy") != "ddp":
            # Loaders that know their position in the epoch: a mid-epoch resume continues with
            # the next batch. (Under DDP Lightning must see the plain loaders to shard them.)
            from .checkpoint import ResumableLoader

            train_steps, val_steps = ResumableLoader(train), ResumableLoader(val)
        else:
            train_steps, val_steps = train, val
        # Where the supernet trains: known once the trainer exists (also under DDP).
        self.device = trainer.strategy.root_device
        self.use_channels_last = resolve_channels_last(
            self.channels_last, self.supernet, self.device.type
        )
        if self.use_channels_last:
            self.supernet.to(memory_format=torch.channels_last)
        self.module = OneShotModule(copy.deepcopy(module), self.supernet, self)
        from .checkpoint import check_checkpoint, experiment_identity

        self.identity = experiment_identity(model_space, self, evaluator)
        ckpt = None
        if workdir is not None and (pathlib.Path(workdir) / "checkpoints" / "last.ckpt").exists():
            ckpt = str(pathlib.Path(workdir) / "checkpoints" / "last.ckpt")
            check_checkpoint(
                pathlib.Path(ckpt),
                self.identity,
                trainer.max_epochs,
                other_settings=self.resume_other_settings,
            )
            _log.info("resuming one-shot search from %s", ckpt)
        # CombinedLoader warns too; Lightning's INFO lines say what the search shows already
        with quiet_third_party_warnings(), quiet_lightning_logs():
            loaders = CombinedLoader(
                {"train": train_steps, "val": val_steps}, mode="max_size_cycle"
            )
            trainer.fit(
                self.module,
                train_dataloaders=loaders,
                val_dataloaders=in_order(val),
                ckpt_path=ckpt,
            )
        self.trainer = trainer
        # Lightning's teardown moves the model to the CPU: bring the supernet (and the modules
        # trained beside it) back to the device it was trained on, so the supernet, subnet(arch)
        # and post-search ranking (RandomOneShot) all run there.
        self.module.to(self.device)
        self.after_fit()

    def _build_trainer(self, evaluator: OneShotEvaluator, workdir: pathlib.Path | None) -> Any:
        """The evaluator's trainer spec, adjusted for one-shot training (see :meth:`run`)."""
        spec = evaluator.trainer
        kwargs = dict(spec.kwargs or {})
        overrides: dict[str, Any] = {}
        if kwargs.get("gradient_clip_val") is not None:
            # Lightning refuses trainer-level clipping with manual optimisation: we clip ourselves.
            self.gradient_clip_val = kwargs["gradient_clip_val"]
            overrides["gradient_clip_val"] = None
        if self.precision != "auto":
            overrides["precision"] = self.precision
        elif (
            "precision" not in kwargs
            and _has_cuda_bf16()
            and kwargs.get("accelerator", "auto") in ("auto", "gpu", "cuda")
        ):
            overrides["precision"] = "bf16-mixed"
        callbacks = spec.fresh_callbacks()
        if workdir is not None:
            from pytorch_lightning.callbacks import ModelCheckpoint

            from .checkpoint import SearchCheckpoint

            workdir = pathlib.Path(workdir)
            overrides.setdefault("default_root_dir", str(workdir))
            # Our own Checkpoint callback writes them (Lightning then adds no ModelCheckpoint).
            overrides["enable_checkpointing"] = True
            callbacks = [c for c in callbacks if not isinstance(c, ModelCheckpoint)]
            callbacks.append(
                SearchCheckpoint(
                    workdir / "checkpoints",
                    every_n_steps=self.checkpoint_every_n_steps,
                    every_minutes=self.checkpoint_every_minutes,
                    keep=self.checkpoints_kept,
                )
            )
        if self.display_callback is not None:
            callbacks.append(self.display_callback)
            overrides["enable_progress_bar"] = False
        overrides["callbacks"] = callbacks
        if kwargs.get("strategy") == "ddp":
            # Steps touch different parameters (sampled paths, two optimizers); OneShotModule
            # averages gradients itself, so DDP only has to start the processes.
            from pytorch_lightning.strategies import DDPStrategy

            overrides["strategy"] = DDPStrategy(find_unused_parameters=True)
        return spec.build(**overrides)

    def _need_supernet(self) -> Supernet:
        if self.supernet is None:
            raise RuntimeError(
                f"{type(self).__name__} has not run yet: call run(space, evaluator) first"
            )
        return self.supernet

    def subnet(self, arch: dict[str, Any]) -> nn.Module:
        """The fixed model of ``arch`` with the trained supernet's weights inherited."""
        from .supernet import subnet

        return subnet(self._need_supernet(), arch)
