"""Detection: a Lightning evaluator that trains a torchvision detector around a searched backbone.

The searched model is the **backbone** (a :class:`~nasx.hub.SpineNet`, or any module returning a
dict of feature maps, coarsest last, with an ``out_channels`` attribute): :func:`build_detector`
puts a torchvision RetinaNet (or FCOS) head on it, :class:`DetectionModule` trains it on
``(images, targets)`` batches (lists, see :func:`~nasx.datasets.detection.detection_collate`;
``target = {'boxes': [N, 4] xyxy pixels, 'labels': [N] int64 in [0, num_classes)}``) and
computes COCO mAP with torchmetrics' ``MeanAveragePrecision`` (the pycocotools backend: the
reference COCO evaluation). :class:`Detection` returns a metrics dict::

    {'default': mAP, 'map': mAP, 'map_50': mAP at IoU 0.5, 'map_75': ..., 'params': detector
     parameters, 'backbone_params': ..., 'macs': ..., 'flops': ..., 'latency_ms': ...}

with MACs/FLOPs counted by :mod:`nasx.profiler` and latency timed by
:func:`~nasx.hardware.latency.measure_latency` on one ``(3, image_size, image_size)`` image
(whole detector, NMS included). Anchors follow the RetinaNet paper (3 scales x 3 ratios per
level, base side ``anchor_scale * stride``) so they fit the image size rather than COCO's.

    >>> import torch
    >>> from nasx.hub import SpineNet, SPINENET_49
    >>> from nasx.space import model_context
    >>> with model_context(SPINENET_49):
    ...     backbone = SpineNet('49S', filter_size_scale=0.125, endpoints_num_filters=8, stem_filters=8)
    >>> detector = build_detector(backbone, num_classes=3, image_size=64)
    >>> _ = detector.eval()
    >>> sorted(detector([torch.rand(3, 64, 64)])[0])
    ['boxes', 'labels', 'scores']
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytorch_lightning as pl
import torch
import torch.nn as nn

from .dense import DenseLightning, DenseModule
from .hparams import searchable
from .supervised import OptimizerFactory

__all__ = [
    "DETECTORS",
    "Detection",
    "DetectionModule",
    "build_detector",
    "check_detection_targets",
    "mean_average_precision",
]

DETECTORS = ("retinanet", "fcos")
DEFAULT_LEVELS = (3, 4, 5, 6, 7)  # SpineNet's outputs P3..P7: strides 8..128


def check_detection_targets(targets: Sequence[Any], num_classes: int) -> None:
    """Raise a ``ValueError`` naming the target and what is wrong, before torchvision sees it.

    Each target is a mapping with ``'boxes'`` (a float tensor ``[N, 4]``, ``xmin < xmax`` and
    ``ymin < ymax``, finite) and ``'labels'`` (an integer tensor ``[N]`` in ``[0, num_classes)``).

    Example:
        >>> check_detection_targets([{'boxes': torch.tensor([[0.0, 0, 4, 4]]),
        ...                           'labels': torch.tensor([3])}], num_classes=3)
        Traceback (most recent call last):
        ...
        ValueError: target 0: labels must be in [0, 3) (num_classes=3), got 3
    """
    for i, target in enumerate(targets):
        if not isinstance(target, Mapping) or "boxes" not in target or "labels" not in target:
            got = sorted(target) if isinstance(target, Mapping) else type(target).__name__
            raise ValueError(f"target {i}: must be a dict with 'boxes' and 'labels', got {got}")
        boxes, labels = target["boxes"], target["labels"]
        if not torch.is_tensor(boxes) or not boxes.is_floating_point():
            raise ValueError(f"target {i}: boxes must be a float tensor, got {_describe(boxes)}")
        if boxes.dim() != 2 or boxes.shape[1] != 4:
            raise ValueError(
                f"target {i}: boxes must be [N, 4] (xmin, ymin, xmax, ymax), got shape "
                f"{tuple(boxes.shape)}"
            )
        if not torch.is_tensor(labels) or labels.is_floating_point() or labels.dim() != 1:
            raise ValueError(
                f"target {i}: labels must be a 1-d integer tensor, got {_describe(labels)}"
            )
        if len(labels) != len(boxes):
            raise ValueError(f"target {i}: {len(boxes)} boxes but {len(labels)} labels")
        if len(boxes) == 0:
            continue
        if not torch.isfinite(boxes).all():
            raise ValueError(f"target {i}: boxes must be finite, got {boxes.tolist()}")
        bad = (boxes[:, 2] <= boxes[:, 0]) | (boxes[:, 3] <= boxes[:, 1])
        if bad.any():
            j = int(torch.nonzero(bad)[0])
            raise ValueError(
                f"target {i}: box {j} {boxes[j].tolist()} has no area: boxes are "
                "(xmin, ymin, xmax, ymax) with xmin < xmax and ymin < ymax"
            )
        low, high = int(labels.min()), int(labels.max())
        if low < 0 or high >= num_classes:
            raise ValueError(
                f"target {i}: labels must be in [0, {num_classes}) (num_classes={num_classes}), "
                f"got {low if low < 0 else high}"
            )


def _describe(value: Any) -> str:
    if torch.is_tensor(value):
        return f"a {value.dtype} tensor of shape {tuple(value.shape)}"
    return type(value).__name__


def mean_average_precision(**kwargs: Any) -> Any:
    """torchmetrics' ``MeanAveragePrecision`` (xyxy boxes, pycocotools backend), with a clear
    error when pycocotools is missing (``pip install "nasx[detection]"``).

    Example:
        >>> metric = mean_average_precision()
        >>> box = torch.tensor([[10.0, 10.0, 50.0, 50.0]])
        >>> metric.update([{'boxes': box, 'scores': torch.tensor([0.9]), 'labels': torch.tensor([0])}],
        ...               [{'boxes': box, 'labels': torch.tensor([0])}])
        >>> float(metric.compute()['map'])
        1.0
    """
    from nasx._optional import optional_import

    optional_import("pycocotools", "detection", "COCO mAP (MeanAveragePrecision)")
    from torchmetrics.detection import MeanAveragePrecision

    options = {"box_format": "xyxy", "iou_type": "bbox", "backend": "pycocotools", **kwargs}
    return MeanAveragePrecision(**options)


def _is_detector(model: nn.Module) -> bool:
    from torchvision.models.detection import FCOS, RetinaNet
    from torchvision.models.detection.generalized_rcnn import GeneralizedRCNN

    return isinstance(model, RetinaNet | FCOS | GeneralizedRCNN)


def build_detector(
    backbone: nn.Module,
    num_classes: int,
    detector: str = "retinanet",
    image_size: int = 128,
    anchor_scale: float = 4.0,
    levels: Sequence[int] = DEFAULT_LEVELS,
    **detector_kwargs: Any,
) -> nn.Module:
    """A torchvision RetinaNet or FCOS around ``backbone``, for ``image_size`` square images.

    Args:
        backbone: returns a dict of ``len(levels)`` feature maps (finest first) and has
            ``out_channels`` (channels of every map).
        num_classes: object classes (labels ``0 .. num_classes - 1``; no background class).
        detector: ``'retinanet'`` or ``'fcos'``.
        image_size: images are resized so their shorter side is this (``min_size``/``max_size``
            of torchvision's transform); give the data's size to keep them as they are.
        anchor_scale: RetinaNet's anchors at level ``l`` have sides ``anchor_scale * 2**l *
            {1, 2**(1/3), 2**(2/3)}`` and ratios 0.5, 1, 2 (the paper's 4.0 on COCO); FCOS has
            one point per location.
        levels: the feature levels the backbone returns (strides ``2**level``).
        detector_kwargs: more arguments of the torchvision class (``score_thresh``, ...).
    """
    from torchvision.models.detection import FCOS, RetinaNet
    from torchvision.models.detection.anchor_utils import AnchorGenerator

    if detector not in DETECTORS:
        raise ValueError(f"detector must be one of {DETECTORS}, got {detector!r}")
    if not isinstance(getattr(backbone, "out_channels", None), int):
        raise TypeError(
            f"the backbone {type(backbone).__name__} needs an int attribute out_channels (the "
            "channels of every feature map it returns), as torchvision detectors read it"
        )
    if num_classes < 1:
        raise ValueError(f"num_classes must be >= 1, got {num_classes}")
    levels = tuple(int(level) for level in levels)
    options: dict[str, Any] = {
        "min_size": image_size,
        "max_size": image_size,
        "detections_per_img": 100,  # what COCO's mAP reads (torchvision's default is 300)
        **detector_kwargs,
    }
    if detector == "retinanet":
        sizes = tuple(
            tuple(anchor_scale * 2**level * 2 ** (k / 3) for k in range(3)) for level in levels
        )
        anchors = AnchorGenerator(sizes, ((0.5, 1.0, 2.0),) * len(levels))
        return RetinaNet(backbone, num_classes, anchor_generator=anchors, **options)
    if backbone.out_channels % 32:  # type: ignore[operator]  # an int, checked above
        raise ValueError(
            f"FCOS's head normalises with GroupNorm(32, channels): the backbone's out_channels "
            f"must be a multiple of 32, got {backbone.out_channels}"
        )
    # FCOS: one anchor (a point with the level's stride as size) per location, as torchvision's
    anchors = AnchorGenerator(tuple((2**level,) for level in levels), ((1.0,),) * len(levels))
    return FCOS(backbone, num_classes, anchor_generator=anchors, **options)


class DetectionModule(DenseModule):
    """Train a detector around the model given to :meth:`~DenseModule.set_model`; log COCO mAP.

    Logs ``train_loss`` (per epoch, the sum of the detector's losses), and per validation run
    ``val_map`` (mAP over IoU 0.50:0.95, the metric), ``val_map_50`` and ``val_map_75``.
    Arguments after ``num_classes`` are those of :func:`build_detector` and the optimizer's.
    """

    metric_name = "val_map"

    def __init__(
        self,
        num_classes: int,
        detector: str = "retinanet",
        image_size: int = 128,
        learning_rate: float = 1e-3,
        weight_decay: float = 1e-4,
        optimizer: OptimizerFactory = torch.optim.AdamW,
        anchor_scale: float = 4.0,
        levels: Sequence[int] = DEFAULT_LEVELS,
        detector_kwargs: dict[str, Any] | None = None,
    ) -> None:
        if detector not in DETECTORS:
            raise ValueError(f"detector must be one of {DETECTORS}, got {detector!r}")
        super().__init__(num_classes, image_size, learning_rate, weight_decay, optimizer)
        self.detector = detector
        self.anchor_scale = anchor_scale
        self.levels = tuple(levels)
        self.detector_kwargs = dict(detector_kwargs or {})
        self.val_metric = mean_average_precision()

    def is_complete(self, model: nn.Module) -> bool:
        return _is_detector(model)  # a torchvision detector is used as it is

    def build(self, backbone: nn.Module) -> nn.Module:
        return build_detector(
            backbone,
            self.num_classes,
            self.detector,
            self.image_size,
            self.anchor_scale,
            self.levels,
            **self.detector_kwargs,
        )

    def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        images, targets = batch
        check_detection_targets(targets, self.num_classes)
        losses = self.model(list(images), list(targets))
        loss = torch.stack(list(losses.values())).sum()
        self.log("train_loss", loss, on_step=False, on_epoch=True, batch_size=len(images))
        return loss

    def validation_step(self, batch: Any, batch_idx: int) -> None:
        images, targets = batch
        check_detection_targets(targets, self.num_classes)
        predictions = self.model(list(images))
        self.val_metric.update(predictions, list(targets))

    def on_validation_epoch_end(self) -> None:
        result = self.val_metric.compute()
        self.val_metric.reset()
        for key in ("map", "map_50", "map_75"):
            self.log(f"val_{key}", float(result[key]), prog_bar=key == "map")


class Detection(DenseLightning):
    """Train a detector around the searched backbone; the metric is COCO mAP (``val_map``).

    Args:
        num_classes, detector, image_size: see :func:`build_detector`.
        learning_rate, weight_decay, optimizer: the optimizer, built as
            ``optimizer(parameters, lr=learning_rate, weight_decay=weight_decay)``.
        anchor_scale, levels, detector_kwargs: see :func:`build_detector`.
        train_dataloaders, val_dataloaders, datamodule: data giving ``(images, targets)``
            batches (``collate_fn=detection_collate``).
        latency: ``'measure'`` (default: time the trained detector on this machine),
            ``None`` (no latency) or ``fn(detector, input_shape) -> ms``.
        latency_options: keyword arguments of ``measure_latency`` (default 2 warm-up and 10
            timed runs, one thread).
        trainer_kwargs: ``pytorch_lightning.Trainer`` arguments (``max_epochs=1``, ...).

    ``evaluate(model)`` returns the metrics dict of the module docstring (``'default'`` is mAP);
    each validation run's mAP goes to ``report``.

    Example (``tutorials/spinenet_detection.py`` runs it in a search; the tests train with it):
        >>> ev = Detection(num_classes=10, image_size=64, max_epochs=1, accelerator='cpu')
        >>> ev.metric, ev.direction, ev.input_shape
        ('val_map', 'maximize', (3, 64, 64))
    """

    metric_key = "map"
    metric_title = "mAP"
    extra_metrics = ("map_50", "map_75")

    @searchable  # learning_rate=Numerical(...): hyperparameters, see nasx.evaluator.hparams
    def __init__(
        self,
        num_classes: int,
        detector: str = "retinanet",
        image_size: int = 128,
        learning_rate: float = 1e-3,
        weight_decay: float = 1e-4,
        optimizer: OptimizerFactory = torch.optim.AdamW,
        anchor_scale: float = 4.0,
        levels: Sequence[int] = DEFAULT_LEVELS,
        detector_kwargs: dict[str, Any] | None = None,
        train_dataloaders: Any = None,
        val_dataloaders: Any = None,
        datamodule: pl.LightningDataModule | None = None,
        latency: Any = "measure",
        latency_options: dict[str, Any] | None = None,
        **trainer_kwargs: Any,
    ) -> None:
        module = DetectionModule(
            num_classes,
            detector,
            image_size,
            learning_rate,
            weight_decay,
            optimizer,
            anchor_scale,
            levels,
            detector_kwargs,
        )
        super().__init__(
            module,
            image_size,
            latency,
            latency_options,
            train_dataloaders,
            val_dataloaders,
            datamodule,
            trainer_kwargs,
        )
