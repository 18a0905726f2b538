"""A smaller language model from a trained one: train a byte-level GPT on the Python standard
library's source, prune it to about half its parameters with Minitron's importance, distill it
from the parent's logits, pick the best candidate, and save it as a Hugging Face GPT-2.

Run it with ``python tutorials/language_model.py`` (a few minutes on a CPU), or ``NASX_FAST=1``
for a smoke run of seconds. No download: the text is this interpreter's own standard library.
"""
# %% [markdown]
# # Prune and distill a language model
#
# Minitron (NVIDIA, 2024) derives a small model from a trained one instead of training it from
# scratch: rank embedding channels, attention heads, MLP neurons and whole layers by their
# activations on a few calibration batches, keep the most important ones for a smaller
# architecture, then train the pruned model to match the parent's next-token distribution.

# %%
import argparse
import os

# The command line first, so that `--help` answers before the imports that take seconds.
# ruff: noqa: E402
parser = argparse.ArgumentParser(
    description="Prune and distill a language model: train a byte-level GPT on the Python\n"
    "standard library's source, prune it to about half its parameters with Minitron's\n"
    "importance, distill it from the parent's logits, and save it as a Hugging Face GPT-2.",
    epilog="""environment:
  NASX_FAST=1     a smoke run of seconds whose numbers mean nothing (same as --fast)

data: the .py files of this interpreter's own standard library (nothing is downloaded).""",
    formatter_class=argparse.RawDescriptionHelpFormatter,
    allow_abbrev=False,  # a kernel's `--f=...` must not read as --fast
)
parser.add_argument("--fast", action="store_true", help="smoke run (same as NASX_FAST=1)")
args, _ = parser.parse_known_args()  # known only: a notebook kernel passes arguments of its own
FAST = args.fast or os.environ.get("NASX_FAST") == "1"

import tempfile

import torch
from torch.utils.data import DataLoader

from nasx.datasets.text import stdlib_text
from nasx.hub.gpt import GPTSpace, largest_arch
from nasx.lm import distill, evaluate_loss, prune_search, train
from nasx.space import search_space

torch.manual_seed(0)
BLOCK = 32 if FAST else 64

# %% [markdown]
# ## Data: bytes of the standard library, split by file

# %%
train_set = stdlib_text("train", BLOCK, max_bytes=200_000 if FAST else 5_000_000)
val_set = stdlib_text("validation", BLOCK, max_bytes=50_000)
loader = DataLoader(train_set, batch_size=8, shuffle=True)
val = list(DataLoader(val_set, batch_size=32))[: 2 if FAST else 8]
calibration = list(DataLoader(train_set, batch_size=8))[:4]

# %% [markdown]
# ## The space and the parent (its largest model), trained on the labels

# %%
space = GPTSpace(
    vocab_size=256,
    block_size=BLOCK,
    search_embed_dim=(32, 48, 64) if FAST else (96, 128, 192),
    search_depth=(2, 3),
    search_num_heads=(1, 2) if FAST else (2, 3),
    search_mlp_ratio=(2.0, 4.0),
    head_dim=16 if FAST else 32,
)
parent = space.freeze(largest_arch(search_space(space)))
train(parent, loader, steps=20 if FAST else 600, lr=2e-3)
n_parent = sum(p.numel() for p in parent.parameters())
parent_loss = evaluate_loss(parent, val)
print(f"parent: {n_parent} parameters, validation loss {parent_loss:.3f}")

# %% [markdown]
# ## Prune to half, distill each candidate briefly, rank
#
# `prune_search` computes importance on the calibration batches, prunes every uniform candidate
# of the space near the target, distills each for `distill_steps` and ranks them.

# %%
ranked = prune_search(
    parent,
    space,
    calibration,
    loader,
    val,
    target_params=n_parent // 2,
    tolerance=0.25,
    max_candidates=2 if FAST else 4,
    distill_steps=5 if FAST else 50,
)
for c in ranked:
    print(f"{c.params} params: {c.loss_pruned:.3f} pruned -> {c.loss_distilled:.3f} distilled")
best = ranked[0]
distill(best.model, parent, loader, steps=5 if FAST else 200)
best_loss = evaluate_loss(best.model, val)
print(f"best child {best.arch}: validation loss {best_loss:.3f}")

# %% [markdown]
# The candidates, drawn: each one's size and validation loss right after pruning (hollow) and
# after its short distillation (filled; `#1` is the best ranked), the parent they came from (star)
# and the best child after its longer final distillation (diamond). Lower is better.


# %%
def candidates_figure():
    """Parameters against validation loss, a point per model: a closed matplotlib figure."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    plt.close(fig)  # nothing pops up: show() below displays it
    k = [c.params / 1e3 for c in ranked]  # thousands of parameters
    for rank, (x, c) in enumerate(zip(k, ranked, strict=True), 1):
        arrow = {"arrowstyle": "->", "color": "tab:blue", "shrinkA": 5, "shrinkB": 5}
        ax.annotate("", (x, c.loss_distilled), (x, c.loss_pruned), arrowprops=arrow)
        ax.annotate(f"#{rank}", (x, c.loss_distilled), (6, -3), textcoords="offset points")
    pruned, distilled = [c.loss_pruned for c in ranked], [c.loss_distilled for c in ranked]
    ax.scatter(k, pruned, s=50, facecolors="none", edgecolors="tab:blue", label="pruned")
    ax.scatter(k, distilled, s=50, color="tab:blue", label="pruned, then distilled briefly")
    ax.scatter(
        best.params / 1e3,
        best_loss,
        s=70,
        marker="D",
        color="tab:orange",
        label="#1 distilled longer",
    )
    ax.scatter(n_parent / 1e3, parent_loss, s=200, marker="*", color="black", label="parent")
    ax.axvline(n_parent / 2e3, color="grey", ls="--", lw=1, label="target: half the parent")
    ax.set_xlabel("parameters (thousands)")
    ax.set_ylabel("validation loss (nats per byte)")
    ax.set_title("Children pruned from the parent: size against validation loss", fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="best")
    fig.tight_layout()
    return fig


try:
    from nasx.plot import show

    figure_dir = tempfile.mkdtemp(prefix="nasx_language_model_")
    saved = show(candidates_figure(), os.path.join(figure_dir, "candidates.png"))
    print(f"figure of the candidates (parameters against validation loss): {saved}")
except ImportError as e:  # matplotlib is the [plot] extra
    print(f"no figure: {e}")

# %% [markdown]
# ## Out as a Hugging Face GPT-2 (when the child's heads fill its embedding)

# %%
from nasx.lm.hf import to_hf  # noqa: E402

try:
    hf_model = to_hf(best.model)
except ValueError as err:  # GPT-2 needs heads * head_dim == embed_dim and uniform layers
    print(f"not a GPT-2 shape: {err}")
else:
    out = tempfile.mkdtemp()
    hf_model.save_pretrained(out)
    print(
        f"saved a GPT-2 of {hf_model.config.n_embd} wide, {hf_model.config.n_layer} layers to {out}"
    )
