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

import torch.nn as nn

from .lightning import Lightning, _has_val_dataloader


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
    """A :class:`Lightning` evaluator over images of ``input_shape`` that reports its model's cost.

    Subclasses set ``input_shape``, ``latency`` and ``latency_options`` (through
    :meth:`_set_cost_options`) and call :meth:`require_validation_data` before fitting.
    """

    input_shape: tuple[int, ...]
    latency: Any
    latency_options: dict[str, Any]

    @staticmethod
    def check_latency(latency: Any) -> None:
        """Raise a ``ValueError`` unless ``latency`` is ``'measure'``, ``None`` or a function."""
        if not (latency is None or latency == "measure" or callable(latency)):
            raise ValueError(
                f"latency must be 'measure', None or fn(model, input_shape) -> ms, got {latency!r}"
            )

    def _set_cost_options(
        self, image_size: int, latency: Any, latency_options: dict[str, Any] | None
    ) -> None:
        self.check_latency(latency)
        self.input_shape = (3, image_size, image_size)
        self.latency = latency
        # 2 warm-up and 10 timed runs, one thread: enough for a ranking, cheap per trial
        self.latency_options = {"warmup": 2, "repeats": 10, **(latency_options or {})}

    def require_validation_data(self, metric: str) -> None:
        """Raise a ``ValueError`` when neither ``val_dataloaders`` nor the datamodule gives any."""
        if self.val_dataloaders is None and not _has_val_dataloader(self.datamodule):
            raise ValueError(
                f"{type(self).__name__} needs validation data to compute {metric}: pass "
                "val_dataloaders=..., or a datamodule with val_dataloader()"
            )

    def cost(self, model: nn.Module) -> dict[str, Any]:
        """``{'params', 'backbone_params', 'macs', 'flops'[, 'latency_ms']}`` of a trained model."""
        return model_cost_metrics(model, self.input_shape, self.latency, self.latency_options)
