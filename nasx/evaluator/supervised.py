"""Classification and Regression: ready-made Lightning evaluators for supervised learning.

Their ``.module`` (a :class:`SupervisedLearningModule`) holds the science one-shot strategies
reuse on a supernet: the criterion, the validation metric and the optimizer recipe.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import pytorch_lightning as pl
import torch
import torch.nn as nn
import torchmetrics

from .hparams import searchable
from .lightning import Lightning, LightningModule, Trainer

# An optimizer class (``torch.optim.Adam``) or any callable taking ``(params, lr=, weight_decay=)``;
# ``type[Optimizer]`` would not do: the base class's own constructor takes ``defaults``, not ``lr``.
OptimizerFactory = Callable[..., torch.optim.Optimizer]

__all__ = [
    "Classification",
    "ClassificationModule",
    "Regression",
    "RegressionModule",
    "SupervisedLearningModule",
]


def _make_criterion(criterion: Any) -> Callable[..., torch.Tensor]:
    """A loss class (``nn.CrossEntropyLoss``) is instantiated; a module or function is used as is."""
    if isinstance(criterion, type):
        return criterion()
    if callable(criterion):
        return criterion
    raise TypeError(f"criterion must be a loss class, module or function, got {criterion!r}")


def _note_export_onnx(export_onnx: bool) -> None:
    """NNI's modules export ONNX graphs for its web UI; nasx has none: True is ignored, with a warning."""
    if export_onnx:
        warnings.warn("export_onnx is not supported by nasx and was ignored", stacklevel=3)


class SupervisedLearningModule(LightningModule):
    """Train ``self.model`` on ``(x, y)`` batches with a criterion; log a validation metric.

    Logs ``train_loss`` (per epoch), ``val_loss`` and ``metric_name`` (per validation run).
    Subclasses set ``metric_name``, ``metric_key`` (the key of ``self.metrics``, NNI's dict of
    metrics for training-batch logging) and ``direction``, implement :meth:`make_metric` and may
    override :meth:`prepare`. One-shot strategies reuse ``criterion``, ``val_metric`` and
    :meth:`make_optimizer` on a supernet.
    """

    metric_key: str = "metric"

    def __init__(
        self,
        criterion: Any,
        learning_rate: float = 1e-3,
        weight_decay: float = 0.0,
        optimizer: OptimizerFactory = torch.optim.Adam,
    ) -> None:
        super().__init__()
        if learning_rate <= 0:
            raise ValueError(f"learning_rate must be positive, got {learning_rate}")
        if weight_decay < 0:
            raise ValueError(f"weight_decay must be >= 0, got {weight_decay}")
        self.criterion = _make_criterion(criterion)
        self.learning_rate = learning_rate
        self.weight_decay = weight_decay
        self.optimizer_class = optimizer
        self.val_metric = self.make_metric()
        # NNI's ClassificationModule API, which its tutorials' subclasses read:
        # self.hparams.learning_rate / .weight_decay, and self.metrics ({'acc': metric} for
        # training-batch logging; separate from val_metric so training never pollutes it).
        self.save_hyperparameters({"learning_rate": learning_rate, "weight_decay": weight_decay})
        self.metrics = nn.ModuleDict({self.metric_key: self.make_metric()})

    # --- hooks for subclasses -------------------------------------------------------------
    def make_metric(self) -> torchmetrics.Metric:
        """The validation metric object (accumulates over a validation run)."""
        raise NotImplementedError

    def prepare(self, y_hat: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Adapt model output and target before the loss and metric (default: unchanged)."""
        return y_hat, y

    # --- Lightning ------------------------------------------------------------------------
    def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        x, y = batch
        y_hat, y = self.prepare(self(x), y)
        loss = self.criterion(y_hat, y)
        self.log("train_loss", loss, on_step=False, on_epoch=True, batch_size=len(y))
        return loss

    def validation_step(self, batch: Any, batch_idx: int) -> None:
        x, y = batch
        y_hat, y = self.prepare(self(x), y)
        # batch_size makes Lightning's epoch mean a per-sample mean even when the last batch is short
        self.log(
            "val_loss", self.criterion(y_hat, y), on_step=False, on_epoch=True, batch_size=len(y)
        )
        self.val_metric.update(y_hat, y)
        self.log(self.metric_name, self.val_metric, on_step=False, on_epoch=True, prog_bar=True)

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return self.make_optimizer(self.parameters())

    def make_optimizer(self, params: Any) -> torch.optim.Optimizer:
        """Build the configured optimizer over ``params`` (one-shot strategies pass model weights)."""
        return self.optimizer_class(params, lr=self.learning_rate, weight_decay=self.weight_decay)


class _MulticlassAccuracy(torchmetrics.Metric):
    """Fraction of samples whose argmax prediction equals the label; needs no num_classes."""

    full_state_update = False
    # states registered by add_state; declared so they read as tensors, not `Tensor | Module`
    correct: torch.Tensor
    total: torch.Tensor

    def __init__(self) -> None:
        super().__init__()
        self.add_state("correct", default=torch.tensor(0), dist_reduce_fx="sum")
        self.add_state("total", default=torch.tensor(0), dist_reduce_fx="sum")

    def update(self, logits: torch.Tensor, target: torch.Tensor) -> None:
        # logits (B, C), target (B,) integer labels
        self.correct += (logits.argmax(dim=-1) == target).sum()
        self.total += target.numel()

    def compute(self) -> torch.Tensor:
        return self.correct.float() / self.total.clamp(min=1)


class ClassificationModule(SupervisedLearningModule):
    """Cross-entropy training; ``val_acc`` = top-1 accuracy over the validation set.

    The arguments come in NNI 3.0's order, so a positional NNI call means the same here
    (``export_onnx`` fifth, ``num_classes`` sixth):

        >>> ClassificationModule(torch.nn.CrossEntropyLoss, 1e-3, 0.0, torch.optim.Adam, False, 10).num_classes
        10
    """

    metric_name = "val_acc"
    metric_key = "acc"
    direction = "maximize"

    def __init__(
        self,
        criterion: Any = nn.CrossEntropyLoss,
        learning_rate: float = 1e-3,
        weight_decay: float = 0.0,
        optimizer: OptimizerFactory = torch.optim.Adam,
        export_onnx: bool = False,
        num_classes: int | None = None,
    ) -> None:
        self.num_classes = num_classes
        super().__init__(criterion, learning_rate, weight_decay, optimizer)
        _note_export_onnx(export_onnx)

    def make_metric(self) -> torchmetrics.Metric:
        if self.num_classes is None:
            return _MulticlassAccuracy()
        # micro average = plain top-1 accuracy; also checks labels are < num_classes
        return torchmetrics.classification.MulticlassAccuracy(self.num_classes, average="micro")


class RegressionModule(SupervisedLearningModule):
    """MSE training; ``val_mse`` = mean squared error over every validation target element."""

    metric_name = "val_mse"
    metric_key = "mse"
    direction = "minimize"

    def __init__(
        self,
        criterion: Any = nn.MSELoss,
        learning_rate: float = 1e-3,
        weight_decay: float = 0.0,
        optimizer: OptimizerFactory = torch.optim.Adam,
        export_onnx: bool = False,
    ) -> None:
        super().__init__(criterion, learning_rate, weight_decay, optimizer)
        _note_export_onnx(export_onnx)

    def make_metric(self) -> torchmetrics.Metric:
        return torchmetrics.MeanSquaredError()

    def prepare(self, y_hat: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        # A (B, 1) output against (B,) targets would broadcast to (B, B) in MSELoss: align shapes.
        y = y.to(y_hat.dtype)
        if y_hat.shape != y.shape and y_hat.numel() == y.numel():
            y_hat = y_hat.reshape(y.shape)
        return y_hat, y


# NNI 3.0 spellings accepted for easy porting: old name -> nasx name.
_NNI_ALIASES = {"train_dataloader": "train_dataloaders", "val_dataloader": "val_dataloaders"}


def _split_trainer_kwargs(
    kwargs: dict[str, Any], loaders: dict[str, Any]
) -> tuple[Trainer, dict[str, Any] | None]:
    """Take ``trainer=``, ``fit_kwargs=`` and NNI's aliases out of ``kwargs``; the rest build a Trainer.

    ``loaders`` (``train_dataloaders``/``val_dataloaders`` given by the caller) is updated in place
    from NNI's singular ``train_dataloader``/``val_dataloader``.
    """
    for old, new in _NNI_ALIASES.items():
        if old in kwargs:
            if loaders[new] is not None:
                raise TypeError(f"give {new}= or its NNI alias {old}=, not both")
            loaders[new] = kwargs.pop(old)
    if kwargs.pop("export_onnx", False):
        warnings.warn("export_onnx is not supported by nasx and was ignored", stacklevel=3)
    trainer = kwargs.pop("trainer", None)
    fit_kwargs = kwargs.pop("fit_kwargs", None)
    if trainer is not None and kwargs:
        raise ValueError(
            f"give either trainer=Trainer(...) or trainer keyword arguments, not both "
            f"(got trainer and {sorted(kwargs)})"
        )
    return trainer if trainer is not None else Trainer(**kwargs), fit_kwargs


class Classification(Lightning):
    """Train a classifier with cross-entropy; the metric is validation accuracy (``val_acc``).

    Extra keyword arguments are ``pytorch_lightning.Trainer`` arguments (``max_epochs=1``, ...).
    ``cuda_graphs`` is :class:`~nasx.evaluator.Lightning`'s (training steps replayed from a CUDA
    graph on a GPU where the run allows it). The model maps a batch of inputs to logits
    (B, num_classes); labels are integers. With a multi-fidelity scheduler it trains ``budget``
    epochs, and a promoted trial continues from its checkpoint (optimizer state included)
    instead of starting over: :meth:`Lightning.evaluate`.

    Example:
        >>> import torch
        >>> from torch.utils.data import DataLoader, TensorDataset
        >>> _ = torch.manual_seed(0)  # the data and the model's first weights: the same every run
        >>> x = torch.randn(64, 2); y = (x[:, 0] > 0).long()
        >>> data = DataLoader(TensorDataset(x, y), batch_size=16)
        >>> ev = Classification(learning_rate=0.1, train_dataloaders=data, val_dataloaders=data,
        ...                     max_epochs=5, accelerator='cpu')
        >>> ev.evaluate(torch.nn.Linear(2, 2)) > 0.9
        True
    """

    @searchable  # learning_rate=Numerical(...): hyperparameters, see nasx.evaluator.hparams
    def __init__(
        self,
        criterion: Any = nn.CrossEntropyLoss,
        learning_rate: float = 1e-3,
        weight_decay: float = 0.0,
        optimizer: OptimizerFactory = torch.optim.Adam,
        train_dataloaders: Any = None,
        val_dataloaders: Any = None,
        datamodule: pl.LightningDataModule | None = None,
        num_classes: int | None = None,
        cuda_graphs: bool | None = None,
        **trainer_kwargs: Any,
    ) -> None:
        module = ClassificationModule(
            criterion, learning_rate, weight_decay, optimizer, num_classes=num_classes
        )
        loaders = {"train_dataloaders": train_dataloaders, "val_dataloaders": val_dataloaders}
        trainer, fit_kwargs = _split_trainer_kwargs(trainer_kwargs, loaders)
        super().__init__(
            module,
            trainer,
            datamodule=datamodule,
            fit_kwargs=fit_kwargs,
            cuda_graphs=cuda_graphs,
            **loaders,
        )


class Regression(Lightning):
    """Train a regressor with MSE; the metric is validation MSE (``val_mse``), minimized.

    Extra keyword arguments are ``pytorch_lightning.Trainer`` arguments (``max_epochs=1``, ...).
    Budgets and continuing from a checkpoint: as :class:`Classification`.

    Example:
        >>> import torch
        >>> from torch.utils.data import DataLoader, TensorDataset
        >>> x = torch.randn(64, 3); y = x @ torch.tensor([1.0, -2.0, 0.5])
        >>> data = DataLoader(TensorDataset(x, y), batch_size=16)
        >>> ev = Regression(learning_rate=0.05, train_dataloaders=data, val_dataloaders=data,
        ...                 max_epochs=20, accelerator='cpu')
        >>> ev.direction, ev.evaluate(torch.nn.Linear(3, 1)) < 0.1
        ('minimize', True)
    """

    direction = "minimize"

    @searchable  # learning_rate=Numerical(...): hyperparameters, see nasx.evaluator.hparams
    def __init__(
        self,
        criterion: Any = nn.MSELoss,
        learning_rate: float = 1e-3,
        weight_decay: float = 0.0,
        optimizer: OptimizerFactory = torch.optim.Adam,
        train_dataloaders: Any = None,
        val_dataloaders: Any = None,
        datamodule: pl.LightningDataModule | None = None,
        cuda_graphs: bool | None = None,
        **trainer_kwargs: Any,
    ) -> None:
        module = RegressionModule(criterion, learning_rate, weight_decay, optimizer)
        loaders = {"train_dataloaders": train_dataloaders, "val_dataloaders": val_dataloaders}
        trainer, fit_kwargs = _split_trainer_kwargs(trainer_kwargs, loaders)
        super().__init__(
            module,
            trainer,
            datamodule=datamodule,
            fit_kwargs=fit_kwargs,
            cuda_graphs=cuda_graphs,
            **loaders,
        )
