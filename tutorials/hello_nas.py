"""Hello NAS: search a small CNN space on Fashion-MNIST with regularized evolution, export the best
arch and retrain it.

Run it with ``python tutorials/hello_nas.py`` (a few minutes on 2 CPU cores), or with
``NASX_FAST=1`` for a smoke run of a few seconds (4 trials on a tiny data subset).
"""
# %% [markdown]
# # Hello NAS
#
# A neural architecture search has three parts:
#
# 1. a **model space**: an `nn.Module` whose constructor declares *choices*;
# 2. an **evaluator**: turns one model into a metric (here: validation accuracy after a short
#    training);
# 3. a **strategy**: proposes archs and learns from the metrics (here: regularized evolution).
#
# `NasExperiment` runs the trials, stores them in a directory (SQLite + one folder per trial),
# and can be stopped and resumed at any time.

# %%
import logging
import os
import tempfile
import time

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

import nasx
from nasx.datasets import DataNotFoundError, fashion_mnist
from nasx.evaluator import Classification
from nasx.experiment import NasExperiment
from nasx.space import LayerChoice, ModelSpace
from nasx.strategy import RegularizedEvolution

FAST = os.environ.get("NASX_FAST") == "1"
logging.getLogger("pytorch_lightning").setLevel(logging.WARNING)  # keep Lightning's banners quiet
logging.getLogger("lightning").setLevel(logging.WARNING)
torch.manual_seed(0)

# %% [markdown]
# ## Data
#
# Fashion-MNIST (28x28 grey images of clothes, 10 classes) from the Debian package
# `dataset-fashion-mnist`. The search trains on part of the training split and measures accuracy
# on a held-out part of it; the test split is only used once, for the final retrained model.

# %%
N_SEARCH_TRAIN, N_SEARCH_VAL = (1000, 500) if FAST else (8000, 2000)
N_FINAL_TRAIN, N_TEST = (2000, 1000) if FAST else (20000, 10000)


def as_tensors(dataset, start: int, stop: int) -> TensorDataset:
    """Items ``start:stop`` of an ArrayImageDataset as tensors: x (N, 1, 28, 28) in [0, 1], y (N,)."""
    x = torch.tensor(dataset.images[start:stop], dtype=torch.float32).div_(255.0)
    y = torch.tensor(dataset.targets[start:stop])
    return TensorDataset(x, y)


try:
    train_split, test_split = fashion_mnist("train"), fashion_mnist("test")
except DataNotFoundError as e:
    raise SystemExit(f"this tutorial needs Fashion-MNIST: {e}") from None
search_train = as_tensors(train_split, 0, N_SEARCH_TRAIN)
search_val = as_tensors(
    train_split, 50000, 50000 + N_SEARCH_VAL
)  # held out from the search's training images
final_train = as_tensors(train_split, 0, N_FINAL_TRAIN)
test = as_tensors(test_split, 0, N_TEST)
print(
    f"data: Fashion-MNIST ({len(train_split)} train / {len(test_split)} test images); search trains on "
    f"{len(search_train)} and validates on {len(search_val)} held-out train images; the best arch is "
    f"retrained on {len(final_train)} and tested on {len(test)} test images ({'fast' if FAST else 'full'} mode)"
)

# %% [markdown]
# ## The model space
#
# Four decisions: the channel width (`nasx.choice`, a plain value), the stem convolution, the
# activation, and the middle block (`LayerChoice`, one module out of several). 3 x 2 x 2 x 4 = 48
# archs. Under `model_context(arch)` (what the experiment uses to build each trial's model) every
# choice becomes the chosen module, so the model is an ordinary CNN.


# %%
def conv_bn(c_in: int, c_out: int, kernel: int, groups: int = 1) -> nn.Sequential:
    return nn.Sequential(
        nn.Conv2d(c_in, c_out, kernel, padding=kernel // 2, groups=groups, bias=False),
        nn.BatchNorm2d(c_out),
    )


class FashionSpace(ModelSpace):
    def __init__(self):
        super().__init__()
        width = nasx.choice("width", [8, 16, 24])
        self.stem = LayerChoice(
            {"conv3x3": conv_bn(1, width, 3), "conv5x5": conv_bn(1, width, 5)}, label="stem"
        )
        self.act = LayerChoice({"relu": nn.ReLU(), "gelu": nn.GELU()}, label="act")
        self.block = LayerChoice(
            {
                "conv3x3": conv_bn(width, width, 3),
                "conv5x5": conv_bn(width, width, 5),
                # depthwise 3x3 then pointwise 1x1: a separable convolution
                "sepconv3x3": nn.Sequential(
                    conv_bn(width, width, 3, groups=width), conv_bn(width, width, 1)
                ),
                "skip": nn.Identity(),
            },
            label="block",
        )
        self.pool = nn.MaxPool2d(2)
        self.head = nn.Linear(width * 7 * 7, 10)

    def forward(self, x):  # x: (B, 1, 28, 28)
        x = self.pool(self.act(self.stem(x)))  # (B, W, 14, 14)
        x = self.pool(self.act(self.block(x)))  # (B, W, 7, 7)
        return self.head(x.flatten(1))  # (B, 10) logits


space = FashionSpace()
print("search space:", {label: c.grid() for label, c in nasx.search_space(space).items()})

# %% [markdown]
# ## Evaluator and strategy
#
# `Classification` trains with Adam and cross-entropy and returns the validation accuracy.
# Regularized evolution starts from `population_size` random archs, then repeatedly mutates the
# best of `sample_size` random members; the oldest member dies when a child joins.

# %%
trainer_kwargs = dict(
    max_epochs=1,
    accelerator="cpu",
    enable_progress_bar=False,
    logger=False,
    enable_checkpointing=False,
    enable_model_summary=False,
)
evaluator = Classification(
    learning_rate=3e-3,
    train_dataloaders=DataLoader(search_train, batch_size=32, shuffle=True),
    val_dataloaders=DataLoader(search_val, batch_size=500),
    **trainer_kwargs,
)
strategy = RegularizedEvolution(
    population_size=2 if FAST else 6, sample_size=2 if FAST else 3, mutation_prob=0.25, seed=0
)

# %% [markdown]
# ## Run the search
#
# The experiment directory holds `nasx.db` (every trial) and `trials/<id>/arch.json` + `trial.log`.
# Interrupt the script at any time and run it again: `resume=True` continues the same experiment,
# re-running only the trial that was in flight.

# %%
workdir = tempfile.mkdtemp(prefix="hello_nas_") if FAST else "nasx_experiments/hello_nas"
experiment = NasExperiment(
    space, evaluator, strategy, workdir=workdir, max_trials=4 if FAST else 30, resume=True
)
start = time.time()
experiment.run()
print(
    f"search: {experiment.stop_reason} after {time.time() - start:.0f} s; experiment in {workdir}"
)
print(experiment.trial_table())

# %% [markdown]
# ## Export and retrain the best arch
#
# `export_top_models` gives arch dicts (`formatter='dict'`, what `arch.json` holds) or fresh
# models (`formatter='instance'`). We retrain the best one from scratch on more data and measure
# it once on the test split.

# %%
(best_arch,) = experiment.export_top_models(top_k=1)
(model,) = experiment.export_top_models(top_k=1, formatter="instance")
best = max(experiment.trials("succeeded"), key=lambda t: t.metric)
print(
    f"best arch: {best_arch} (search accuracy {best.metric:.4f}, "
    f"{sum(p.numel() for p in model.parameters())} parameters)"
)

retrain = Classification(
    learning_rate=3e-3,
    train_dataloaders=DataLoader(final_train, batch_size=64, shuffle=True),
    val_dataloaders=DataLoader(test, batch_size=500),
    **{**trainer_kwargs, "max_epochs": 1 if FAST else 2},
)
test_accuracy = retrain.evaluate(model)
print(
    f"retrained best arch: test accuracy {test_accuracy:.4f} on {len(test)} Fashion-MNIST test images"
)
