"""Multi-fidelity search: stop poor architectures after an epoch or two, train the good ones longer.

Run it with ``python tutorials/multi_fidelity.py`` (a few minutes on 2 CPU cores) or with
``NASX_FAST=1`` (or ``--fast``) for a smoke run of seconds on a tiny subset. ``--data-dir DIR``
points at Fashion-MNIST's IDX files; without it the data comes from wherever
``nasx.datasets.demo_images`` finds it (scikit-learn's digits at the last resort).
"""
# %% [markdown]
# # Multi-fidelity search
#
# A plain multi-trial search trains every candidate for its full budget, even those that were
# visibly poor after one epoch. A **scheduler** (`nasx.experiment.schedulers`) watches the metric
# each trial reports after every epoch and answers, while the trial runs: *continue*, **pause**
# at a rung (a promising trial may be promoted to a larger budget later), **prune** (stop for
# good) or *complete*. Three things change from a plain search:
#
# 1. the evaluator takes a **`budget`** (epochs to train) and calls **`report(value)`** after each;
# 2. `NasExperiment(..., scheduler=ASHA(...))`;
# 3. the trial table gains a `budget` column and the `paused` / `pruned` statuses.
#
# docs/multi_fidelity.md has every scheduler, and how they compared on real learning curves.

# %%
import argparse
import os

# The command line first, so that `--help` answers before the imports that take seconds.
# ruff: noqa: E402
parser = argparse.ArgumentParser(
    description="Multi-fidelity search: stop poor architectures after an epoch or two, train the\n"
    "good ones longer (ASHA and Hyperband against a plain search; a few minutes on 2 CPU cores).",
    epilog="""environment:
  NASX_FAST=1     a smoke run of seconds whose numbers mean nothing (same as --fast)
  NASX_DATA_DIR   a folder holding fashion-mnist/ (Fashion-MNIST's IDX files)

data: Fashion-MNIST from --data-dir, else $NASX_DATA_DIR/fashion-mnist or ../shared/data/
fashion-mnist, else /usr/share/datasets/fashion-mnist (Debian's dataset-fashion-mnist), else a
copy downloaded earlier; else (full runs only) it is downloaded, else installed with apt (as
root); else scikit-learn's handwritten digits stand in. The script says which one it used.""",
    formatter_class=argparse.RawDescriptionHelpFormatter,
    allow_abbrev=False,  # a kernel's `--f=...` must not read as --fast
)
parser.add_argument("--data-dir", default=None, help="folder with Fashion-MNIST's IDX files")
parser.add_argument(
    "--workdir", default=None, help="where the experiments go (default: a temp dir)"
)
parser.add_argument("--fast", action="store_true", help="smoke run (same as NASX_FAST=1)")
args, _ = parser.parse_known_args()  # known only: a notebook kernel passes arguments of its own
FAST = args.fast or os.environ.get("NASX_FAST") == "1"

import collections
import sys
import tempfile
import time
from pathlib import Path

import torch
import torch.nn as nn
import torch.nn.functional as F

import nasx
from nasx.cli import main as nasx_cli
from nasx.datasets import DataNotFoundError
from nasx.datasets.demo import demo_images
from nasx.experiment import NasExperiment
from nasx.experiment.schedulers import ASHA, Hyperband
from nasx.space import LayerChoice, ModelSpace
from nasx.strategy import Random

torch.manual_seed(0)
T0 = time.monotonic()

# %% [markdown]
# ## Data
#
# Grey 28x28 images of 10 classes: Fashion-MNIST when it is on this machine (or can be fetched),
# else scikit-learn's handwritten digits. The search trains on part of the training split and
# validates on a held-out part of it. A fast run never downloads anything.

# %%
try:
    data = demo_images(args.data_dir, allow_download=not FAST, allow_apt=not FAST)
except DataNotFoundError as e:
    sys.exit(f"multi_fidelity: {e}")

N_TRAIN, N_VAL = (128, 128) if FAST else (4000, 1000)


def tensors(start: int, stop: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Training images ``start:stop``: x (N, 1, 28, 28) float32 in [0, 1], y (N,) int64."""
    x = torch.tensor(data.train_images[start:stop], dtype=torch.float32) / 255.0
    return x, torch.tensor(data.train_labels[start:stop], dtype=torch.int64)


n = len(data.train_labels)
train_xy, val_xy = tensors(0, N_TRAIN), tensors(n - N_VAL, n)
print(
    f"data: {data.name}: train on {N_TRAIN:,} images, validate on {N_VAL:,} others"
    + (" (FAST smoke run: the numbers below mean nothing)" if FAST else "")
)

# %% [markdown]
# ## The space
#
# A small CNN: stem width, then two blocks whose operation is searched. 3 x 3 x 4 = 36 archs.


# %%
def conv_bn(c_in: int, c_out: int, kernel: int, groups: int = 1) -> nn.Sequential:
    return nn.Sequential(
        nn.Conv2d(c_in, c_out, kernel, padding=kernel // 2, groups=groups, bias=False),
        nn.BatchNorm2d(c_out),
        nn.ReLU(),
    )


def block(width: int, label: str, skip: bool) -> LayerChoice:
    ops = {
        "conv3x3": conv_bn(width, width, 3),
        "conv5x5": conv_bn(width, width, 5),
        "sepconv3x3": nn.Sequential(
            conv_bn(width, width, 3, groups=width), conv_bn(width, width, 1)
        ),
    }
    if skip:
        ops["skip"] = nn.Identity()
    return LayerChoice(ops, label=label)


class SmallCNN(ModelSpace):
    def __init__(self):
        super().__init__()
        width = nasx.choice("width", [8, 12, 16])
        self.stem = conv_bn(1, width, 3)
        self.block1 = block(width, "block1", skip=False)
        self.block2 = block(width, "block2", skip=True)
        self.head = nn.Linear(width, 10)

    def forward(self, x):  # x: (B, 1, 28, 28)
        x = F.max_pool2d(self.stem(x), 2)  # (B, W, 14, 14)
        x = F.max_pool2d(self.block1(x), 2)  # (B, W, 7, 7)
        return self.head(self.block2(x).mean((2, 3)))  # (B, 10) logits


space = SmallCNN()
print(f"space: {nasx.search_space(space).size} archs")

# %% [markdown]
# ## An evaluator that takes a budget
#
# The one new thing an evaluator needs: a `budget` parameter (how many epochs to train) and a
# `report(value)` after each epoch. The scheduler answers each report; when it says *pause* or
# *prune*, `report` raises `TrialStopped` and nasx records the trial (an evaluator that catches
# every exception must let that one through). nasx's `Classification`, `Regression` and
# `Lightning` evaluators do all this already: they train `budget` epochs and report the
# validation metric after each. Here it is by hand, so you see it all.
#
# A promoted trial is trained again by the same evaluator with a larger budget. Declaring a
# `checkpoint` parameter says the evaluator can continue: `checkpoint.load()` gives back what it
# saved when the trial paused (None for a fresh start), it trains only the epochs after that,
# and `checkpoint.save(state)` keeps its state at `budget` for a later promotion. Without the
# parameter nasx trains a promoted trial again from scratch (and says so). `EPOCHS_TRAINED`
# counts every epoch actually trained, so the comparison below is honest either way.

# %%
MAX_EPOCHS = 9
EPOCHS_TRAINED: collections.Counter[str] = collections.Counter()  # experiment name -> epochs


@torch.no_grad()
def accuracy(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> float:
    model.eval()
    correct = int((model(x).argmax(1) == y).sum())
    model.train()
    return correct / len(y)


def make_evaluator(name: str):
    """An evaluator that trains ``budget`` epochs (all of them without a scheduler), reports the
    validation accuracy after each, and counts its epochs under ``name``."""

    def train(model, budget=None, report=None, checkpoint=None):
        budget = budget or MAX_EPOCHS  # None: no scheduler, the full training
        opt = torch.optim.Adam(model.parameters(), lr=3e-3)
        state = checkpoint.load() if checkpoint is not None else None
        if state is not None:  # a promotion: go on from where the trial paused
            model.load_state_dict(state["model"])
            opt.load_state_dict(state["optimizer"])
        x, y = train_xy
        val = 0.0
        for _epoch in range(0 if state is None else state["epoch"], budget):
            for idx in torch.randperm(len(x)).split(32):
                opt.zero_grad()
                F.cross_entropy(model(x[idx]), y[idx]).backward()
                opt.step()
            EPOCHS_TRAINED[name] += 1
            val = accuracy(model, *val_xy)
            if report is not None:
                report(val)  # the scheduler's turn: it may stop the trial here
        if checkpoint is not None:
            checkpoint.save(
                {"epoch": budget, "model": model.state_dict(), "optimizer": opt.state_dict()}
            )
        return val

    return train


root = Path(args.workdir or tempfile.mkdtemp(prefix="multi_fidelity_"))
N_TRIALS = 9 if FAST else 27


def experiment(name: str, scheduler=None, max_trials: int = N_TRIALS, **kwargs) -> NasExperiment:
    """The same search each time (same strategy seed, same trial seeds); only the scheduler
    differs."""
    return NasExperiment(
        space,
        make_evaluator(name),
        Random(seed=0),
        workdir=root / name,
        max_trials=max_trials,
        seed=0,
        progress=False,
        scheduler=scheduler,
        **kwargs,
    )


# %% [markdown]
# ## ASHA
#
# Asynchronous successive halving: rungs at 1, 3 and 9 epochs (`min_budget * eta**k`). A new
# trial trains 1 epoch and pauses there; whenever a worker is free, the best paused trial in the
# top third (`1/eta`) of its rung is promoted to the next rung, else a new trial starts. No
# worker ever waits for a rung to fill.
#
# With `eta=3` a trial reaches 9 epochs only once 9 trials reported at 1 epoch (3 of them
# promoted to 3 epochs, the best of those to 9): give a search at least `eta**2` trials here.
# `max_trials` counts architectures: once it is reached no new trial starts, but promotions go on.

# %%
asha = experiment("asha", ASHA(min_budget=1, max_budget=MAX_EPOCHS, eta=3))
asha.run()
print(f"ASHA: {asha.stop_reason}; {EPOCHS_TRAINED['asha']} epochs trained")
print(asha.trial_table())

# %% [markdown]
# The `budget` column is how far each trial got. **paused** trials stopped at a rung and were not
# promoted: they are the ones early stopping saved the epochs of. Only trials that reached
# `max_budget` are **succeeded**, and only they are ranked by `export_top_models` (a run where
# none did says so, and `export_top_models(include_partial=True)` then ranks the trials by the
# budget they reached, best first at the highest).

# %%
(asha_best,) = asha.export_top_models(top_k=1)
asha_metric = max(t.metric for t in asha.trials("succeeded"))
print(f"ASHA's best arch: {asha_best} (validation accuracy {asha_metric:.1%})")

# %% [markdown]
# `nasx show` prints the same from the command line (`nasx show <workdir>`), counting paused and
# pruned trials apart from failed ones:

# %%
nasx_cli(["show", str(root / "asha")])

# %% [markdown]
# Each trial's validation accuracy after every epoch it trained: the curves that stop at 1 or 3
# epochs are the trials ASHA paused there (`nasx.plot`, the `plot` extra).

# %%
from nasx.plot import plot_learning_curves, show

show(plot_learning_curves(asha, top_k=3), root / "asha_learning_curves.png")

# %% [markdown]
# ## Pruning for good: ASHA's stopping mode and Hyperband
#
# `ASHA(mode='stopping')` is the rule of Ray Tune's `ASHAScheduler` and Optuna's
# `SuccessiveHalvingPruner`: every trial aims at `max_budget` and is **pruned** at a rung when it
# is not in the top third of what that rung has seen so far. Hyperband runs brackets of
# synchronous successive halving that start at different rungs (some trials start at 3 or 9
# epochs, a hedge against early epochs that mislead). Its trials pause at a rung until the rung
# has filled; the ones a rung did not promote will never be, so they end **pruned** at the
# budget they reached (with ASHA, any paused trial may still be promoted by a later run).

# %%
stopping = experiment("asha_stopping", ASHA(1, MAX_EPOCHS, eta=3, mode="stopping"))
stopping.run()
hyperband = experiment("hyperband", Hyperband(1, MAX_EPOCHS, eta=3))
hyperband.run()
for name, exp in (("ASHA stopping", stopping), ("Hyperband", hyperband)):
    counts = collections.Counter(t.status for t in exp.trials())
    print(f"{name}: {dict(counts)}")
print(stopping.trial_table())

# %% [markdown]
# ## What it saved
#
# The same 9 (or 27) architectures in the same order, each trained the full 9 epochs: the
# search without a scheduler. The schedulers looked at the same trials for a fraction of the
# epochs; whether they found as good an arch depends on how well the first epochs predict the
# last ones (on the 648-arch table of `benchmarks/learning_curves.py` they rank archs poorly, so
# there ASHA needs most of full-budget search's epochs to match it:
# `benchmarks/multi_fidelity.results.md`).

# %%
full = experiment("full_budget")
full.run()
full_metric = max(t.metric for t in full.trials("succeeded"))
print(f"{'search':16s} {'epochs':>6s} {'best val acc':>12s}")
for name, key, metric in (
    ("full budget", "full_budget", full_metric),
    ("ASHA", "asha", asha_metric),
    ("ASHA stopping", "asha_stopping", max(t.metric for t in stopping.trials("succeeded"))),
    ("Hyperband", "hyperband", max(t.metric for t in hyperband.trials("succeeded"))),
):
    saved = 1 - EPOCHS_TRAINED[key] / EPOCHS_TRAINED["full_budget"]
    print(f"{name:16s} {EPOCHS_TRAINED[key]:6d} {metric:12.1%}   ({saved:.0%} fewer epochs)")

# %% [markdown]
# ## Stopping and resuming
#
# The scheduler's state (its rungs, what it promoted) is stored in the experiment's `nasx.db`
# after every decision. Stop a search at any time (Ctrl-C, `exp.stop()`, or a limit as here) and
# run it again with `resume=True`: the paused trials of the first run are still candidates for
# promotion, and the scheduler decides as it would have without the stop. Pass a scheduler made
# with the same arguments.

# %%
first = experiment("resumed", ASHA(1, MAX_EPOCHS, eta=3), max_trials=N_TRIALS // 3)
first.run()
print(f"first run: {first.stop_reason}; {collections.Counter(t.status for t in first.trials())}")
again = experiment("resumed", ASHA(1, MAX_EPOCHS, eta=3), resume=True)
again.run()
resumed = {t.id: (t.status, t.budget) for t in again.trials()}
print(f"resumed run: {again.stop_reason}; {collections.Counter(s for s, _ in resumed.values())}")
same = resumed == {t.id: (t.status, t.budget) for t in asha.trials()}
print(f"same trials, statuses and budgets as the uninterrupted ASHA run: {same}")
print(f"(total time {time.monotonic() - T0:.0f} s; experiments in {root})")
