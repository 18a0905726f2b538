"""The DARTS retraining recipe as parts: what takes a found cell to ~97% on CIFAR-10.

Liu et al. (DARTS, ICLR 2019) retrain the found cell in a 20-cell, 36-channel network for 600
epochs with SGD (lr 0.025, momentum 0.9, weight decay 3e-4) on a cosine schedule, an auxiliary
head weighted 0.4, drop-path rising linearly to 0.2, gradient clipping at 5, batch 96, and Cutout
16 on top of crop and flip (:func:`nasx.evaluator.augment.darts_train_transform`). Each part is
here: :class:`DartsRecipe` (the numbers), :class:`DartsRetrainModule` (loss with the auxiliary
head, drop-path schedule, optimizer and cosine schedule), :func:`darts_retrain_evaluator` (a
``Lightning`` evaluator with gradient clipping in its trainer).

    >>> recipe = DartsRecipe()
    >>> recipe.learning_rate, recipe.auxiliary_loss_weight, recipe.drop_path_prob, recipe.max_epochs
    (0.025, 0.4, 0.2, 600)
    >>> drop_path_prob_at(epoch=300, max_epochs=600, final_prob=0.2)
    0.1
"""

from __future__ import annotations

import dataclasses
from typing import Any

import torch
import torch.nn as nn

from .lightning import Lightning, Trainer
from .supervised import ClassificationModule

__all__ = ["DartsRecipe", "DartsRetrainModule", "darts_retrain_evaluator", "drop_path_prob_at"]


@dataclasses.dataclass(frozen=True)
class DartsRecipe:
    """The published retraining hyper-parameters (DARTS's ``train.py`` defaults)."""

    learning_rate: float = 0.025
    momentum: float = 0.9
    weight_decay: float = 3e-4
    max_epochs: int = 600
    eta_min: float = 0.0  # the cosine schedule's final learning rate
    auxiliary_loss_weight: float = 0.4
    drop_path_prob: float = 0.2  # reached at the last epoch, from 0
    gradient_clip_val: float = 5.0
    cutout_length: int = 16
    batch_size: int = 96
    width: int = 36
    num_cells: int = 20


def drop_path_prob_at(epoch: int, max_epochs: int, final_prob: float) -> float:
    """Drop-path probability for ``epoch`` (0-based): rises linearly from 0 to ``final_prob``."""
    if max_epochs < 1:
        raise ValueError(f"max_epochs must be >= 1, got {max_epochs}")
    return final_prob * epoch / max_epochs


class DartsRetrainModule(ClassificationModule):
    """Cross-entropy with the auxiliary head, the drop-path schedule, SGD and a cosine schedule.

    The model may return ``(logits, aux_logits)`` in training (the hub's cell spaces do with
    ``auxiliary_loss=True``): the loss is then ``CE(logits) + auxiliary_loss_weight * CE(aux)``.
    Before each epoch the model's ``set_drop_path_prob`` (when it has one) gets the drop-path
    probability of that epoch, rising linearly from 0 to ``drop_path_prob``. Logs ``train_loss``,
    ``train_acc``, ``lr``, ``val_loss``, ``val_acc``.

    Example:
        >>> m = DartsRetrainModule(max_epochs=10)
        >>> m.set_model(torch.nn.Linear(4, 3))
        >>> opt = m.configure_optimizers()
        >>> type(opt['optimizer']).__name__, type(opt['lr_scheduler']).__name__
        ('SGD', 'CosineAnnealingLR')
    """

    def __init__(
        self,
        learning_rate: float = DartsRecipe.learning_rate,
        momentum: float = DartsRecipe.momentum,
        weight_decay: float = DartsRecipe.weight_decay,
        auxiliary_loss_weight: float = DartsRecipe.auxiliary_loss_weight,
        drop_path_prob: float = DartsRecipe.drop_path_prob,
        max_epochs: int = DartsRecipe.max_epochs,
        eta_min: float = DartsRecipe.eta_min,
        num_classes: int | None = None,
    ) -> None:
        super().__init__(nn.CrossEntropyLoss, learning_rate, weight_decay, num_classes=num_classes)
        if not 0.0 <= drop_path_prob < 1.0:
            raise ValueError(f"drop_path_prob must be in [0, 1), got {drop_path_prob}")
        if auxiliary_loss_weight < 0:
            raise ValueError(f"auxiliary_loss_weight must be >= 0, got {auxiliary_loss_weight}")
        self.momentum, self.eta_min = momentum, eta_min
        self.auxiliary_loss_weight, self.drop_path_prob = auxiliary_loss_weight, drop_path_prob
        self.max_epochs = max_epochs

    def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        x, y = batch
        out = self(x)
        if isinstance(out, (tuple, list)):  # (logits, aux_logits) from a model with an aux head
            logits, aux = out
            loss = self.criterion(logits, y)
            if self.auxiliary_loss_weight:
                loss = loss + self.auxiliary_loss_weight * self.criterion(aux, y)
        else:
            logits, loss = out, self.criterion(out, y)
        self.log("train_loss", loss, on_step=False, on_epoch=True, batch_size=len(y))
        metric = self.metrics[self.metric_key]
        self.log("train_acc", metric(logits.detach(), y), on_step=False, on_epoch=True)
        return loss

    def on_train_epoch_start(self) -> None:
        set_prob = getattr(self.model, "set_drop_path_prob", None)
        if callable(set_prob):
            set_prob(drop_path_prob_at(self.current_epoch, self.max_epochs, self.drop_path_prob))
        if self.trainer.optimizers:
            self.log("lr", self.trainer.optimizers[0].param_groups[0]["lr"])

    def graph_key(self) -> tuple[float, ...]:
        """The drop-path probability the training step reads: a CUDA graph of the step (see
        :mod:`nasx.evaluator.cuda_graphs`) is captured again when it changes."""
        if not callable(getattr(self.model, "set_drop_path_prob", None)):
            return ()
        return (drop_path_prob_at(self.current_epoch, self.max_epochs, self.drop_path_prob),)

    def configure_optimizers(self) -> Any:  # Lightning's optimizer + scheduler dict
        optimizer = torch.optim.SGD(
            self.parameters(),
            lr=self.learning_rate,
            momentum=self.momentum,
            weight_decay=self.weight_decay,
        )
        schedule = torch.optim.lr_scheduler.CosineAnnealingLR(
            optimizer, self.max_epochs, eta_min=self.eta_min
        )
        return {"optimizer": optimizer, "lr_scheduler": schedule}


def darts_retrain_evaluator(
    train_dataloaders: Any,
    val_dataloaders: Any = None,
    recipe: DartsRecipe = DartsRecipe(),
    cuda_graphs: bool | None = None,
    **trainer_kwargs: Any,
) -> Lightning:
    """A ``Lightning`` evaluator running the DARTS recipe: :class:`DartsRetrainModule` and a trainer
    with ``max_epochs`` and ``gradient_clip_val`` from ``recipe``. ``trainer_kwargs`` (such as
    ``accelerator='gpu'``, ``precision='16-mixed'``, ``fast_dev_run=True``) override them.

    The data is the caller's: build the training loader with
    :func:`~nasx.evaluator.augment.darts_train_transform` and ``recipe.batch_size``, and the model
    with ``auxiliary_loss=True, drop_path_prob=recipe.drop_path_prob`` (then ``evaluator.fit(model)``).
    ``cuda_graphs`` is :class:`~nasx.evaluator.Lightning`'s: on one GPU each step is replayed from
    a CUDA graph by default (``benchmarks/retrain_step.py`` measures it).

    Example:
        >>> import dataclasses
        >>> ev = darts_retrain_evaluator(None, recipe=dataclasses.replace(DartsRecipe(), max_epochs=2))
        >>> ev.trainer.kwargs['gradient_clip_val'], ev.trainer.kwargs['max_epochs'], ev.module.max_epochs
        (5.0, 2, 2)
    """
    module = DartsRetrainModule(
        learning_rate=recipe.learning_rate,
        momentum=recipe.momentum,
        weight_decay=recipe.weight_decay,
        auxiliary_loss_weight=recipe.auxiliary_loss_weight,
        drop_path_prob=recipe.drop_path_prob,
        max_epochs=recipe.max_epochs,
        eta_min=recipe.eta_min,
    )
    kwargs = {
        "max_epochs": recipe.max_epochs,
        "gradient_clip_val": recipe.gradient_clip_val,
        **trainer_kwargs,
    }
    return Lightning(
        module, Trainer(**kwargs), train_dataloaders, val_dataloaders, cuda_graphs=cuda_graphs
    )
