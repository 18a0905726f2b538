# %% [markdown]
# # nasx quick start: a model space in five minutes
#
# A *model space* is an ordinary `nn.Module` whose constructor contains *choices*. This script
# declares one with every primitive, lists its search space, samples and rebuilds a few
# architectures as plain PyTorch models, and trains one briefly on real data (Fashion-MNIST from
# the Debian package `dataset-fashion-mnist`, or CIFAR-10 from `../shared/data`).
#
# Run it with `python tutorials/quickstart.py`; `NASX_FAST=1` makes it a few-second smoke run.

# %%
import json
import os
import time

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

FAST = os.environ.get("NASX_FAST") == "1"
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
start = time.perf_counter()
for epoch in range(epochs):
    model.train()
    for x, y in train_loader:
        loss = F.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    model.eval()
    with torch.no_grad():
        correct = sum((model(x).argmax(1) == y).sum().item() for x, y in test_loader)
    smoke = " (FAST smoke run: a tiny subset, this number means nothing)" if FAST else ""
    print(
        f"epoch {epoch + 1}: loss {loss.item():.3f}, test accuracy {correct / len(test_set):.2%}"
        f"{smoke}"
    )
print(f"trained in {time.perf_counter() - start:.1f} s")

# %% [markdown]
# The rebuilt model is plain PyTorch, so it exports like any other:

# %%
exported = torch.export.export(model.eval(), (next(iter(test_loader))[0][:1],))
print("exported with torch.export:", type(exported).__name__)
