"""Segmentation: a Lightning evaluator that trains a semantic-segmentation head on a searched backbone.

The searched model is the **backbone**: any module returning a feature map ``[B, C, h, w]``, a
dict of them (the first, the finest, is used: a :class:`~nasx.hub.SpineNet` returns P3..P7) or a
list/tuple of them. :class:`SegmentationModel` puts a light head on it (torchvision's ``FCNHead``
by default, ``DeepLabHead`` or a 1x1 convolution) and upsamples the logits bilinearly to the
image size; :class:`SegmentationModule` trains it with per-pixel cross-entropy on ``(images [B, 3,
H, W], masks [B, H, W] int64)`` batches (:class:`~nasx.datasets.detection.PastedSegmentation`
gives them) and measures mIoU with torchmetrics' ``MulticlassJaccardIndex`` (macro: the mean
over the classes present in the predictions or the masks of the validation set, background
included) and pixel accuracy. :class:`Segmentation` returns a metrics dict::

    {'default': mIoU, 'miou': mIoU, 'pixel_accuracy': ..., 'params': whole model,
     'backbone_params': ..., 'macs': ..., 'flops': ..., 'latency_ms': ...}

with the cost counted as :class:`~nasx.evaluator.Detection` counts it, on one ``(3, image_size,
image_size)`` image.

    >>> import torch
    >>> backbone = torch.nn.Conv2d(3, 8, 3, stride=4, padding=1)
    >>> model = SegmentationModel(backbone, num_classes=3, head='linear')
    >>> model(torch.rand(2, 3, 32, 32)).shape
    torch.Size([2, 3, 32, 32])
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytorch_lightning as pl
import torch
import torch.nn as nn
import torch.nn.functional as F

from .dense import DenseLightning, DenseModule
from .hparams import searchable
from .supervised import OptimizerFactory

__all__ = [
    "HEADS",
    "Segmentation",
    "SegmentationModel",
    "SegmentationModule",
    "check_masks",
    "mean_iou",
]

HEADS = ("fcn", "deeplabv3", "linear")


def check_masks(masks: Any, images: torch.Tensor, num_classes: int) -> None:
    """Raise a ``ValueError`` naming the sample and what is wrong with a batch of class masks.

    ``masks`` must be an integer tensor ``[B, H, W]`` matching ``images`` ``[B, C, H, W]``, with
    class ids in ``[0, num_classes)`` (0 is usually the background).

    Example:
        >>> check_masks(torch.tensor([[[0, 1], [2, 5]]]), torch.zeros(1, 3, 2, 2), num_classes=3)
        Traceback (most recent call last):
        ...
        ValueError: mask of sample 0: class ids must be in [0, 3) (num_classes=3), got 5
    """
    if not torch.is_tensor(masks):
        raise ValueError(f"masks must be an integer tensor [B, H, W], got {type(masks).__name__}")
    if masks.is_floating_point() or masks.dtype == torch.bool:
        raise ValueError(
            "masks must hold integer class ids (int64 or another integer dtype), got dtype "
            f"{masks.dtype}: convert with mask.long()"
        )
    expected = (images.shape[0], *images.shape[-2:])
    if masks.dim() != 3 or tuple(masks.shape) != tuple(expected):
        raise ValueError(
            f"masks must be [B, H, W] = {list(expected)} to match images {list(images.shape)}, "
            f"got shape {list(masks.shape)}"
        )
    bad = (masks < 0) | (masks >= num_classes)
    if bad.any():
        sample = int(torch.nonzero(bad.flatten(1).any(1))[0])
        values = masks[sample][bad[sample]]
        got = int(values.min()) if int(values.min()) < 0 else int(values.max())
        raise ValueError(
            f"mask of sample {sample}: class ids must be in [0, {num_classes}) "
            f"(num_classes={num_classes}), got {got}"
        )


def mean_iou(num_classes: int) -> Any:
    """torchmetrics' multiclass Jaccard index averaged over the classes present (``'macro'``:
    a class absent from both predictions and masks has no IoU and is left out of the mean).

    Example (class 0: 1 pixel in common of 2 -> 1/2; class 1: 2 of 3 -> 2/3; class 2 absent):
        >>> metric = mean_iou(3)
        >>> metric.update(torch.tensor([[0, 1, 1, 1]]), torch.tensor([[0, 0, 1, 1]]))
        >>> round(float(metric.compute()), 4)    # (1/2 + 2/3) / 2
        0.5833
    """
    from torchmetrics.classification import MulticlassJaccardIndex

    return MulticlassJaccardIndex(num_classes=num_classes, average="macro")


def _feature_map(features: Any) -> torch.Tensor:
    """The map a backbone's output stands for: a tensor, the first of a dict, list or tuple."""
    if isinstance(features, Mapping):
        features = next(iter(features.values()))
    elif isinstance(features, Sequence):
        features = features[0]
    if not torch.is_tensor(features) or features.dim() != 4:
        got = f"shape {list(features.shape)}" if torch.is_tensor(features) else type(features)
        raise TypeError(
            f"the backbone must return a feature map [B, C, h, w] (or a dict/list of them), got {got}"
        )
    return features


def _backbone_channels(backbone: nn.Module, image_size: int) -> int:
    """Channels of the backbone's feature map: its ``out_channels`` when an int, else measured."""
    channels = getattr(backbone, "out_channels", None)
    if isinstance(channels, int):
        return channels
    was_training = backbone.training
    backbone.eval()
    with torch.no_grad():
        channels = _feature_map(backbone(torch.zeros(1, 3, image_size, image_size))).shape[1]
    backbone.train(was_training)
    return int(channels)


class SegmentationModel(nn.Module):
    """``backbone`` + a light segmentation head, logits upsampled to the input's size.

    Args:
        backbone: returns a feature map ``[B, C, h, w]`` (or a dict/list of them: the first).
        num_classes: classes of the masks, background included.
        head: ``'fcn'`` (torchvision's ``FCNHead``: 3x3 conv to ``C // 4`` channels, BN, ReLU,
            dropout, 1x1 conv), ``'deeplabv3'`` (torchvision's ``DeepLabHead``: ASPP with 256
            channels) or ``'linear'`` (one 1x1 conv). The FCN head narrows to ``C // 4``
            channels, so a narrow backbone (``C`` of 16: 4 channels for every class) may do
            better with ``'linear'``.
        image_size: the size of the dry run that finds ``C`` when the backbone has no int
            ``out_channels``.
    """

    def __init__(
        self, backbone: nn.Module, num_classes: int, head: str = "fcn", image_size: int = 64
    ) -> None:
        super().__init__()
        from torchvision.models.segmentation.deeplabv3 import DeepLabHead
        from torchvision.models.segmentation.fcn import FCNHead

        if head not in HEADS:
            raise ValueError(f"head must be one of {HEADS}, got {head!r}")
        if num_classes < 2:
            raise ValueError(
                f"num_classes must be >= 2 (background and a class), got {num_classes}"
            )
        channels = _backbone_channels(backbone, image_size)
        if head == "fcn" and channels < 4:
            raise ValueError(f"the FCN head needs >= 4 backbone channels, got {channels}")
        self.backbone = backbone
        self.num_classes = num_classes
        if head == "fcn":
            self.head: nn.Module = FCNHead(channels, num_classes)
        elif head == "deeplabv3":
            self.head = DeepLabHead(channels, num_classes)
        else:
            self.head = nn.Conv2d(channels, num_classes, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        logits = self.head(_feature_map(self.backbone(x)))
        return F.interpolate(logits, size=x.shape[-2:], mode="bilinear", align_corners=False)


class SegmentationModule(DenseModule):
    """Train a :class:`SegmentationModel` around the model given to :meth:`~DenseModule.set_model`.

    Logs ``train_loss`` (per-pixel cross-entropy, per epoch), and per validation run ``val_miou``
    (the metric) and ``val_pixel_accuracy``.
    """

    metric_name = "val_miou"

    def __init__(
        self,
        num_classes: int,
        head: str = "fcn",
        image_size: int = 64,
        learning_rate: float = 1e-3,
        weight_decay: float = 1e-4,
        optimizer: OptimizerFactory = torch.optim.AdamW,
    ) -> None:
        from torchmetrics.classification import MulticlassAccuracy

        if head not in HEADS:
            raise ValueError(f"head must be one of {HEADS}, got {head!r}")
        if num_classes < 2:  # said before the base class's generic check
            raise ValueError(
                f"num_classes must be >= 2 (background and a class), got {num_classes}"
            )
        super().__init__(num_classes, image_size, learning_rate, weight_decay, optimizer)
        self.head = head
        self.val_miou = mean_iou(num_classes)
        self.val_pixel_accuracy = MulticlassAccuracy(num_classes=num_classes, average="micro")

    def is_complete(self, model: nn.Module) -> bool:
        return isinstance(model, SegmentationModel)

    def build(self, backbone: nn.Module) -> nn.Module:
        return SegmentationModel(backbone, self.num_classes, self.head, self.image_size)

    def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        images, masks = batch
        check_masks(masks, images, self.num_classes)
        # any integer dtype is accepted (a PNG read as uint8); cross-entropy wants int64
        loss = F.cross_entropy(self.model(images), masks.long())
        self.log("train_loss", loss, on_step=False, on_epoch=True, batch_size=len(images))
        return loss

    def validation_step(self, batch: Any, batch_idx: int) -> None:
        images, masks = batch
        check_masks(masks, images, self.num_classes)
        predictions = self.model(images).argmax(1)
        self.val_miou.update(predictions, masks)
        self.val_pixel_accuracy.update(predictions, masks)

    def on_validation_epoch_end(self) -> None:
        self.log("val_miou", float(self.val_miou.compute()), prog_bar=True)
        self.log("val_pixel_accuracy", float(self.val_pixel_accuracy.compute()))
        self.val_miou.reset()
        self.val_pixel_accuracy.reset()


class Segmentation(DenseLightning):
    """Train a segmentation head on the searched backbone; the metric is mIoU (``val_miou``).

    Args:
        num_classes: classes of the masks, background included (``PastedSegmentation``'s
            ``num_segmentation_classes``).
        head, image_size, learning_rate, weight_decay, optimizer: see :class:`SegmentationModule`
            and :class:`SegmentationModel` (``image_size``: the images' side, for the cost).
        train_dataloaders, val_dataloaders, datamodule: data giving ``(images, masks)`` batches.
        latency: ``'measure'`` (default: time the trained model on this machine), ``None`` or
            ``fn(model, input_shape) -> ms``.
        latency_options: keyword arguments of ``measure_latency`` (default 2 warm-up and 10
            timed runs).
        trainer_kwargs: ``pytorch_lightning.Trainer`` arguments (``max_epochs=1``, ...).

    ``evaluate(model)`` returns the metrics dict of the module docstring (``'default'`` is mIoU);
    each validation run's mIoU goes to ``report``.

    Example (``tutorials/segmentation.py`` runs it in a search):
        >>> ev = Segmentation(num_classes=11, image_size=64, max_epochs=1, accelerator='cpu')
        >>> ev.metric, ev.direction, ev.input_shape
        ('val_miou', 'maximize', (3, 64, 64))
    """

    metric_key = "miou"
    metric_title = "mIoU"
    extra_metrics = ("pixel_accuracy",)

    @searchable  # learning_rate=Numerical(...): hyperparameters, see nasx.evaluator.hparams
    def __init__(
        self,
        num_classes: int,
        head: str = "fcn",
        image_size: int = 64,
        learning_rate: float = 1e-3,
        weight_decay: float = 1e-4,
        optimizer: OptimizerFactory = torch.optim.AdamW,
        train_dataloaders: Any = None,
        val_dataloaders: Any = None,
        datamodule: pl.LightningDataModule | None = None,
        latency: Any = "measure",
        latency_options: dict[str, Any] | None = None,
        **trainer_kwargs: Any,
    ) -> None:
        module = SegmentationModule(
            num_classes, head, image_size, learning_rate, weight_decay, optimizer
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
