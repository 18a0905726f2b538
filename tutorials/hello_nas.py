"""Hello NAS: search a small CNN space on Fashion-MNIST with regularized evolution, export the best
arch and retrain it.

Run it with ``make demo`` or ``python tutorials/hello_nas.py`` (about 3 minutes on 2 CPU cores), or
with ``NASX_FAST=1`` (or ``--fast``) for a smoke run of a few seconds. ``--seed N`` changes the
seed (same seed, CPU and torch thread count: same numbers; torch's kernels split sums by thread,
so another thread count or CPU rounds differently and ends slightly apart);
``--data-dir DIR`` points at Fashion-MNIST's IDX files; Ctrl-C stops it and running it again
resumes where it stopped. It ends by writing a chart of the search beside the experiment and
printing the ``nasx show`` and ``nasx serve`` commands that show its trials.
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
# and can be stopped and resumed at any time. The data is Fashion-MNIST, found on this machine or
# downloaded, else scikit-learn's handwritten digits stand in (see *Data* below).

# %%
import argparse
import os

# The command line first, so that `--help` answers before the imports that take seconds.
# ruff: noqa: E402
parser = argparse.ArgumentParser(
    description="Hello NAS: search a small CNN space on Fashion-MNIST with regularized\n"
    "evolution, export the best arch and retrain it (about 3 minutes on 2 CPU cores).",
    epilog="""environment:
  NASX_FAST=1     a smoke run of seconds whose numbers mean nothing (same as --fast)
  NASX_DATA_DIR   a folder holding fashion-mnist/ (Fashion-MNIST's IDX files)

data: Fashion-MNIST from --data-dir, else $NASX_DATA_DIR/fashion-mnist or ../shared/data/
fashion-mnist, else /usr/share/datasets/fashion-mnist (Debian's dataset-fashion-mnist), else a
copy downloaded earlier; else it is downloaded, else installed with apt (as root), else
scikit-learn's handwritten digits stand in. The script says which one it used.""",
    formatter_class=argparse.RawDescriptionHelpFormatter,
    allow_abbrev=False,  # a kernel's `--f=...` must not read as --fast
)
parser.add_argument("--seed", type=int, default=0, help="seed of the whole run (default 0)")
parser.add_argument("--data-dir", default=None, help="folder with Fashion-MNIST's IDX files")
parser.add_argument(
    "--workdir",
    default=None,
    help="experiment folder (default: nasx_experiments/hello_nas_seed<SEED>, a temporary one "
    "with --fast); run again with the same one to resume",
)
parser.add_argument("--fast", action="store_true", help="smoke run (same as NASX_FAST=1)")
args, _ = parser.parse_known_args()  # known only: a notebook kernel passes arguments of its own
FAST = args.fast or os.environ.get("NASX_FAST") == "1"

import json
import logging
import shutil
import sys
import tempfile
import time
from pathlib import Path

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

import nasx
from nasx.datasets import DataNotFoundError
from nasx.datasets.demo import demo_images
from nasx.evaluator import Classification
from nasx.experiment import NasExperiment
from nasx.experiment.display.progress import format_seconds
from nasx.space import LayerChoice, ModelSpace
from nasx.strategy import RegularizedEvolution

logging.getLogger("pytorch_lightning").setLevel(logging.WARNING)  # keep Lightning's banners quiet
logging.getLogger("lightning").setLevel(logging.WARNING)
torch.manual_seed(args.seed)
T0 = time.monotonic()

# %% [markdown]
# ## Data
#
# Fashion-MNIST (28x28 grey images of clothes, 10 classes): read from disk when it is there,
# else downloaded, else installed from Debian's `dataset-fashion-mnist` (as root), else
# scikit-learn's real handwritten digits stand in (see `nasx.datasets.demo`). The search trains on
# part of the training split and measures accuracy on a held-out part of it; the test split is
# used once, for the final retrained model.

# %%
try:
    data = demo_images(args.data_dir)
except DataNotFoundError as e:
    sys.exit(f"hello_nas: {e}")

n_train = len(data.train_labels)
N_SEARCH_TRAIN, N_SEARCH_VAL = (320, 200) if FAST else (min(8000, n_train // 2), 2000)
N_FINAL_TRAIN = 320 if FAST else min(20000, n_train - N_SEARCH_VAL)
N_TEST = min(500 if FAST else 10000, len(data.test_labels))


def as_tensors(images, labels, start: int, stop: int) -> TensorDataset:
    """Items ``start:stop`` as tensors: x (N, 1, 28, 28) float32 in [0, 1], y (N,) int64."""
    x = torch.tensor(images[start:stop], dtype=torch.float32).div_(255.0)
    y = torch.tensor(labels[start:stop], dtype=torch.int64)
    return TensorDataset(x, y)


# The search validates on the last N_SEARCH_VAL training images: never trained on in the search.
search_train = as_tensors(data.train_images, data.train_labels, 0, N_SEARCH_TRAIN)
search_val = as_tensors(data.train_images, data.train_labels, n_train - N_SEARCH_VAL, n_train)
final_train = as_tensors(data.train_images, data.train_labels, 0, N_FINAL_TRAIN)
test = as_tensors(data.test_images, data.test_labels, 0, N_TEST)
print(f"data: {data.name} ({data.origin})")
print(
    f"  search: train on {len(search_train):,} images, validate on {len(search_val):,} held-out "
    f"train images; final: retrain on {len(final_train):,}, test on {len(test):,} test images "
    f"({'FAST smoke run: numbers mean nothing' if FAST else 'full run'}, seed {args.seed}, "
    f"{torch.get_num_threads()} torch thread{'s' if torch.get_num_threads() > 1 else ''})"
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
choices = nasx.search_space(space)
print(f"search space ({len(list(choices.grid()))} archs):")
for label, c in choices.items():
    print(f"  {label}: {c.grid()}")

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
    population_size=2 if FAST else 6,
    sample_size=2 if FAST else 3,
    mutation_prob=0.25,
    seed=args.seed,
)

# %% [markdown]
# ## Run the search
#
# The experiment directory holds `nasx.db` (every trial) and `trials/<id>/arch.json` + `trial.log`.
# `seed=` seeds each trial (seed + trial id), so a rerun gives the same numbers. Interrupt the
# script at any time (Ctrl-C) and run it again: `resume=True` continues the same experiment,
# re-running only the trial that was in flight.

# %%
default_workdir = (
    tempfile.mkdtemp(prefix="hello_nas_") if FAST else f"nasx_experiments/hello_nas_seed{args.seed}"
)
workdir = Path(args.workdir or default_workdir)
MAX_TRIALS = 4 if FAST else 30
experiment = NasExperiment(
    space, evaluator, strategy, workdir=workdir, max_trials=MAX_TRIALS, resume=True, seed=args.seed
)


def one_line_on_ctrl_c(kind, value, traceback) -> None:
    """Ctrl-C: say what is kept and how to go on, instead of a traceback."""
    if not issubclass(kind, KeyboardInterrupt):
        return sys.__excepthook__(kind, value, traceback)
    done = sum(t.status in ("succeeded", "failed") for t in experiment.trials())
    print(
        f"\ninterrupted: the {done} finished trial(s) are kept in {workdir}; run the same "
        "command again to resume",
        file=sys.stderr,
    )


sys.excepthook = one_line_on_ctrl_c
print(
    f"search: {MAX_TRIALS} trials of regularized evolution, one epoch each; experiment in {workdir}"
)
start = time.monotonic()
experiment.run()
print(f"search: {experiment.stop_reason} after {format_seconds(time.monotonic() - start)}")
print(experiment.trial_table())

# %% [markdown]
# ## Export and retrain the best arch
#
# `export_top_models` gives arch dicts (`formatter='dict'`, what `arch.json` holds) or fresh
# models (`formatter='instance'`). We retrain the best one from scratch on more data and measure
# it once on the test split. The result is saved beside the experiment, so a rerun reuses it.

# %%
(best_arch,) = experiment.export_top_models(top_k=1)
(model,) = experiment.export_top_models(top_k=1, formatter="instance")
best = max(experiment.trials("succeeded"), key=lambda t: t.metric)
n_params = sum(p.numel() for p in model.parameters())
print(f"best arch: {best_arch} (search accuracy {best.metric:.2%}, {n_params:,} parameters)")

retrained_file = workdir / "retrained.json"
record = {"arch": best_arch, "seed": args.seed, "train": len(final_train), "test": len(test)}
saved = json.loads(retrained_file.read_text()) if retrained_file.exists() else {}
if {k: saved.get(k) for k in record} == record:
    test_accuracy = saved["test_accuracy"]
    print(f"retraining: reusing the result saved in {retrained_file} (delete it to retrain)")
else:
    torch.manual_seed(args.seed)  # the same retraining whatever the search consumed before
    retrain = Classification(
        learning_rate=3e-3,
        train_dataloaders=DataLoader(final_train, batch_size=64, shuffle=True),
        val_dataloaders=DataLoader(test, batch_size=500),
        # Lightning's bar in a terminal; in a log file it would be thousands of redrawn lines
        **{
            **trainer_kwargs,
            "max_epochs": 1 if FAST else 2,
            "enable_progress_bar": sys.stderr.isatty(),
        },
    )
    start = time.monotonic()
    print(
        f"retraining the best arch for {1 if FAST else 2} epoch(s) on {len(final_train):,} images..."
    )
    test_accuracy = retrain.evaluate(model)
    print(f"retraining took {format_seconds(time.monotonic() - start)}")
    retrained_file.write_text(json.dumps({**record, "test_accuracy": test_accuracy}, indent=1))
smoke = " (FAST smoke run: a tiny subset, so this number means nothing)" if FAST else ""
print(
    f"retrained best arch: test accuracy {test_accuracy:.2%} on {len(test):,} {data.name} test "
    f"images{smoke}; total time {format_seconds(time.monotonic() - T0)}"
)

# %% [markdown]
# ## Look at the search
#
# A chart of every trial's accuracy and of the best so far (`nasx.plot`, which needs matplotlib:
# `pip install 'nasx[plot]'`) goes beside the experiment. `nasx show` prints the trials in a
# terminal; `nasx serve` opens a page with the trials and their charts.

# %%
try:
    from nasx.plot import plot_metric_history, show

    chart = workdir / "search_history.png"
    figure = plot_metric_history(experiment)
    axes = figure.axes[0]  # the metric is called 'default': name it
    axes.set_ylabel("validation accuracy")
    axes.set_title(axes.get_title().replace("default", "validation accuracy", 1), fontsize=10)
    show(figure, chart)  # a file; in a notebook also shown here
    print(f"chart of the search (accuracy by trial, best so far): {chart}")
except ImportError as e:  # matplotlib is the [plot] extra
    print(f"no chart: {e}")
if shutil.which("nasx"):
    nasx_command = "nasx"
elif Path(sys.executable).with_name("nasx").exists():  # `make demo`: .venv/bin/nasx
    nasx_command = str(Path(sys.executable).with_name("nasx"))
    if not os.path.relpath(nasx_command).startswith(".."):
        nasx_command = os.path.relpath(nasx_command)
else:
    nasx_command = f"{sys.executable} -m nasx.cli"
print("the trials:")
print(f"  {nasx_command} show {workdir}    # a table in this terminal")
print(f"  {nasx_command} serve {workdir}   # a page with the trials and their charts")
