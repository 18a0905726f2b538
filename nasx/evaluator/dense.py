"""What the dense-prediction evaluators (:class:`~nasx.evaluator.Detection`,
:class:`~nasx.evaluator.Segmentation`) share: a :class:`~nasx.evaluator.Lightning` evaluator that
needs validation data and adds the trained model's cost (params, MACs, FLOPs, latency) to its
metrics dict.

    >>> import torch.nn as nn
    >>> DenseLightning.check_latency('measure')
    >>> model_cost_metrics(nn.Conv2d(3, 4, 1), (3, 8, 8), latency=None)
    {'params': 16, 'backbone_params': 16, 'macs': 768, 'flops': 1536}
"""

from __future__ import annotations

from typing import Any

import pytorch_lightning as pl
import torch
import torch.nn as nn

from .base import Report
from .lightning import Lightning, LightningModule, _has_val_dataloader
from .supervised import OptimizerFactory, _split_trainer_kwargs


class DenseModule(LightningModule):
    """What the dense-prediction LightningModules share: the training settings (checked), the
    optimizer, and :meth:`~DenseModule.set_model`, which attaches a complete model as it is and
    builds one around a backbone otherwise (:meth:`~DenseModule.is_complete` and
    :meth:`~DenseModule.build` say how).

    Subclasses set ``metric_name``, call ``super().__init__`` first, and implement the steps.
    """

    direction = "maximize"

    def __init__(
        self,
        num_classes: int,
        image_size: int,
        learning_rate: float,
        weight_decay: float,
        optimizer: OptimizerFactory,
        min_classes: int = 1,
    ) -> None:
        super().__init__()
        if num_classes < min_classes:
            raise ValueError(f"num_classes must be >= {min_classes}, got {num_classes}")
        if learning_rate <= 0:
            raise ValueError(f"learning_rate must be positive, got {learning_rate}")
        self.num_classes = num_classes
        self.image_size = image_size
        self.learning_rate = learning_rate
        self.weight_decay = weight_decay
        self.optimizer_class = optimizer

    def is_complete(self, model: nn.Module) -> bool:
        """Whether ``model`` is already the whole model (no head to build around it)."""
        raise NotImplementedError

    def build(self, backbone: nn.Module) -> nn.Module:
        """The whole model around a searched ``backbone``."""
        raise NotImplementedError

    def set_model(self, model: nn.Module) -> None:
        """Attach ``model``: a complete model as it is, else a backbone to build one on."""
        if not isinstance(model, nn.Module):
            raise TypeError(f"set_model expects an nn.Module, got {type(model).__name__}")
        self.model = model if self.is_complete(model) else self.build(model)

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return self.optimizer_class(
            self.parameters(), lr=self.learning_rate, weight_decay=self.weight_decay
        )


def model_cost_metrics(
    model: nn.Module,
    input_shape: tuple[int, ...],
    latency: Any = "measure",
    latency_options: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """``{'params', 'backbone_params', 'macs', 'flops'[, 'latency_ms']}`` of a whole model on one
    ``input_shape`` sample; ``backbone_params`` counts ``model.backbone`` (the model itself when
    it has none). ``latency``: ``'measure'`` (median of
    :func:`~nasx.hardware.latency.measure_latency` with ``latency_options``), ``None`` or
    ``fn(model, input_shape) -> ms``."""
    from nasx.hardware.latency import measure_latency
    from nasx.profiler import count_flops, count_parameters

    flops = count_flops(model, input_shape)
    cost: dict[str, Any] = {
        "params": count_parameters(model),
        "backbone_params": count_parameters(getattr(model, "backbone", model)),
        "macs": flops // 2,
        "flops": flops,
    }
    if latency == "measure":
        cost["latency_ms"] = measure_latency(
            model, input_shape, **(latency_options or {})
        ).median_ms
    elif latency is not None:
        cost["latency_ms"] = float(latency(model, input_shape))
    return cost


class DenseLightning(Lightning):
    """A :class:`Lightning` evaluator over images of ``(3, image_size, image_size)`` whose
    ``evaluate`` returns a metrics dict: the validation metric (``'default'`` and
    ``metric_key``), the ``extra_metrics`` its module logs as ``val_<key>``, and the trained
    model's cost (params, backbone params, MACs, FLOPs and, unless ``latency=None``, latency).

    Subclasses build their LightningModule (its ``model`` attribute is what gets priced) and pass
    it to ``__init__`` with the data, the cost options and the trainer's keyword arguments; they
    set ``metric_key``, ``metric_title`` (for the error when validation data is missing) and
    ``extra_metrics``.
    """

    metric_key: str = "metric"
    metric_title: str = "its metric"
    extra_metrics: tuple[str, ...] = ()

    def __init__(
        self,
        module: LightningModule,
        image_size: int,
        latency: Any,
        latency_options: dict[str, Any] | None,
        train_dataloaders: Any,
        val_dataloaders: Any,
        datamodule: pl.LightningDataModule | None,
        trainer_kwargs: dict[str, Any],
    ) -> None:
        self.check_latency(latency)
        loaders = {"train_dataloaders": train_dataloaders, "val_dataloaders": val_dataloaders}
        trainer, fit_kwargs = _split_trainer_kwargs(trainer_kwargs, loaders)
        super().__init__(module, trainer, datamodule=datamodule, fit_kwargs=fit_kwargs, **loaders)
        self.input_shape = (3, image_size, image_size)
        self.latency = latency
        # 2 warm-up and 10 timed runs, one thread: enough for a ranking, cheap per trial
        self.latency_options = {"warmup": 2, "repeats": 10, **(latency_options or {})}

    @staticmethod
    def check_latency(latency: Any) -> None:
        """Raise a ``ValueError`` unless ``latency`` is ``'measure'``, ``None`` or a function."""
        if not (latency is None or latency == "measure" or callable(latency)):
            raise ValueError(
                f"latency must be 'measure', None or fn(model, input_shape) -> ms, got {latency!r}"
            )

    def require_validation_data(self) -> None:
        """Raise a ``ValueError`` when neither ``val_dataloaders`` nor the datamodule gives any."""
        if self.val_dataloaders is None and not _has_val_dataloader(self.datamodule):
            raise ValueError(
                f"{type(self).__name__} needs validation data to compute {self.metric_title}: "
                "pass val_dataloaders=..., or a datamodule with val_dataloader()"
            )

    # Returns the metrics dict rather than Lightning's single float: the experiment keeps all of
    # them in the trial and ranks by 'default'.
    def evaluate(  # type: ignore[override]
        self, model: nn.Module, report: Report | None = None
    ) -> dict[str, Any]:
        """Fit the module around ``model``; return the metric, the extra metrics and the cost."""
        self.require_validation_data()
        trainer = self._fit(model, report)
        value = self._final_metric(trainer)
        metrics: dict[str, Any] = {"default": value, self.metric_key: value}
        for key in self.extra_metrics:
            metrics[key] = float(trainer.callback_metrics[f"val_{key}"])
        trained = trainer.lightning_module.model
        assert isinstance(trained, nn.Module)  # set by the module's set_model
        metrics.update(self.cost(trained))
        return metrics

    def cost(self, model: nn.Module) -> dict[str, Any]:
        """``{'params', 'backbone_params', 'macs', 'flops'[, 'latency_ms']}`` of a trained model."""
        return model_cost_metrics(model, self.input_shape, self.latency, self.latency_options)
