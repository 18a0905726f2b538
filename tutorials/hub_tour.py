# %% [markdown]
# # A tour of the nasx hub: spaces to search in, searched models to reuse
#
# Runs on a laptop CPU in a few seconds: `PYTHONPATH=. python tutorials/hub_tour.py`.
# Nothing is downloaded.

# %%
import argparse

# The command line first, so that `--help` answers before the imports that take seconds.
# ruff: noqa: E402
parser = argparse.ArgumentParser(
    description="A tour of the nasx hub: spaces to search in, searched models to reuse.\n"
    "Runs in a few seconds on a laptop CPU; nothing is downloaded and no data is read.",
    allow_abbrev=False,
)
args, _ = parser.parse_known_args()  # known only: a notebook kernel passes arguments of its own

import torch

from nasx.hub import (
    DARTS,
    MnasNet,
    NasBench201,
    SpineNet,
    arch_to_genotype,
    available_models,
    genotype_to_arch,
    load_searched_model,
    nb201_string_to_arch,
)
from nasx.hub.searched_archs import DARTS_V2
from nasx.profiler import count_macs, count_parameters
from nasx.space import model_context, search_space

# %% [markdown]
# ## 1. A space is a module; its decisions are a dict of choices
# The DARTS space uses NNI's labels, so archs move between NNI and nasx unchanged.

# %%
space = DARTS(width=(16, 24, 32), num_cells=(4, 8))
choices = search_space(space)
print(len(choices), "decisions, e.g.", choices["normal/op_2_0"])
arch = choices.sample(seed=0)
model = space.freeze(arch)  # a plain nn.Module, no search machinery left
print("sampled model:", count_parameters(model), "parameters")

# %% [markdown]
# ## 2. Genotypes (DARTS's notation) and archs are interchangeable

# %%
arch = genotype_to_arch(DARTS_V2)
assert arch_to_genotype(arch) == DARTS_V2
print("DARTS-V2 reduce/op_3_0:", arch["reduce/op_3_0"], arch["reduce/input_3_0"])

# %% [markdown]
# ## 3. Searched models at their published size

# %%
print("available:", ", ".join(available_models()))
darts_v2 = load_searched_model(
    "darts-v2"
)  # pretrained=True would read verified weights from the cache
print(
    "DARTS-V2 (CIFAR, 36 channels, 20 cells):", count_parameters(darts_v2), "parameters"
)  # 3,349,342

# %% [markdown]
# ## 4. Pictures of cells: a pre-searched arch and one from the space
# A searched arch plots the same way: `plot_double_cells(exp.export_top_models()[0])`.
# `plot_double_cells` draws the normal and reduction cells side by side (graphviz's layout, or
# matplotlib alone with one warning when graphviz's `dot` is missing); `plot_cell` returns a
# graphviz graph that shows inline in Jupyter and renders to PNG, SVG or PDF.

# %%
import tempfile  # noqa: E402
from pathlib import Path  # noqa: E402

from nasx.plot import plot_double_cells, show  # noqa: E402

pictures = Path(tempfile.mkdtemp(prefix="nasx-cells-"))
show(plot_double_cells(DARTS_V2), pictures / "darts_v2.png", dpi=70)  # pre-searched (a genotype)
sampled = choices.sample(seed=0)  # any arch dict of the space, e.g. an exported one
show(plot_double_cells(sampled), pictures / "sampled.png", dpi=70)
print("cell pictures:", sorted(p.name for p in pictures.iterdir()), "in", pictures)

# %% [markdown]
# ## 5. NAS-Bench-201: the benchmark's strings are archs

# %%
best = "|nor_conv_3x3~0|+|nor_conv_3x3~0|nor_conv_3x3~1|+|skip_connect~0|nor_conv_3x3~1|nor_conv_3x3~2|"
with model_context(nb201_string_to_arch(best)):
    nb201 = NasBench201(stem_out_channels=8, num_modules_per_stack=1)
print("NB201 logits:", tuple(nb201(torch.randn(2, 3, 32, 32)).shape))

# %% [markdown]
# ## 6. MnasNet and SpineNet: Vertex AI's spaces, with their published archs

# %%
a1 = load_searched_model("mnasnet-a1")
print(
    f"MnasNet-A1: {count_parameters(a1) / 1e6:.2f}M params, "
    f"{count_macs(a1, (3, 224, 224)) / 1e6:.0f}M MACs"
)  # paper: 3.9M, 312M
print("MnasNet space decisions:", len(search_space(MnasNet())))

backbone = load_searched_model("spinenet-49s").eval()
features = backbone(torch.randn(1, 3, 128, 128))
print("SpineNet-49S levels:", {k: tuple(v.shape[1:]) for k, v in features.items()})
print("SpineNet space decisions:", len(search_space(SpineNet())))
# torchvision.models.detection.RetinaNet(backbone, num_classes=91) turns it into a detector.
