"""Tutorial: write your own one-shot algorithm with a Mutator, in a plain PyTorch loop.

NNI's one-shot pattern in nasx names: ``mutator = MyMutator(model)``; each step
``mutator.reset()`` then an ordinary forward/backward; ``mutator.export()`` at the end. We write
first-order DARTS as a custom mutator (about 15 lines) and train it without Lightning. Run
``python tutorials/custom_oneshot.py`` (a few minutes on a laptop CPU) or
``NASX_FAST=1 python tutorials/custom_oneshot.py`` (seconds; what the tests run). Needs CIFAR-10
under ``../shared/data`` or ``$NASX_DATA_DIR`` (see ``nasx.datasets``), or a copy in nasx's cache:
``python -c "from nasx.datasets import cifar10; cifar10('train', download=True)"`` fetches the
official archive (170 MB) once. ``--help`` lists the options.
"""
# %% [markdown]
# ## 1. A model space
# Two searched layers (each a choice of operation) and a searched skip: which earlier feature
# map feeds the classifier.

# %%
import argparse
import os

# The command line first, so that `--help` answers before the imports that take seconds.
# ruff: noqa: E402
parser = argparse.ArgumentParser(
    description="Write your own one-shot algorithm with a Mutator, in a plain PyTorch loop:\n"
    "first-order DARTS as a custom mutator, trained without Lightning (a few minutes on a CPU).",
    epilog="""environment:
  NASX_FAST=1     a smoke run of seconds whose numbers mean nothing (same as --fast)
  NASX_DATA_DIR   a folder holding cifar10/

data: CIFAR-10, from $NASX_DATA_DIR/cifar10 or ../shared/data/cifar10 (cifar10_jpg.tar.gz
beside cifar10_labels_canonical.npz), else a copy downloaded earlier into nasx's cache. This
script downloads nothing; to fetch the official archive (170 MB) into the cache once:
  python -c "from nasx.datasets import cifar10; cifar10('train', download=True)"
""",
    formatter_class=argparse.RawDescriptionHelpFormatter,
    allow_abbrev=False,  # a kernel's `--f=...` must not read as --fast
)
parser.add_argument("--fast", action="store_true", help="smoke run (same as NASX_FAST=1)")
args, _ = parser.parse_known_args()  # known only: a notebook kernel passes arguments of its own
FAST = args.fast or os.environ.get("NASX_FAST") == "1"

import tempfile

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Subset

from nasx.datasets import cifar10
from nasx.space import InputChoice, LayerChoice, ModelSpace, model_context
from nasx.strategy import Mutator, RandomMutator

torch.manual_seed(0)


def ops(c: int) -> dict[str, nn.Module]:
    return {
        "conv3x3": nn.Sequential(nn.Conv2d(c, c, 3, padding=1), nn.BatchNorm2d(c), nn.ReLU()),
        "conv5x5": nn.Sequential(nn.Conv2d(c, c, 5, padding=2), nn.BatchNorm2d(c), nn.ReLU()),
        "maxpool": nn.MaxPool2d(3, stride=1, padding=1),
    }


class Net(ModelSpace):
    def __init__(self, width: int = 16):
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(3, width, 3, padding=1), nn.BatchNorm2d(width), nn.ReLU()
        )
        self.layer1 = LayerChoice(ops(width), label="layer1")
        self.layer2 = LayerChoice(ops(width), label="layer2")
        self.skip = InputChoice(3, 1, label="skip")  # stem, layer1 or layer2 output
        self.head = nn.Linear(width, 10)

    def forward(self, x):  # x: [B, 3, 32, 32]
        s = self.stem(x)
        h1 = self.layer1(s)
        h2 = self.layer2(h1)
        h = h2 + self.skip([s, h1, h2])
        return self.head(F.adaptive_avg_pool2d(h, 1).flatten(1))  # [B, 10]


# %% [markdown]
# ## 2. The algorithm: a mutator
# A mutator decides, per choice, what runs. In ``mode='mixture'`` a decision is a weight per
# candidate and every candidate runs (DARTS); in ``mode='path'`` it is a boolean mask (one path
# runs; see ``RandomMutator``). Our DARTS mutator keeps one learnable vector (alpha) per choice
# and decides ``softmax(alpha)``; its export takes the strongest candidate.


# %%
class DartsMutator(Mutator):
    def __init__(self, model: nn.Module):
        super().__init__(model, mode="mixture")
        # one alpha per decision (mutables: the choices, each with its candidates)
        self.alphas = nn.ParameterDict(
            {m.key: nn.Parameter(1e-3 * torch.randn(len(m))) for m in self.mutables}
        )

    def sample_search(self):  # during search: the mixture weights
        return {key: alpha.softmax(-1) for key, alpha in self.alphas.items()}

    def sample_final(self):  # for export: the weights (export keeps the strongest)
        return {key: alpha.detach().softmax(-1) for key, alpha in self.alphas.items()}


# %% [markdown]
# ## 3. The training loop: plain PyTorch
# DARTS alternates two steps: the model's weights on a training batch, the architecture (the
# mutator's alphas) on a validation batch. ``mutator.reset()`` before each forward applies the
# current decisions. This is first-order DARTS (no unrolled second-order gradient).

# %%
if FAST:  # a few hundred test-split images (quick to decode), a narrow net, one epoch
    data = cifar10("test")
    train_data, val_data = Subset(data, range(0, 128)), Subset(data, range(128, 256))
    width, epochs = 8, 1
else:
    data = cifar10("train")
    train_data, val_data = Subset(data, range(0, 5000)), Subset(data, range(5000, 10000))
    width, epochs = 16, 3
train_loader = DataLoader(train_data, batch_size=64, shuffle=True)
val_loader = DataLoader(val_data, batch_size=64, shuffle=True)

model = Net(width)
mutator = DartsMutator(model)
w_optim = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=3e-4)
a_optim = torch.optim.Adam(mutator.parameters(), lr=3e-3, betas=(0.5, 0.999), weight_decay=1e-3)
history = [mutator.sample_final()]  # softmax(alpha) of every choice: at the start, after each step

for epoch in range(epochs):
    model.train()
    for (x, y), (x_val, y_val) in zip(train_loader, val_loader):
        # architecture step, on validation data
        a_optim.zero_grad()
        mutator.reset()
        F.cross_entropy(model(x_val), y_val).backward()
        a_optim.step()
        history.append(mutator.sample_final())
        # weight step, on training data
        w_optim.zero_grad()
        mutator.reset()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 5.0)
        w_optim.step()
    print(f"epoch {epoch}: train loss {loss.item():.3f}")

print(
    "layer1 weights:",
    {
        m: round(float(w), 3)
        for m, w in zip(mutator.mutables[0].candidates, mutator.sample_final()["layer1"])
    },
)

# %% [markdown]
# How the decisions moved: the mutator's weight (softmax of alpha) of each candidate after every
# architecture step, recorded in the loop above. The export keeps the candidate on top at the
# end. (The fast mode's smoke run takes two steps: its lines barely leave 1/3.)


# %%
def weights_figure():
    """One panel per choice, a line per candidate: a closed matplotlib figure."""
    import matplotlib.pyplot as plt

    names = {"skip": ["stem", "layer1", "layer2"]}  # the skip's candidates are input indices
    fig, axes = plt.subplots(1, len(mutator.mutables), figsize=(7, 2.8), sharey=True)
    plt.close(fig)  # nothing pops up: show() below displays it
    for ax, m in zip(axes, mutator.mutables, strict=True):
        for j, candidate in enumerate(names.get(m.key, m.candidates)):
            ax.plot([float(weights[m.key][j]) for weights in history], label=str(candidate))
        ax.set_title(m.key, fontsize=10)
        ax.set_xlabel("architecture step")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="best")
    low = min(float(w.min()) for weights in history for w in weights.values())
    high = max(float(w.max()) for weights in history for w in weights.values())
    axes[0].set_ylim(min(low, 0.2) - 0.02, max(high, 0.5) + 0.02)  # 1/3 each at the start
    axes[0].set_ylabel("weight (softmax of alpha)")
    fig.suptitle("The DARTS mutator's weights during the search", fontsize=11)
    fig.tight_layout()
    return fig


try:
    from nasx.plot import show

    saved = show(
        weights_figure(),
        os.path.join(tempfile.mkdtemp(prefix="nasx_custom_oneshot_"), "arch_weights.png"),
    )
    print(f"figure of the architecture weights by step: {saved}")
except ImportError as e:  # matplotlib is the [plot] extra
    print(f"no figure: {e}")

# %% [markdown]
# ## 4. Export, rebuild, train the found model
# ``export()`` gives an arch dict (JSON-ready), the same format every nasx strategy exports.
# Rebuilt under ``model_context`` it is a plain model with no search machinery left.

# %%
arch = mutator.export()
print("exported arch:", arch)

with model_context(arch):
    final = Net(width)
optim = torch.optim.SGD(final.parameters(), lr=0.05, momentum=0.9, weight_decay=3e-4)
for _epoch in range(epochs):
    final.train()
    for x, y in train_loader:
        optim.zero_grad()
        F.cross_entropy(final(x), y).backward()
        optim.step()

final.eval()
with torch.no_grad():
    correct = sum(int((final(x).argmax(1) == y).sum()) for x, y in val_loader)
print(f"found model accuracy: {correct / len(val_data):.1%}")

# %% [markdown]
# ## 5. Any other rule is a few lines
# ``RandomMutator`` samples one path per step (single-path one-shot, SPOS). A mutator can also
# take over how one choice computes its output by overriding ``on_forward_layer_choice`` or
# ``on_forward_input_choice`` (NNI's hooks).

# %%
spos_model = Net(width)
spos = RandomMutator(spos_model, seed=0)
spos.reset()
print("a random path:", spos.export())
