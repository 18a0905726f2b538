# %% [markdown]
# # nasx quick start: a model space in five minutes
#
# A *model space* is an ordinary `nn.Module` whose constructor contains *choices*. This script
# declares one with every primitive, lists its search space, samples and rebuilds a few
# architectures as plain PyTorch models, and trains one briefly on real data (Fashion-MNIST from
# the Debian package `dataset-fashion-mnist`, or CIFAR-10 from `../shared/data`).
#
# Run it with `python tutorials/quickstart.py`; `NASX_FAST=1` makes it a few-second smoke run.
# Nothing is downloaded: without either data set on this machine, fetch Fashion-MNIST into
# nasx's cache once with `python -c "from nasx.datasets import fashion_mnist as f;
# f('train', download=True); f('test', download=True)"` (30 MB).

# %%
import argparse
import os

# The command line first, so that `--help` answers before the imports that take seconds.
# ruff: noqa: E402
parser = argparse.ArgumentParser(
    description="nasx quick start: a model space in five minutes. Declares a space with every\n"
    "primitive, lists its search space, rebuilds a few archs as plain PyTorch models and trains\n"
    "one briefly on real data.",
    epilog="""environment:
  NASX_FAST=1     a smoke run of seconds (same as --fast)
  NASX_DATA_DIR   a folder holding fashion-mnist/ or cifar10/

data: Fashion-MNIST from $NASX_DATA_DIR/fashion-mnist, ../shared/data/fashion-mnist,
/usr/share/datasets/fashion-mnist (Debian's dataset-fashion-mnist) or nasx's cache; else
CIFAR-10 from $NASX_DATA_DIR/cifar10, ../shared/data/cifar10 or the cache. This script
downloads nothing; to fetch Fashion-MNIST (30 MB) into the cache once:
  python -c "from nasx.datasets import fashion_mnist as f; f('train', download=True); f('test', download=True)"
""",
    formatter_class=argparse.RawDescriptionHelpFormatter,
    allow_abbrev=False,  # a kernel's `--f=...` must not read as --fast
)
parser.add_argument("--fast", action="store_true", help="smoke run (same as NASX_FAST=1)")
args, _ = parser.parse_known_args()  # known only: a notebook kernel passes arguments of its own
FAST = args.fast or os.environ.get("NASX_FAST") == "1"

import json
import tempfile
import time
from pathlib import Path

import torch
import torch.nn as nn
import torch.nn.functional as F

from nasx.space import (
    Cell,
    InputChoice,
    LayerChoice,
    ModelSpace,
    Repeat,
    choice,
    model_context,
    search_space,
)

torch.manual_seed(0)

# %% [markdown]
# ## 1. Declare the space
# `choice` gives a plain value (the default while the space is searched, the chosen one when
# a model is rebuilt), so widths go straight into `nn.Conv2d`. `LayerChoice` picks a module,
# `Repeat` a depth, `InputChoice` a skip connection and `Cell` a DARTS-style DAG.


# %%
class SmallConvSpace(ModelSpace):
    def __init__(self, in_channels: int = 1, num_classes: int = 10):
        super().__init__()
        width = choice("width", [16, 32])
        self.stem = nn.Sequential(
            nn.Conv2d(in_channels, width, 3, padding=1), nn.BatchNorm2d(width), nn.ReLU()
        )
        self.stages = Repeat(
            lambda i: nn.Sequential(
                LayerChoice(
                    {
                        "conv3x3": nn.Conv2d(width, width, 3, padding=1),
                        "conv5x5": nn.Conv2d(width, width, 5, padding=2),
                        "dwsep3x3": nn.Sequential(
                            nn.Conv2d(width, width, 3, padding=1, groups=width),
                            nn.Conv2d(width, width, 1),
                        ),
                    },
                    label=f"stage{i}_op",
                ),
                nn.BatchNorm2d(width),
                nn.ReLU(),
                nn.MaxPool2d(2),
            ),
            depth=(1, 2),
            label="depth",
        )
        ops = {
            "conv": lambda node, op, inp: nn.Sequential(
                nn.Conv2d(width, width, 3, padding=1), nn.ReLU()
            ),
            "pool": lambda node, op, inp: nn.AvgPool2d(3, 1, 1),
            "skip": lambda node, op, inp: nn.Identity(),
        }
        self.cell = Cell(ops, num_nodes=2, num_predecessors=1, merge_op="all", label="cell")
        self.skip = InputChoice(2, n_chosen=1, label="head_input")
        self.classifier = nn.Linear(2 * width, num_classes)

    def forward(self, x):
        x = self.stages(self.stem(x))
        y = self.cell(x)  # (N, 2 * width, H, W)
        y = self.skip([y, torch.cat([x, x], 1)])  # pick the cell or a plain skip
        return self.classifier(F.adaptive_avg_pool2d(y, 1).flatten(1))


# %% [markdown]
# ## 2. List the search space
# Every decision has a label, its candidates and a default. Strategies only ever see this dict.

# %%
space = SmallConvSpace()
ss = search_space(space)
for label, c in ss.items():
    print(f"{label:18s} {c.grid()}")
print(f"{len(ss)} decisions, {ss.size} architectures")

# %% [markdown]
# ## 3. Sample and rebuild
# An *arch* is a JSON-serialisable dict. Under `model_context(arch)` the same constructor builds a
# plain model: no choices left, only the chosen layers.

# %%
for seed in range(3):
    arch = ss.sample(seed=seed)
    with model_context(arch):
        model = SmallConvSpace()
    n_params = sum(p.numel() for p in model.parameters())
    print(f"seed {seed}: {n_params:7d} parameters  {json.dumps(arch)}")
assert search_space(model) == {}

# %% [markdown]
# ## 4. Train the last one briefly on real data
# Data is found locally (`NASX_DATA_DIR`, `../shared/data`, the Debian Fashion-MNIST path);
# nothing is downloaded.

# %%
from nasx.datasets import DataNotFoundError, cifar10, fashion_mnist  # noqa: E402

try:
    train_set, test_set = fashion_mnist("train"), fashion_mnist("test")
    in_channels, data_name = 1, "Fashion-MNIST"
except DataNotFoundError as fashion_error:
    try:
        train_set, test_set = cifar10("train"), cifar10("test")
        in_channels, data_name = 3, "CIFAR-10"
    except DataNotFoundError as cifar_error:
        raise SystemExit(f"No dataset found.\n{fashion_error}\n{cifar_error}") from None
print(f"data: {data_name}, {len(train_set)} training and {len(test_set)} test images")

n_train, n_test, epochs = (512, 256, 1) if FAST else (10000, 2000, 2)
train_set = torch.utils.data.Subset(train_set, range(n_train))
test_set = torch.utils.data.Subset(test_set, range(n_test))
train_loader = torch.utils.data.DataLoader(train_set, batch_size=64, shuffle=True)
test_loader = torch.utils.data.DataLoader(test_set, batch_size=256)

with model_context(arch):
    model = SmallConvSpace(in_channels=in_channels)
optimizer = torch.optim.Adam(model.parameters(), lr=2e-3)
steps = {"loss": [], "accuracy": []}  # per training step, for the figure below
test_accuracy = []  # per epoch
start = time.perf_counter()
for epoch in range(epochs):
    model.train()
    for x, y in train_loader:
        logits = model(x)
        loss = F.cross_entropy(logits, y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        steps["loss"].append(loss.item())
        steps["accuracy"].append((logits.argmax(1) == y).float().mean().item())
    model.eval()
    with torch.no_grad():
        correct = sum((model(x).argmax(1) == y).sum().item() for x, y in test_loader)
    test_accuracy.append(correct / len(test_set))
    smoke = " (FAST smoke run: a tiny subset, this number means nothing)" if FAST else ""
    print(
        f"epoch {epoch + 1}: loss {loss.item():.3f}, test accuracy {test_accuracy[-1]:.2%}{smoke}"
    )
print(f"trained in {time.perf_counter() - start:.1f} s")

# %% [markdown]
# The training, drawn: the loss and the accuracy of every training batch (thin lines; thick: their
# running mean over about an eighth of an epoch), and the test accuracy at the end of each epoch
# (dots). `nasx.plot.show` writes the figure to a file and, in a notebook, also shows it here.
# (Drawing needs matplotlib: `pip install 'nasx[plot]'`.)


# %%
def training_figure():
    """Two panels, loss and accuracy by training step: a closed matplotlib figure."""
    import matplotlib.pyplot as plt

    per_epoch = len(steps["loss"]) // epochs
    window = max(1, per_epoch // 8)
    fig, axes = plt.subplots(1, 2, figsize=(7, 2.8), sharex=True)
    plt.close(fig)  # nothing pops up: show() below displays it
    for ax, key in zip(axes, ("loss", "accuracy"), strict=True):
        values, x = steps[key], range(1, len(steps[key]) + 1)
        recent = [values[max(0, i - window + 1) : i + 1] for i in range(len(values))]
        ax.plot(x, values, color="tab:blue", lw=0.6, alpha=0.4)
        ax.plot(
            x, [sum(r) / len(r) for r in recent], color="tab:blue", lw=1.8, label="training batches"
        )
        ax.set_xlabel("training step")
        ax.grid(alpha=0.3)
    ends = [per_epoch * (e + 1) for e in range(epochs)]
    axes[1].plot(ends, test_accuracy, "o", color="tab:orange", label="test set, end of epoch")
    axes[0].set_ylabel("cross-entropy")
    axes[0].set_title("training loss", fontsize=10)
    axes[1].set_ylabel("accuracy")
    axes[1].set_ylim(0, 1)
    axes[1].set_title("accuracy", fontsize=10)
    axes[1].legend(fontsize=8, loc="best")
    fig.suptitle(f"Training the last sampled arch on {data_name}", fontsize=11)
    fig.tight_layout()
    return fig


try:
    from nasx.plot import show

    saved = show(
        training_figure(), Path(tempfile.mkdtemp(prefix="nasx_quickstart_")) / "training.png"
    )
    print(f"figure of the training (loss and accuracy by step): {saved}")
except ImportError as e:  # matplotlib is the [plot] extra
    print(f"no figure: {e}")

# %% [markdown]
# The rebuilt model is plain PyTorch, so it exports like any other:

# %%
exported = torch.export.export(model.eval(), (next(iter(test_loader))[0][:1],))
print("exported with torch.export:", type(exported).__name__)
