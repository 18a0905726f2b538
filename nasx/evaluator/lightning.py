"""Lightning evaluator: fit a LightningModule holding the model, return its validation metric.

``Trainer`` is a picklable spec of ``pytorch_lightning.Trainer`` arguments: every evaluation
builds a fresh ``pl.Trainer`` from it, so one evaluator serves many trials and processes.
"""

from __future__ import annotations

import contextlib
import copy
import difflib
import inspect
import signal
import threading
import warnings
from collections.abc import Iterator
from typing import Any

import pytorch_lightning as pl
import torch.nn as nn

from .._third_party import quiet_lightning_logs, quiet_third_party_warnings
from .base import Direction, Evaluator, Report
from .checkpoint import Checkpoint, restore_rng_state, rng_state
from .cuda_graphs import CudaGraphTraining
from .hparams import searchable
from .nni_args import translate_trainer_kwargs

__all__ = ["Lightning", "LightningModule", "Trainer"]

# Quiet defaults for search: a trial is one of many, so no bars, summaries, checkpoints or logs,
# and no sanity-check validation (it would cost time and its numbers are not reported).
SEARCH_TRAINER_DEFAULTS: dict[str, Any] = {
    "enable_progress_bar": False,
    "enable_model_summary": False,
    "enable_checkpointing": False,
    "logger": False,
    "num_sanity_val_steps": 0,
}


def _check_trainer_kwargs(kwargs: dict[str, Any]) -> None:
    """Reject names ``pl.Trainer`` does not take now, not at the first trial of a long search."""
    accepted = inspect.signature(pl.Trainer.__init__).parameters
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in accepted.values()):
        return
    unknown = [name for name in kwargs if name not in accepted]
    if unknown:
        hints = []
        for name in unknown:
            close = difflib.get_close_matches(name, accepted, n=1)
            hints.append(f"{name!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
        raise TypeError(
            f"pytorch_lightning.Trainer does not accept {', '.join(hints)}; "
            "see help(pytorch_lightning.Trainer) for its arguments"
        )


class Trainer:
    """Picklable recipe for a ``pytorch_lightning.Trainer`` (NNI's ``Trainer(max_epochs=1)``).

    ``kwargs`` are ``pl.Trainer`` arguments; :meth:`build` creates a new trainer from them on top
    of quiet search defaults (no progress bar, model summary, checkpointing, logger or sanity
    check) unless the kwargs say otherwise. Note that Lightning's own default is 1000 epochs:
    set ``max_epochs``.

    Example:
        >>> spec = Trainer(max_epochs=2)
        >>> spec.kwargs
        {'max_epochs': 2}
        >>> trainer = spec.build(limit_train_batches=3)
        >>> trainer.max_epochs, trainer.limit_train_batches
        (2, 3)
    """

    @searchable  # max_epochs=Categorical([1, 2], label='epochs'): see nasx.evaluator.hparams
    def __init__(self, **kwargs: Any) -> None:
        kwargs = translate_trainer_kwargs(kwargs)  # NNI's gpus= -> accelerator=/devices=
        _check_trainer_kwargs(kwargs)
        self.kwargs = kwargs

    def build(self, **overrides: Any) -> pl.Trainer:
        """Create a fresh ``pl.Trainer`` from defaults, then ``self.kwargs``, then ``overrides``."""
        kwargs = {**SEARCH_TRAINER_DEFAULTS, **self.kwargs, **overrides}
        if "callbacks" not in overrides:
            kwargs["callbacks"] = self.fresh_callbacks()
        with quiet_lightning_logs():
            return pl.Trainer(**kwargs)

    def fresh_callbacks(self) -> list[pl.Callback]:
        """Deep copies of the spec's callbacks: state such as EarlyStopping's must not leak across trials."""
        callbacks = self.kwargs.get("callbacks") or []
        if not isinstance(callbacks, list | tuple):
            callbacks = [callbacks]
        return copy.deepcopy(list(callbacks))

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.kwargs.items())
        return f"Trainer({args})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Trainer) and self.kwargs == other.kwargs


class LightningModule(pl.LightningModule):
    """A ``pl.LightningModule`` that trains a model given later with
    :meth:`~LightningModule.set_model`.

    Subclasses write ``training_step``/``validation_step``/``configure_optimizers`` in terms of
    ``self.model`` and log the metric named by ``metric_name`` (e.g. ``'val_acc'``) in validation.
    ``direction`` says whether that metric is maximized or minimized.

    Example:
        >>> import torch
        >>> module = LightningModule()
        >>> module.set_model(torch.nn.Linear(4, 2))
        >>> module(torch.zeros(3, 4)).shape
        torch.Size([3, 2])
    """

    metric_name: str = "default"
    direction: str = "maximize"

    def set_model(self, model: nn.Module) -> None:
        """Attach the model to train (registered as the submodule ``model``)."""
        if not isinstance(model, nn.Module):
            raise TypeError(f"set_model expects an nn.Module, got {type(model).__name__}")
        self.model = model

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        if "model" not in self._modules:
            raise RuntimeError("no model set: call set_model(model) first")
        return self.model(*args, **kwargs)


@contextlib.contextmanager
def _keyboard_interrupt_passes_through() -> Iterator[None]:
    """Turn Lightning's Ctrl+C handling back into a KeyboardInterrupt.

    On Ctrl+C ``pl.Trainer.fit`` ignores SIGINT from then on and calls ``sys.exit(1)``; an
    experiment loop must instead see KeyboardInterrupt (to stop cleanly and keep its trials) and
    keep a working Ctrl+C.
    """
    in_main_thread = threading.current_thread() is threading.main_thread()
    handler = signal.getsignal(signal.SIGINT) if in_main_thread else None
    try:
        yield
    except SystemExit as exc:
        # Lightning calls sys.exit(1) while handling the KeyboardInterrupt: that is the context
        if isinstance(exc.__context__, KeyboardInterrupt):
            raise KeyboardInterrupt("training interrupted (Lightning caught Ctrl+C)") from None
        raise
    finally:
        if handler is not None and signal.getsignal(signal.SIGINT) is not handler:
            signal.signal(signal.SIGINT, handler)


class _ReportValidationMetric(pl.Callback):
    """Send the named validation metric to ``report`` after each validation run (not sanity checks)."""

    def __init__(self, metric_name: str, report: Report) -> None:
        self.metric_name = metric_name
        self.report = report

    # on_validation_end runs after Lightning has reduced the epoch's logged values into
    # trainer.callback_metrics (on_validation_epoch_end would be too early for module logs).
    def on_validation_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        if trainer.sanity_checking:
            return
        value = trainer.callback_metrics.get(self.metric_name)
        if value is not None:
            self.report(float(value))


class _Continuation(pl.Callback):
    """What a trial's checkpoint needs beyond Lightning's own.

    The random generators' state (Lightning saves and loads a callback's ``state_dict``):
    restored before the continued training's first epoch, the data order and dropout masks are
    those of an uninterrupted training. And no hyperparameters: they serve only
    ``load_from_checkpoint`` (the continued job builds its module from the evaluator), and
    arbitrary objects among them (a loss class) would keep ``torch.load(...,
    weights_only=True)`` from reading the checkpoint back.
    """

    def state_dict(self) -> dict[str, Any]:
        return rng_state()

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        restore_rng_state(state_dict)

    def on_save_checkpoint(
        self, trainer: pl.Trainer, pl_module: pl.LightningModule, checkpoint: dict[str, Any]
    ) -> None:
        for owner in (pl.LightningModule, pl.LightningDataModule):
            for key in ("NAME", "KEY", "TYPE"):
                checkpoint.pop(getattr(owner, f"CHECKPOINT_HYPER_PARAMS_{key}"), None)


def _has_val_dataloader(datamodule: pl.LightningDataModule | None) -> bool:
    """True when the datamodule defines ``val_dataloader`` (by subclassing or from_datasets)."""
    if datamodule is None:
        return False
    method = getattr(datamodule, "val_dataloader", None)
    return (
        method is not None
        and getattr(method, "__func__", None) is not pl.LightningDataModule.val_dataloader
    )


# Trainer arguments that change how a run is watched or where it runs, not what it trains: a
# resume may change them (stop early with a callback, log elsewhere, move from CPU to GPU).
_UNWATCHED = frozenset(
    {
        "accelerator",
        "callbacks",
        "default_root_dir",
        "detect_anomaly",
        "enable_checkpointing",
        "enable_model_summary",
        "enable_progress_bar",
        "log_every_n_steps",
        "logger",
        "num_sanity_val_steps",
        "profiler",
    }
)


def _loader_settings(role: str, loader: Any) -> dict[str, Any]:
    """A data loader's batch size, data set class and length, as ``{role}.batch_size``, ..."""
    if loader is None:
        return {}
    dataset = getattr(loader, "dataset", None)
    if dataset is None:  # not a DataLoader (a list of loaders, a dict): its type alone
        return {role: type(loader).__qualname__}
    out = {f"{role}.batch_size": getattr(loader, "batch_size", None)}
    out[f"{role}.dataset"] = type(dataset).__qualname__
    with contextlib.suppress(TypeError):  # an IterableDataset has no length
        out[f"{role}.dataset_length"] = len(dataset)
    return out


class Lightning(Evaluator):
    """Evaluate a model by fitting ``module`` (holding the model) with a fresh Lightning trainer.

    Args:
        module: a :class:`LightningModule`; each evaluation works on a deep copy of it.
        trainer: a :class:`Trainer` spec (default ``Trainer()``).
        train_dataloaders, val_dataloaders: ordinary DataLoaders (or what ``pl.Trainer.fit``
            accepts); or give ``datamodule`` instead.
        fit_kwargs: extra keyword arguments for ``pl.Trainer.fit``.
        metric: the validation metric to return (default ``module.metric_name``).
        direction: ``'maximize'``/``'minimize'`` (default ``module.direction``).
        cuda_graphs: replay each training step from a CUDA graph (see
            :class:`~nasx.evaluator.cuda_graphs.CudaGraphTraining`): ``None`` (default) where the
            run allows it (one GPU, epoch-wise LR schedules, no fp16 loss scaling, ...), ``True``
            raises when it does not, ``False`` never. On an H100 it trains DARTS-V2 about 2x as
            fast as an eager loop (``benchmarks/retrain_step.py``); on a CPU it changes nothing.

    ``evaluate(model, report)`` returns the metric's value after the last validation run and sends
    each validation run's value (one per epoch by default) to ``report``. With a multi-fidelity
    scheduler (``NasExperiment(..., scheduler=ASHA(...))``) it trains ``budget`` epochs, and a
    promoted trial continues from its Lightning checkpoint (``checkpoint``): only the epochs
    after the budget it paused at are trained and reported (see :meth:`evaluate`).

    Example:
        >>> import torch, torch.nn.functional as F
        >>> from torch.utils.data import DataLoader, TensorDataset
        >>> class Module(LightningModule):
        ...     metric_name = 'val_loss'
        ...     direction = 'minimize'
        ...     def training_step(self, batch, batch_idx):
        ...         x, y = batch
        ...         return F.mse_loss(self(x), y)
        ...     def validation_step(self, batch, batch_idx):
        ...         x, y = batch
        ...         self.log('val_loss', F.mse_loss(self(x), y))
        ...     def configure_optimizers(self):
        ...         return torch.optim.SGD(self.parameters(), lr=0.1)
        >>> data = DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=4)
        >>> ev = Lightning(Module(), Trainer(max_epochs=2, accelerator='cpu'), data, data)
        >>> epochs = []
        >>> loss = ev.evaluate(torch.nn.Linear(2, 1), report=epochs.append)
        >>> len(epochs), loss == epochs[-1], ev.direction
        (2, True, 'minimize')
    """

    @searchable  # choices among the arguments are hyperparameters: nasx.evaluator.hparams
    def __init__(
        self,
        module: LightningModule,
        trainer: Trainer | None = None,
        train_dataloaders: Any = None,
        val_dataloaders: Any = None,
        datamodule: pl.LightningDataModule | None = None,
        fit_kwargs: dict[str, Any] | None = None,
        *,
        metric: str | None = None,
        direction: str | None = None,
        cuda_graphs: bool | None = None,
    ) -> None:
        if cuda_graphs not in (None, True, False):
            raise ValueError(f"cuda_graphs must be None, True or False, got {cuda_graphs!r}")
        if not isinstance(module, pl.LightningModule) or not callable(
            getattr(module, "set_model", None)
        ):
            raise TypeError(
                "module must be a nasx.evaluator.LightningModule (a pl.LightningModule with "
                f"set_model), got {type(module).__name__}"
            )
        if trainer is None:
            trainer = Trainer()
        if isinstance(trainer, pl.Trainer):
            raise TypeError(
                "trainer must be a nasx.evaluator.Trainer spec, e.g. Trainer(max_epochs=1), not a "
                "pytorch_lightning.Trainer instance: each evaluation builds a fresh trainer"
            )
        if not isinstance(trainer, Trainer):
            raise TypeError(
                f"trainer must be a nasx.evaluator.Trainer, got {type(trainer).__name__}"
            )
        if datamodule is not None and (
            train_dataloaders is not None or val_dataloaders is not None
        ):
            raise ValueError("give either datamodule or train/val dataloaders, not both")
        direction = direction or getattr(module, "direction", "maximize")
        if direction not in ("maximize", "minimize"):
            raise ValueError(f"direction must be 'maximize' or 'minimize', got {direction!r}")
        self.module = module
        self.trainer = trainer
        self.train_dataloaders = train_dataloaders
        self.val_dataloaders = val_dataloaders
        self.datamodule = datamodule
        self.fit_kwargs = dict(fit_kwargs or {})
        self.metric = str(metric or getattr(module, "metric_name", "default"))
        self.direction: Direction = direction  # type: ignore[assignment]  # checked above
        self.cuda_graphs = cuda_graphs

    def resume_settings(self) -> dict[str, Any]:
        """What a resumed experiment must train with (stored with it; a resume with other values
        is refused, naming the setting): the module's constructor arguments (learning rate,
        weight decay, optimizer, loss, ...), every trainer argument, each data loader's batch
        size, data set and its length, the data module and ``fit_kwargs``.

        Example:
            >>> import torch
            >>> from torch.utils.data import DataLoader, TensorDataset
            >>> from nasx.evaluator import Classification
            >>> data = DataLoader(TensorDataset(torch.randn(8, 2), torch.zeros(8).long()), batch_size=4)
            >>> s = Classification(learning_rate=0.5, train_dataloaders=data, val_dataloaders=data,
            ...                    max_epochs=3).resume_settings()
            >>> s['learning_rate'], s['max_epochs'], s['train_dataloaders.batch_size']
            (0.5, 3, 4)
        """
        from nasx._config import describe, plain_setting

        settings = {k: v for k, v in describe(self.module).items() if k != "type"}
        settings["module"] = type(self.module).__qualname__
        for name, attr in (("optimizer", "optimizer_class"), ("criterion", "criterion")):
            if hasattr(self.module, attr):
                settings[name] = plain_setting(getattr(self.module, attr))
        settings.update(
            {k: plain_setting(v) for k, v in self.trainer.kwargs.items() if k not in _UNWATCHED}
        )
        for role in ("train_dataloaders", "val_dataloaders"):
            settings.update(_loader_settings(role, getattr(self, role)))
        if self.datamodule is not None:
            described = describe(self.datamodule)
            settings["datamodule"] = described.pop("type")
            settings.update({f"datamodule.{k}": v for k, v in described.items()})
        settings.update({f"fit_kwargs.{k}": plain_setting(v) for k, v in self.fit_kwargs.items()})
        return settings

    def evaluate(
        self,
        model: nn.Module,
        report: Report | None = None,
        budget: int | None = None,
        checkpoint: Checkpoint | None = None,
    ) -> float:
        """Fit a copy of ``self.module`` holding ``model``; return the last validation metric.

        ``budget``: train this many epochs instead of the trainer's ``max_epochs`` (a
        multi-fidelity scheduler sets it; None: the trainer's own).

        ``checkpoint`` (a :class:`~nasx.evaluator.checkpoint.Checkpoint`; a scheduler's
        experiment passes it): continue from the Lightning checkpoint saved at
        ``checkpoint.from_budget`` epochs (model, optimizers, LR schedulers, epoch and step
        counters, callbacks' state, random generators), so only epochs ``from_budget + 1`` to
        ``budget`` are trained and reported; once ``budget`` epochs are trained, save the
        checkpoint there (atomically) for the next promotion.
        """
        if self.val_dataloaders is None and not _has_val_dataloader(self.datamodule):
            raise ValueError(
                f"{type(self).__name__} needs validation data to compute the metric "
                f"{self.metric!r}: pass val_dataloaders=..., or a datamodule with val_dataloader()"
            )
        epochs = _epochs(budget)
        if checkpoint is not None and checkpoint.from_budget:
            start = _epochs(checkpoint.from_budget)
            if epochs is not None and start is not None and start >= epochs:
                raise ValueError(
                    f"cannot continue from {start} epochs to a budget of {epochs}: the budget "
                    "must be larger than the one the checkpoint was saved at"
                )
        return self._final_metric(self._fit(model, report, epochs, checkpoint))

    def fit(self, model: nn.Module) -> float | None:
        """NNI's ``evaluator.fit(model)``: train ``model`` (in place) as :meth:`evaluate` does.

        Returns the validation metric when validation data was given, else None.
        """
        with warnings.catch_warnings():
            # training-only data is a normal use of fit (retraining); Lightning would say so
            warnings.filterwarnings("ignore", "You defined a `validation_step` but have no")
            trainer = self._fit(model, None)
        value = trainer.callback_metrics.get(self.metric)
        return None if value is None else float(value)

    def _fit(
        self,
        model: nn.Module,
        report: Report | None,
        epochs: int | None = None,
        checkpoint: Checkpoint | None = None,
    ) -> pl.Trainer:
        # copy the module without any model set on it earlier (memo maps it to None): cheap
        previous = self.module._modules.get("model")
        module = copy.deepcopy(
            self.module, memo={id(previous): None} if previous is not None else None
        )
        module.set_model(model)
        callbacks: list[pl.Callback] = [CudaGraphTraining(self.cuda_graphs)]
        if report is not None:
            callbacks.append(_ReportValidationMetric(self.metric, report))
        fit_kwargs = dict(self.fit_kwargs)
        if checkpoint is not None:
            callbacks.append(_Continuation())  # saved and restored with the checkpoint
            if checkpoint.resume_path is not None:  # a promotion: the epochs after it only
                fit_kwargs.update(ckpt_path=checkpoint.resume_path, weights_only=True)
        with (
            quiet_lightning_logs(),
            _keyboard_interrupt_passes_through(),
            quiet_third_party_warnings(),
        ):
            # a budget replaces the epoch limit, and a step limit that would end training sooner
            budget = {} if epochs is None else {"max_epochs": epochs, "max_steps": -1}
            trainer = self.trainer.build(
                callbacks=self.trainer.fresh_callbacks() + callbacks, **budget
            )
            if self.datamodule is not None:
                trainer.fit(module, datamodule=self.datamodule, **fit_kwargs)
            else:
                trainer.fit(
                    module,
                    train_dataloaders=self.train_dataloaders,
                    val_dataloaders=self.val_dataloaders,
                    **fit_kwargs,
                )
            # Only a training that reached its budget is a state at that budget (an early
            # stop is not): without one, a promotion trains the trial again from scratch.
            if checkpoint is not None and trainer.current_epoch == epochs:
                checkpoint.write(lambda path: trainer.save_checkpoint(path, weights_only=False))
        return trainer

    def _final_metric(self, trainer: pl.Trainer) -> float:
        value = trainer.callback_metrics.get(self.metric)
        if value is None:
            seen = sorted(trainer.callback_metrics) or ["none"]
            raise RuntimeError(
                f"the validation metric {self.metric!r} was never logged; metrics that were: "
                f"{', '.join(seen)}. Log it with self.log({self.metric!r}, ...) in "
                "validation_step, or pass metric=<one of those> to the evaluator"
            )
        return float(value)

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(module={type(self.module).__name__}, trainer={self.trainer!r}, "
            f"metric={self.metric!r}, direction={self.direction!r})"
        )


def _epochs(budget: Any) -> int | None:
    """A budget as the number of epochs to train: a positive whole number (2 or 2.0), or None.

    >>> _epochs(3), _epochs(3.0), _epochs(None)
    (3, 3, None)
    """
    if budget is None:
        return None
    whole = isinstance(budget, int | float) and not isinstance(budget, bool)
    if not whole or budget != int(budget) or budget < 1:
        raise ValueError(
            f"a Lightning evaluator's budget is a number of epochs, a positive whole number; "
            f"got {budget!r}"
        )
    return int(budget)
