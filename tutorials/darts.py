"""Tutorial: the DARTS journey on CIFAR-10: evaluate the pre-searched DARTS-V2, search a cell,
export it, draw it, rebuild it, and retrain it with the DARTS recipe.

NNI's "Searching in DARTS search space" tutorial in nasx names. Run ``python tutorials/darts.py``
(a small search, tens of minutes on a laptop CPU) or ``NASX_FAST=1 python tutorials/darts.py``
(``--fast`` works too; seconds: a few hundred images, tiny widths; what the test suite runs). Needs CIFAR-10 under
``../shared/data`` or ``$NASX_DATA_DIR`` (see ``nasx.datasets``), or a copy in nasx's cache:
``python -c "from nasx.datasets import cifar10; cifar10('train', download=True)"`` fetches the
official archive (170 MB) once. ``--help`` lists the options.
"""
# %% [markdown]
# ## 1. Data
# DARTS trains weights on one half of the training set and the architecture on the other. Give
# only training data and the strategy splits it 50/50 (and says so in a warning).

# %%
import argparse
import os

# The command line first, so that `--help` answers before the imports that take seconds.
# ruff: noqa: E402
parser = argparse.ArgumentParser(
    description="The DARTS journey on CIFAR-10: evaluate the pre-searched DARTS-V2, search a\n"
    "cell, export it, draw it, rebuild it, and retrain it with the DARTS recipe.",
    epilog="""environment:
  NASX_FAST=1     a smoke run of seconds whose numbers mean nothing (same as --fast)
  NASX_DATA_DIR   a folder holding cifar10/
  NASX_CACHE_DIR  nasx's cache (default ~/.cache/nasx): downloaded data, pretrained weights

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

import dataclasses
import tempfile

import torch
from torch.utils.data import DataLoader, Subset

from nasx.datasets import cifar10
from nasx.evaluator import Classification, darts_retrain_evaluator, darts_train_transform
from nasx.evaluator.recipes import DartsRecipe
from nasx.hub import DARTS as DartsSpace
from nasx.plot import plot_double_cells, show
from nasx.space import model_context
from nasx.strategy import DARTS

torch.manual_seed(0)

# Retraining data is augmented as DARTS does: crop, flip and Cutout (nasx.evaluator.augment).
augmented = darts_train_transform(cutout_length=16)
if FAST:  # the (smaller, quicker to decode) test split, a few hundred images
    data = cifar10("test")
    search_data, retrain_data, eval_data = (
        Subset(data, range(128)),
        Subset(cifar10("test", transform=augmented), range(128, 256)),
        Subset(data, range(256, 384)),
    )
    config = dict(width=4, num_cells=3)
    final_config = config
    search_epochs, retrain_epochs, batch_size = 1, 1, 64
else:
    train, test = cifar10("train"), cifar10("test")
    search_data, eval_data = Subset(train, range(10_000)), test
    retrain_data = cifar10("train", transform=augmented)
    config = dict(width=8, num_cells=5)
    final_config = dict(width=16, num_cells=8)
    search_epochs, retrain_epochs, batch_size = 3, 5, 64

search_loader = DataLoader(search_data, batch_size=batch_size, shuffle=True)
eval_loader = DataLoader(eval_data, batch_size=256)

# %% [markdown]
# ## 1b. The journey could end here: a pre-searched model
# The hub has the published DARTS-V2 cell at its published size (20 cells, 36 channels). With
# ``pretrained=True`` it loads trained weights from the cache (``$NASX_CACHE_DIR/hub``; a URL
# configured with ``nasx.hub.configure_weights`` downloads them). Without weights we say so and
# skip the evaluation: an untrained network scores 10%, which would mean nothing.


# %%
def evaluate_model(model: torch.nn.Module, loader: DataLoader) -> float:
    device = "cuda" if torch.cuda.is_available() else "cpu"
    model.to(device).eval()
    correct = total = 0
    with torch.no_grad():
        for x, y in loader:
            correct += int((model(x.to(device)).argmax(1) == y.to(device)).sum())
            total += len(y)
    return correct / total


try:
    darts_v2 = DartsSpace.load_searched_model("darts-v2", pretrained=True, download=True)
except FileNotFoundError as missing:
    print(f"pre-searched DARTS-V2: no trained weights here, evaluation skipped ({missing})")
else:
    print(f"pre-searched DARTS-V2 accuracy: {evaluate_model(darts_v2, eval_loader):.2%}")

# %% [markdown]
# ## 2. Space, evaluator, strategy
# The model space is the hub's DARTS space (NNI's labels: ``normal/op_2_0``, ``normal/input_2_0``,
# ...): normal and reduction cells whose edges choose among the seven DARTS operations. Fixed
# ``width`` and ``num_cells`` (ints, not tuples) make it a cell-only space, as one-shot search
# needs. The Lightning evaluator brings the loss, metric and weight optimizer; DARTS brings the
# architecture optimizer.

# %%
space = DartsSpace(**config)
evaluator = Classification(
    learning_rate=1e-3,
    weight_decay=3e-4,
    train_dataloaders=search_loader,
    max_epochs=search_epochs,
    accelerator="auto",
    devices=1,
    enable_progress_bar=True,  # one bar per epoch while the supernet trains
)
strategy = DARTS(arc_learning_rate=3e-4, gradient_clip_val=5.0)

# %% [markdown]
# ## 3. Search
# ``NasExperiment(space, evaluator, strategy).run()`` runs a one-shot strategy through
# ``strategy.run(space, evaluator)``; without the experiment module we call that directly.

# %%
try:
    from nasx.experiment import NasExperiment
except ImportError:
    NasExperiment = None

if NasExperiment is not None:
    # The experiment directory holds the supernet checkpoints and nasx.db (the exported archs);
    # resume=True: a rerun of this script trains on from the last checkpoint.
    workdir = tempfile.mkdtemp(prefix="nasx_darts_") if FAST else "nasx_experiments/darts_tutorial"
    experiment = NasExperiment(space, evaluator, strategy, workdir=workdir, resume=True)
    experiment.run()
    exported_arch = experiment.export_top_models(formatter="dict")[0]
else:
    strategy.run(space, evaluator)
    exported_arch = strategy.export_top_models(top_k=1)[0]
print("exported arch:", exported_arch)
print("normal/op_2_0 weights:", strategy.export_probs()["normal/op_2_0"])

# %% [markdown]
# The found cells, drawn (graphviz lays them out; without its `dot` program matplotlib draws them
# alone). `nasx.plot.show` saves the figure beside the experiment and, in a notebook, shows it.

# %%
figure = plot_double_cells(exported_arch)
cells_png = os.path.join(
    workdir if NasExperiment is not None else tempfile.gettempdir(), "cells.png"
)
show(figure, cells_png, dpi=80)  # in a notebook it also shows here
print(f"cells drawn to {cells_png}")

# %% [markdown]
# ## 4. Rebuild the found cell in a (bigger) network and retrain it with the DARTS recipe
# The recipe that takes a DARTS cell to ~97% (``nasx.evaluator.recipes.DartsRecipe``): SGD with
# momentum on a cosine schedule, an auxiliary head (loss weight 0.4), drop-path rising to 0.2,
# gradient clipping at 5, and Cutout on top of crop and flip, for 600 epochs at 20 cells x 36
# channels (a GPU for two days). Here the epochs and sizes are the tutorial's small ones.

# %%
recipe = dataclasses.replace(DartsRecipe(), max_epochs=retrain_epochs, batch_size=batch_size)
with model_context(exported_arch):
    final_model = DartsSpace(
        **final_config, auxiliary_loss=True, drop_path_prob=recipe.drop_path_prob
    )

retrain = darts_retrain_evaluator(
    DataLoader(retrain_data, batch_size=recipe.batch_size, shuffle=True),
    eval_loader,
    recipe=recipe,
    accelerator="auto",
    devices=1,
    enable_progress_bar=True,
)
accuracy = retrain.fit(final_model)  # NNI's evaluator.fit: trains final_model in place
smoke = " (FAST smoke run: 128 images, tiny network, so this number means nothing)" if FAST else ""
print(f"retrained accuracy: {accuracy:.2%} on {len(eval_data):,} CIFAR-10 images{smoke}")
