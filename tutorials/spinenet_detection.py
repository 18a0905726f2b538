"""Detection NAS: search the SpineNet space for an object detector, then compare the best arch
with the published SpineNet-49 arch trained the same way.

Run it with ``python tutorials/spinenet_detection.py`` on a GPU (``--help`` lists the knobs;
``--search-minutes`` caps the search), or ``NASX_FAST=1`` for a CPU smoke run of seconds whose
numbers mean nothing. Objects come from Fashion-MNIST (Debian ``dataset-fashion-mnist``), else CIFAR-10
(``../shared/data`` or ``$NASX_DATA_DIR``), else scikit-learn's digits.
"""
# %% [markdown]
# # Searching SpineNet for detection
#
# SpineNet (Du et al., CVPR 2020) is a backbone whose blocks are *scale-permuted*: each of its
# 15 blocks picks its feature level (resolution), its type (bottleneck or residual) and two
# parents whose maps are resampled to it (cross-scale connections), and the five output blocks
# (P3..P7) come in a searched order. nasx's `SpineNet` space holds exactly these choices (41
# labels). Here a multi-trial search trains each sampled backbone inside a torchvision
# RetinaNet (`nasx.evaluator.Detection`) and ranks it by COCO mAP.

# %%
import argparse
import os

# The command line first, so that `--help` answers before the imports that take seconds.
# ruff: noqa: E402
FAST = os.environ.get("NASX_FAST") == "1"
parser = argparse.ArgumentParser(
    description="Searching SpineNet for detection: search the SpineNet space for an object\n"
    "detector (RetinaNet, ranked by COCO mAP), then compare the best arch with the published\n"
    "SpineNet-49 trained the same way. Meant for a GPU; with NASX_FAST=1 the defaults shrink\n"
    "to a CPU smoke run of seconds.",
    epilog="""environment:
  NASX_FAST=1     a CPU smoke run of seconds whose numbers mean nothing (small defaults)
  NASX_DATA_DIR   a folder holding fashion-mnist/ or cifar10/

data: the objects are Fashion-MNIST items ($NASX_DATA_DIR/fashion-mnist, ../shared/data/
fashion-mnist, /usr/share/datasets/fashion-mnist from Debian's dataset-fashion-mnist, or nasx's
cache), else CIFAR-10 photos ($NASX_DATA_DIR/cifar10, ../shared/data/cifar10 or the cache), else
scikit-learn's handwritten digits; nothing is downloaded.""",
    formatter_class=argparse.RawDescriptionHelpFormatter,
    allow_abbrev=False,  # a kernel's `-f`/`--f=...` must not read as one of these
)
parser.add_argument(
    "--trials", type=int, default=2 if FAST else 8, help="search trials (%(default)s)"
)
parser.add_argument(
    "--search-epochs", type=int, default=1 if FAST else 3, help="epochs a trial (%(default)s)"
)
parser.add_argument(
    "--final-epochs",
    type=int,
    default=1 if FAST else 15,
    help="epochs of the final training of the best arch and SpineNet-49 (%(default)s)",
)
parser.add_argument(
    "--train-images", type=int, default=8 if FAST else 2000, help="training canvases (%(default)s)"
)
parser.add_argument(
    "--val-images", type=int, default=4 if FAST else 500, help="validation canvases (%(default)s)"
)
parser.add_argument(
    "--canvas", type=int, default=64 if FAST else 128, help="image side in pixels (%(default)s)"
)
parser.add_argument(
    "--batch-size", type=int, default=4 if FAST else 32, help="batch size (%(default)s)"
)
parser.add_argument(
    "--scaling", default="49S", help="SpineNet scaling of every backbone (%(default)s)"
)
parser.add_argument(
    "--widths",
    choices=("tiny", "published"),
    default="tiny" if FAST else "published",
    help="tiny: a few channels per layer, for CPU runs; published: the scaling's own widths "
    "(%(default)s)",
)
parser.add_argument(
    "--search-minutes", type=float, default=None, help="stop the search after this long"
)
parser.add_argument("--workdir", default=None, help="default: a temporary folder")
args, _ = parser.parse_known_args()  # known only: a notebook kernel passes arguments of its own

import logging
import tempfile
from pathlib import Path

import torch
from torch.utils.data import DataLoader

from nasx.datasets import TFRecordImageDataset
from nasx.datasets.detection import (
    PastedObjects,
    detection_collate,
    training_and_validation_objects,
    write_detection_shards,
)
from nasx.evaluator import Detection
from nasx.experiment import NasExperiment
from nasx.experiment.filters import ParamCountFilter
from nasx.hub import SPINENET_49, SpineNet
from nasx.profiler import count_parameters
from nasx.space import model_context, search_space
from nasx.strategy import RegularizedEvolution

logging.getLogger("pytorch_lightning").setLevel(logging.WARNING)
logging.getLogger("lightning").setLevel(logging.WARNING)
torch.manual_seed(0)
torch.set_float32_matmul_precision("high")  # TF32 matmuls on a GPU that has them
WORK = Path(args.workdir or tempfile.mkdtemp(prefix="nasx_spinenet_"))
print("FAST smoke run: the numbers below mean nothing" if FAST else "full run")

# %% [markdown]
# ## A real small detection set: objects pasted on a canvas
#
# Each canvas (128x128 by default) gets 1 to 3 real Fashion-MNIST objects (training objects for
# the training set, test objects for the validation set), each resized to 20-50% of the canvas
# side, coloured, and pasted where it overlaps no other; its box is the tight box of its pixels
# and its label the Fashion-MNIST class (CIFAR-10 photos, the fallback, are pasted whole).
# Everything is drawn from a seed (the module docstring of `nasx.datasets.detection` gives the
# exact recipe). The sets are written in the TFRecord detection layout (`image/object/bbox/*`)
# and read back from it, as a Vertex AI NAS job reads its data.


# %%
train_objects, val_objects, source = training_and_validation_objects()
num_classes = train_objects.num_classes
train_set = PastedObjects(train_objects, args.train_images, canvas=args.canvas, seed=0)
val_set = PastedObjects(val_objects, args.val_images, canvas=args.canvas, seed=1)
shards = {
    "train": write_detection_shards(
        train_set, WORK / "data" / "train", num_shards=4, class_names=train_objects.classes
    ),
    "val": write_detection_shards(val_set, WORK / "data" / "val", class_names=val_objects.classes),
}
# Read back from the shards; the set is small, so it is held in memory (a list is a map-style
# dataset: shuffled each epoch by the DataLoader). A large set would stream: pass the
# TFRecordImageDataset itself to the DataLoader (it splits the shards over workers).
train_data = list(TFRecordImageDataset(shards["train"], task="detection"))
val_data = list(TFRecordImageDataset(shards["val"], task="detection"))
boxes = sum(len(target["labels"]) for _, target in val_data)
print(
    f"data: {source} objects on {args.canvas}x{args.canvas} canvases, {len(train_data)} training "
    f"and {len(val_data)} validation images ({boxes} validation boxes, {num_classes} classes)"
)


def detection(epochs: int) -> Detection:
    """RetinaNet around the searched backbone, anchors sized for the canvas, COCO mAP."""
    return Detection(
        num_classes=num_classes,
        image_size=args.canvas,
        # objects are 26-64 px on a 128 canvas: anchors of 2x the stride (16 px at P3) fit them
        anchor_scale=2.0,
        learning_rate=1e-3,
        train_dataloaders=DataLoader(
            train_data,
            batch_size=args.batch_size,
            shuffle=True,
            drop_last=True,  # no batch of one: batch norm on the 1x1 P7 map needs two
            collate_fn=detection_collate,
        ),
        val_dataloaders=DataLoader(val_data, batch_size=64, collate_fn=detection_collate),
        max_epochs=epochs,
        check_val_every_n_epoch=epochs,  # one validation, at the end: only its mAP ranks
        limit_train_batches=2 if FAST else 1.0,
        accelerator="auto",
        gradient_clip_val=1.0,  # RetinaNet trained from scratch with Adam: keep early steps sane
        latency_options={"warmup": 1, "repeats": 2} if FAST else None,
    )


# %% [markdown]
# ## The space, and the baseline it must beat
#
# Every backbone has the same widths (`--scaling`, 49S by default; `--widths tiny`, the fast
# mode's, narrows them to a few channels). The baseline is the published SpineNet-49 arch at
# those widths. A filter keeps the search to backbones at most 10% larger than it, so a win
# cannot come from size alone (random archs of this space are mostly smaller than SpineNet-49:
# the full CPU run's were 0.65-0.88x its size; benchmarks/spinenet_detection.results.md).

# %%
TINY = {"filter_size_scale": 0.125, "endpoints_num_filters": 16, "stem_filters": 8}
widths = TINY if args.widths == "tiny" else {}
space = SpineNet(args.scaling, **widths)
print(f"space: {len(search_space(space))} choices (block types, levels, parents, output order)")
with model_context(SPINENET_49):
    baseline_params = count_parameters(SpineNet(args.scaling, **widths))
print(f"SpineNet-49 arch at scaling {args.scaling}: {baseline_params / 1e6:.2f} M backbone params")

# %% [markdown]
# ## Multi-trial search: regularized evolution ranked by mAP

# %%
search = NasExperiment(
    space,
    detection(args.search_epochs),
    RegularizedEvolution(
        population_size=min(8, args.trials), sample_size=min(2, args.trials), seed=0
    ),
    workdir=WORK / "search",
    max_trials=args.trials,
    max_duration=None if args.search_minutes is None else 60 * args.search_minutes,
    filter=ParamCountFilter(max_params=int(1.1 * baseline_params), patience=50),
    execution="sequential",
    overwrite=True,
    progress=False,
)
search.run()
print(f"search: {search.stop_reason}")
for t in search.trials("succeeded"):
    m = t.metrics
    print(
        f"trial {t.id}: mAP {m['map']:.3f} mAP@50 {m['map_50']:.3f}, "
        f"{m['backbone_params'] / 1e6:.2f} M backbone params, {m['flops'] / 1e9:.2f} GFLOPs, "
        f"latency {m['latency_ms']:.1f} ms"
    )
print(f"rejected before training (over the size budget): {len(search.trials('rejected'))}")
best_arch = search.export_top_models(1)[0]
print(f"best arch: output levels {best_arch['output_levels']}")

# %% [markdown]
# ## The best arch against SpineNet-49, both trained with the same longer schedule
#
# Each backbone goes into its RetinaNet here (`evaluator.module.build`, what the evaluator would
# do itself), so that the trained detectors are ours to look at afterwards.

# %%
results, detectors = {}, {}
for name, arch in (("SpineNet-49 (published arch)", SPINENET_49), ("searched arch", best_arch)):
    torch.manual_seed(0)
    evaluator = detection(args.final_epochs)
    detectors[name] = evaluator.module.build(space.freeze(arch))  # trained in place
    results[name] = evaluator.evaluate(detectors[name])
for name, m in results.items():
    print(
        f"{name}: mAP {m['map']:.3f}, mAP@50 {m['map_50']:.3f}, "
        f"{m['backbone_params'] / 1e6:.2f} M backbone params ({m['params'] / 1e6:.2f} M with "
        f"RetinaNet), {m['flops'] / 1e9:.2f} GFLOPs, latency {m['latency_ms']:.1f} ms"
    )
base, found = results.values()
print(f"searched minus baseline: mAP {found['map'] - base['map']:+.3f}")

# %% [markdown]
# ## The two detectors on validation canvases
#
# Three validation canvases with their true boxes (white) and, for each trained detector, its
# highest-scoring boxes, as many as there are true objects (coloured, with class and score).
# After the fast mode's smoke training the scores stay near zero and the boxes land anywhere.


# %%
def boxes_figure(samples: list, detectors: dict):
    """One row per detector, one column per canvas: a closed matplotlib figure."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    names = train_objects.classes or [str(c) for c in range(num_classes)]
    fig, axes = plt.subplots(len(detectors), len(samples), figsize=(7, 5), squeeze=False)
    plt.close(fig)  # nothing pops up: show() below displays it
    for row, (name, detector) in enumerate(detectors.items()):
        detector.eval()
        device = next(detector.parameters()).device
        with torch.no_grad():
            predictions = detector([image.to(device) for image, _ in samples])
        for col, ((image, target), predicted) in enumerate(zip(samples, predictions, strict=True)):
            ax = axes[row, col]
            ax.imshow(image.permute(1, 2, 0).numpy())
            for x0, y0, x1, y1 in target["boxes"].tolist():
                ax.add_patch(Rectangle((x0, y0), x1 - x0, y1 - y0, fill=False, ec="white", lw=2))
            top = predicted["scores"].argsort(descending=True)[: len(target["boxes"])]
            for i in top.tolist():
                x0, y0, x1, y1 = predicted["boxes"][i].tolist()
                colour = plt.get_cmap("tab10")(int(predicted["labels"][i]) % 10)
                ax.add_patch(
                    Rectangle((x0, y0), x1 - x0, y1 - y0, fill=False, ec=colour, lw=1.5, ls="--")
                )
                label = f"{names[int(predicted['labels'][i])]} {float(predicted['scores'][i]):.2f}"
                ax.text(
                    x0,
                    y0,
                    label,
                    color="white",
                    fontsize=7,
                    va="top",
                    clip_on=True,
                    bbox={"facecolor": colour, "alpha": 0.8, "pad": 1, "lw": 0},
                )
            ax.set_xticks([])
            ax.set_yticks([])
        axes[row, 0].set_ylabel(f"{name}\nmAP {results[name]['map']:.3f}", fontsize=9)
    fig.suptitle(
        "validation canvases: true boxes (white), each detector's top boxes (dashed)", fontsize=10
    )
    fig.tight_layout()
    return fig


# The detectors' score threshold (0.05) would hide an undertrained model's boxes: show them all.
for detector in detectors.values():
    detector.score_thresh = 0.0
try:
    from nasx.plot import show

    saved = show(boxes_figure(val_data[:3], detectors), WORK / "boxes.png")
    print(f"figure of both detectors' boxes on 3 validation canvases: {saved}")
except ImportError as e:  # matplotlib is the [plot] extra
    print(f"no figure: {e}")
