"""Segmentation NAS: search a small encoder space for semantic segmentation of pasted objects.

Every canvas holds 1 to 3 real objects (Fashion-MNIST items, else CIFAR-10 photos, else
scikit-learn's digits) and its mask gives each pixel a class: 0 for the background, the object's
class + 1 on the object's own pixels. A random search trains a 1x1-conv head on each sampled
encoder and ranks them by mIoU; every trial also records its parameters, FLOPs and latency.

``python tutorials/segmentation.py`` runs the full search (6 trials: 42 s on 2 idle CPU cores,
several minutes when other jobs share them);
``--fast`` (or ``NASX_FAST=1``) is a smoke run of seconds whose numbers mean nothing.
"""

# %%
import argparse
import os

# The command line first, so that `--help` answers before the imports that take seconds.
# ruff: noqa: E402
parser = argparse.ArgumentParser(
    description="Segmentation NAS: search a small encoder space for semantic segmentation of\n"
    "pasted objects, ranked by mIoU (6 trials: about a minute on 2 idle CPU cores).",
    epilog="""environment:
  NASX_FAST=1     a smoke run of seconds whose numbers mean nothing (same as --fast)
  NASX_DATA_DIR   a folder holding fashion-mnist/ or cifar10/

data: the objects are Fashion-MNIST items ($NASX_DATA_DIR/fashion-mnist, ../shared/data/
fashion-mnist, /usr/share/datasets/fashion-mnist from Debian's dataset-fashion-mnist, or nasx's
cache), else CIFAR-10 photos ($NASX_DATA_DIR/cifar10, ../shared/data/cifar10 or the cache), else
scikit-learn's handwritten digits; nothing is downloaded.""",
    formatter_class=argparse.RawDescriptionHelpFormatter,
    allow_abbrev=False,  # a kernel's `--f=...` must not read as --fast
)
parser.add_argument("--fast", action="store_true", help="smoke run (same as NASX_FAST=1)")
parser.add_argument("--workdir", default=None, help="default: a temporary folder")
args, _ = parser.parse_known_args()  # known only: a notebook kernel passes arguments of its own
FAST = args.fast or os.environ.get("NASX_FAST") == "1"

import logging
import tempfile
from pathlib import Path

import pytorch_lightning as pl
import torch
import torch.nn as nn
from torch.utils.data import DataLoader

import nasx
from nasx.datasets import TFRecordImageDataset
from nasx.datasets.detection import (
    PastedObjects,
    training_and_validation_objects,
    write_detection_shards,
)
from nasx.evaluator import Segmentation
from nasx.evaluator.segmentation import mean_iou
from nasx.experiment import NasExperiment
from nasx.space import LayerChoice, ModelSpace, search_space
from nasx.strategy import Random

TRIALS, EPOCHS = (2, 1) if FAST else (6, 4)
TRAIN_IMAGES, VAL_IMAGES, CANVAS = (8, 4, 32) if FAST else (600, 150, 48)

logging.getLogger("pytorch_lightning").setLevel(logging.WARNING)
logging.getLogger("lightning").setLevel(logging.WARNING)
torch.manual_seed(0)
WORK = Path(args.workdir or tempfile.mkdtemp(prefix="nasx_segmentation_"))
print("FAST smoke run: the numbers below mean nothing" if FAST else "full run")

# %% [markdown]
# ## Data: pasted objects with their class masks, through TFRecord
#
# `PastedObjects(masks=True)` adds each canvas's class mask to its target; the shards store it as
# a PNG in TF-vision's `image/segmentation/class/encoded`, and `task='segmentation'` reads
# `(image, mask)` pairs back.

# %%
train_objects, val_objects, source = training_and_validation_objects()
shards = {
    split: write_detection_shards(
        PastedObjects(objects, n, canvas=CANVAS, seed=seed, masks=True), WORK / "data" / split
    )
    for split, objects, n, seed in (
        ("train", train_objects, TRAIN_IMAGES, 0),
        ("val", val_objects, VAL_IMAGES, 1),
    )
}
train_data = list(TFRecordImageDataset(shards["train"], task="segmentation"))
val_data = list(TFRecordImageDataset(shards["val"], task="segmentation"))
num_classes = train_objects.num_classes + 1  # the background is class 0
foreground = sum(float((mask > 0).float().mean()) for _, mask in val_data) / len(val_data)
print(
    f"data: {source} objects on {CANVAS}x{CANVAS} canvases, {len(train_data)} training and "
    f"{len(val_data)} validation images, {num_classes} classes with the background "
    f"({foreground:.0%} of validation pixels are objects)"
)
# The floor a trained model must beat: "background everywhere" scores the background's share as
# pixel accuracy, and as mIoU the background's IoU divided by the number of classes present.
floor = mean_iou(num_classes)
for _, mask in val_data:
    floor.update(torch.zeros_like(mask)[None], mask[None])
print(
    f"background everywhere: mIoU {float(floor.compute()):.3f}, pixel accuracy {1 - foreground:.3f}"
)


# %% [markdown]
# ## The space: a 3-layer encoder at stride 4
#
# A searched width, and a searched operation for each of the two blocks after the stem (the
# second downsamples); the evaluator puts a 1x1 convolution on the stride-4 feature map and
# upsamples its logits to the canvas. (`head='fcn'`, torchvision's FCN head, narrows the map to a
# quarter of its channels first: with these widths it scored lower in a trial measured here.)


# %%
def conv_bn(c_in: int, c_out: int, kernel: int, stride: int = 1, dilation: int = 1) -> nn.Module:
    padding = dilation * (kernel // 2)
    return nn.Sequential(
        nn.Conv2d(c_in, c_out, kernel, stride, padding, dilation=dilation, bias=False),
        nn.BatchNorm2d(c_out),
        nn.ReLU(),
    )


def block(width: int, stride: int, label: str) -> LayerChoice:
    return LayerChoice(
        {
            "conv3x3": conv_bn(width, width, 3, stride),
            "conv5x5": conv_bn(width, width, 5, stride),
            "dilated3x3": conv_bn(width, width, 3, stride, dilation=2),
            "sepconv3x3": nn.Sequential(
                nn.Conv2d(width, width, 3, stride, 1, groups=width, bias=False),
                conv_bn(width, width, 1),
            ),
        },
        label=label,
    )


class EncoderSpace(ModelSpace):
    def __init__(self) -> None:
        super().__init__()
        width = nasx.choice("width", [8, 16] if FAST else [16, 32, 48])
        self.stem = conv_bn(3, width, 3, stride=2)
        self.block1 = block(width, 1, "block1")
        self.block2 = block(width, 2, "block2")

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # [B, 3, H, W] -> [B, width, H/4, W/4]
        return self.block2(self.block1(self.stem(x)))


space = EncoderSpace()
print(f"space: {len(search_space(space))} choices")

# %% [markdown]
# ## Random search ranked by mIoU
#
# Each trial trains its encoder with a new head, measures it and moves on: nothing keeps the
# trained models. To draw the best one's masks at the end, a Lightning callback (given to the
# evaluator like any other `Trainer` argument) keeps the model with the best mIoU so far.


# %%
BEST = {"miou": -1.0, "model": None}  # the search's best trained model: encoder and head


class KeepBestModel(pl.Callback):
    """After each trial's training, keep its model when its validation mIoU is the best yet."""

    def on_fit_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        miou = float(trainer.callback_metrics["val_miou"])
        if miou > BEST["miou"]:  # a tie keeps the earlier trial, as max() below does
            BEST.update(miou=miou, model=pl_module.model)


evaluator = Segmentation(
    num_classes=num_classes,
    head="linear",
    image_size=CANVAS,
    learning_rate=1e-2,
    train_dataloaders=DataLoader(train_data, batch_size=4 if FAST else 16, shuffle=True),
    val_dataloaders=DataLoader(val_data, batch_size=64),
    max_epochs=EPOCHS,
    check_val_every_n_epoch=EPOCHS,  # one validation, at the end: only its mIoU ranks
    accelerator="cpu",
    latency_options={"warmup": 1, "repeats": 2} if FAST else None,
    callbacks=[KeepBestModel()],
)
search = NasExperiment(
    space,
    evaluator,
    Random(seed=0),
    workdir=WORK / "search",
    max_trials=TRIALS,
    execution="sequential",
    overwrite=True,
    progress=False,
)
search.run()
print(f"search: {search.stop_reason}")
for t in search.trials("succeeded"):
    m = t.metrics
    print(
        f"trial {t.id}: mIoU {m['miou']:.3f}, pixel accuracy {m['pixel_accuracy']:.3f}, "
        f"{m['params'] / 1e3:.1f} k params ({m['backbone_params'] / 1e3:.1f} k encoder), "
        f"{m['flops'] / 1e6:.1f} MFLOPs, latency {m['latency_ms']:.2f} ms  {t.arch}"
    )
print(f"best arch: {search.export_top_models(1)[0]}")

# %% [markdown]
# ## What the best model sees
#
# Four validation canvases (top row), their true masks (middle) and the masks the search's best
# trained model predicts (bottom): one colour per class, black for the background. In the fast
# mode's smoke run the model has barely trained, so expect background almost everywhere.


# %%
def masks_figure(model: nn.Module, samples: list, title: str):
    """Canvases, true and predicted masks in three rows: a closed matplotlib figure."""
    import matplotlib.pyplot as plt
    from matplotlib.colors import ListedColormap
    from matplotlib.patches import Patch

    images = torch.stack([image for image, _ in samples])
    true = torch.stack([mask for _, mask in samples])
    with torch.no_grad():
        predicted = model.eval()(images).argmax(1)
    colours = ["black"] + [plt.get_cmap("tab10")(i % 10) for i in range(num_classes - 1)]
    names = ["background", *(train_objects.classes or range(num_classes - 1))]
    fig, axes = plt.subplots(3, len(samples), figsize=(7, 6), squeeze=False)
    plt.close(fig)  # nothing pops up: show() below displays it
    for col in range(len(samples)):
        axes[0, col].imshow(images[col].permute(1, 2, 0).numpy())
        for row, masks in ((1, true), (2, predicted)):
            axes[row, col].imshow(
                masks[col].numpy(),
                cmap=ListedColormap(colours),
                vmin=0,
                vmax=num_classes - 1,
                interpolation="nearest",
            )
    for row, name in enumerate(("canvas", "true mask", "predicted")):
        axes[row, 0].set_ylabel(name)
    for ax in axes.flat:
        ax.set_xticks([])
        ax.set_yticks([])
    present = sorted(set(true.unique().tolist()) | set(predicted.unique().tolist()))
    handles = [Patch(color=colours[c], label=str(names[c])) for c in present]
    fig.legend(handles=handles, loc="lower center", ncol=min(len(handles), 5), fontsize=8)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    return fig


best = max(search.trials("succeeded"), key=lambda t: t.metric)  # the first of equals, as BEST
title = f"best trained model: trial {best.id}, mIoU {best.metric:.3f}\n{best.arch}"
try:
    from nasx.plot import show

    saved = show(masks_figure(BEST["model"], val_data[:4], title), WORK / "best_masks.png")
    print(f"figure of the best model's masks on 4 validation canvases: {saved}")
except ImportError as e:  # matplotlib is the [plot] extra
    print(f"no figure: {e}")
