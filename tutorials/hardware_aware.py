"""Hardware-aware NAS: search the MnasNet space for accuracy under a latency target, look at the
Pareto front, train the best three archs fully (stage 2), export the winner for serving, then
search the same space one-shot (Proxyless with an expected-latency penalty, RandomOneShot with a
latency range).

Run it with ``python tutorials/hardware_aware.py`` (CIFAR-10 at 32x32 from ``../shared/data``, or
a copy in nasx's cache: ``cifar10('train', download=True)`` fetches one; random images when it is
absent), or ``NASX_FAST=1`` for a smoke run of seconds. ``NASX_SHORT=1``
is a short real run (about half an hour on one CPU core): 2,000 training images, 6 search trials,
stage 2 of 3 epochs, one-shot searches of 2 epochs (its results:
``benchmarks/hardware_aware_tutorial.results.md``).
"""
# %% [markdown]
# # Hardware-aware search, the MnasNet way
#
# MnasNet ranks an arch by `acc * (latency / target) ** -0.07`: a model twice as slow as the
# target must be about 5% more accurate to tie. Latency comes from a per-block lookup table
# measured once on this machine (ProxylessNAS/FBNet style), so trials need no timing runs.

# %%
import argparse
import os

# The command line first, so that `--help` answers before the imports that take seconds.
parser = argparse.ArgumentParser(
    description="Hardware-aware search, the MnasNet way: search the MnasNet space for accuracy\n"
    "under a latency target, look at the Pareto front, train the best three archs fully, export\n"
    "the winner for serving, then search the same space one-shot (Proxyless, RandomOneShot).",
    epilog="""environment:
  NASX_FAST=1     a smoke run of seconds whose numbers mean nothing (same as --fast)
  NASX_SHORT=1    a short real run (about half an hour on one CPU core): 2,000 training
                  images, 6 search trials, stage 2 of 3 epochs, one-shot searches of 2 epochs
  NASX_DATA_DIR   a folder holding cifar10/

data: CIFAR-10, from $NASX_DATA_DIR/cifar10 or ../shared/data/cifar10 (cifar10_jpg.tar.gz
beside cifar10_labels_canonical.npz), else a copy downloaded earlier into nasx's cache; random
images stand in when there is none (the script says so; its accuracies then mean nothing). To
fetch the official archive (170 MB) into the cache once:
  python -c "from nasx.datasets import cifar10; cifar10('train', download=True)"
""",
    formatter_class=argparse.RawDescriptionHelpFormatter,
    allow_abbrev=False,  # a kernel's `--f=...` must not read as --fast
)
parser.add_argument("--fast", action="store_true", help="smoke run (same as NASX_FAST=1)")
args, _ = parser.parse_known_args()  # known only: a notebook kernel passes arguments of its own

import logging  # noqa: E402
import statistics  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import matplotlib  # noqa: E402

matplotlib.use("Agg")
import torch  # noqa: E402
from torch.utils.data import DataLoader, Subset, TensorDataset  # noqa: E402

from nasx.datasets import DataNotFoundError, cifar10  # noqa: E402
from nasx.evaluator import Classification  # noqa: E402
from nasx.evaluator.cost import CostEvaluator  # noqa: E402
from nasx.experiment import CostFilter, NasExperiment, export_front, stage2  # noqa: E402
from nasx.hardware import LatencyTable, MnasNetReward, arch_cost  # noqa: E402
from nasx.hub.mnasnet import MnasLayer, MnasNet  # noqa: E402
from nasx.plot import plot_pareto, show  # noqa: E402
from nasx.serving import export_for_serving  # noqa: E402
from nasx.space import search_space  # noqa: E402
from nasx.strategy import Proxyless, RandomOneShot, RegularizedEvolution  # noqa: E402
from nasx.strategy.oneshot.cost import ArchCostRange, CostPenalty  # noqa: E402

FAST = args.fast or os.environ.get("NASX_FAST") == "1"
SHORT = not FAST and os.environ.get("NASX_SHORT") == "1"
logging.getLogger("pytorch_lightning").setLevel(logging.WARNING)
logging.getLogger("lightning").setLevel(logging.WARNING)
torch.manual_seed(0)
WORK = Path(tempfile.mkdtemp(prefix="nasx_hw_")) if FAST else Path("nasx_experiments")
SHAPE = (3, 32, 32)
print(
    "FAST smoke run: the numbers below mean nothing"
    if FAST
    else "short run"
    if SHORT
    else "full run"
)

# %% [markdown]
# ## Data: CIFAR-10 at 32x32 (random images when it is not installed)
#
# Read from `$NASX_DATA_DIR/cifar10` or `../shared/data/cifar10`, else from nasx's cache, where
# `nasx.datasets.cifar10('train', download=True)` puts the official archive once.

# %%
try:
    train_set, val_set = cifar10("train"), cifar10("test")
    data_name = "CIFAR-10"
except DataNotFoundError:
    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(512, *SHAPE, generator=g), torch.randint(0, 10, (512,), generator=g)
    train_set, val_set = TensorDataset(x, y), TensorDataset(x[:128], y[:128])
    data_name = "random images"
n_train, n_val = (256, 128) if FAST else (2_000, 1_000) if SHORT else (10_000, 2_000)
train_set = Subset(train_set, range(min(n_train, len(train_set))))
val_set = Subset(val_set, range(min(n_val, len(val_set))))
print(f"data: {data_name}, {len(train_set)} training and {len(val_set)} validation images")


def classification(epochs: int) -> Classification:
    return Classification(
        learning_rate=2e-3,
        train_dataloaders=DataLoader(train_set, batch_size=64, shuffle=True),
        val_dataloaders=DataLoader(val_set, batch_size=128),
        max_epochs=epochs,
        limit_train_batches=2 if FAST else 1.0,
        accelerator="cpu",
        enable_progress_bar=False,
    )


# %% [markdown]
# ## Cost without training: MACs on the meta device, latency from a lookup table
#
# The table times each distinct MnasNet layer (at the input shape it gets) once on this CPU with
# one thread; a model's prediction is the sum of its layers' entries, calibrated on a few archs
# measured whole.

# %%
space = MnasNet(num_classes=10)
ss = search_space(space)
table = LatencyTable(block_types=(MnasLayer,), warmup=1 if FAST else 5, repeats=3 if FAST else 20)
sample = [ss.sample(seed=i) for i in range(8 if FAST else 100)]
start = time.monotonic()
costs = [arch_cost(space, a, SHAPE, latency=table) for a in sample]
print(
    f"priced {len(sample)} archs in {time.monotonic() - start:.1f} s "
    f"({len(table)} layers measured once)"
)
# A sum of layers timed alone runs low against the whole model (cold caches, dispatch between
# layers): fit `measured = scale * sum + offset` on a few archs timed whole, then re-price.
scale, offset = table.calibrate(space, sample[:3] if FAST else sample[:8], SHAPE)
costs = [arch_cost(space, a, SHAPE, latency=table) for a in sample]
print(f"calibrated: latency = {scale:.2f} * (sum of layers) + {offset:.2f} ms")
latencies = sorted(c.latency_ms for c in costs)
target = statistics.median(latencies)  # about half of the space meets it
max_macs = sorted(c.macs for c in costs)[int(0.9 * (len(costs) - 1))]
print(f"latency target {target:.2f} ms (the sample's median); MAC cap {max_macs / 1e6:.1f} M")

# %% [markdown]
# ## Stage 1: multi-trial search ranked by the MnasNet reward
#
# `CostEvaluator` keeps accuracy, params, MACs, FLOPs and latency side by side in each trial;
# `CostFilter` rejects the heaviest archs before they are trained.

# %%
search = NasExperiment(
    space,
    CostEvaluator(classification(1), SHAPE, latency=table, objective=MnasNetReward(target, "soft")),
    RegularizedEvolution(population_size=4, sample_size=2, seed=0),
    workdir=WORK / "mnasnet-hw-search",
    max_trials=3 if FAST else 6 if SHORT else 24,
    filter=CostFilter(SHAPE, macs=(None, max_macs), patience=20),
    overwrite=True,
    progress=False,
)
search.run()
print(f"search: {search.stop_reason}")
for t in search.trials("succeeded"):
    m = t.metrics
    print(
        f"trial {t.id}: reward {t.metric:.4f} accuracy {m['accuracy']:.3f} "
        f"latency {m['latency_ms']:.2f} ms, {m['macs'] / 1e6:.1f} M MACs"
    )
print(f"rejected before training: {len(search.trials('rejected'))}")

# %% [markdown]
# ## The Pareto front of accuracy and latency

# %%
front = search.pareto_front(["accuracy", "-latency_ms"])
print(f"Pareto front: trials {[t.id for t in front]}")
export_front(search.trials(), ["accuracy", "-latency_ms"], WORK / "front.csv")
fig = plot_pareto(search, "latency_ms", "accuracy")
print(f"the front drawn to {show(fig, WORK / 'pareto.png')}")
top = search.export_top_models(3)
hits = sum(arch_cost(space, a, SHAPE, latency=table).latency_ms <= target for a in top)
print(f"latency hit rate of the top {len(top)}: {hits}/{len(top)} under {target:.2f} ms")

# %% [markdown]
# ## Stage 2: the top 3 trained longer, as a second experiment that records their origin

# %%
full = stage2(
    search,
    CostEvaluator(classification(1 if FAST else 3 if SHORT else 10), SHAPE, latency=table),
    top_k=3,
    seeds=1,
    workdir=WORK / "mnasnet-hw-full",
    overwrite=True,
    progress=False,
)
for t in full.trials("succeeded"):
    print(
        f"stage 2 trial {t.id} (search trial {int(t.metrics['source_trial'])}): "
        f"accuracy {t.metrics['accuracy']:.3f}, latency {t.metrics['latency_ms']:.2f} ms"
    )

# %% [markdown]
# ## Export the winner for serving: probabilities and class id

# %%
best = full.export_top_models(1, formatter="instance")[0]
path = export_for_serving(best, SHAPE, WORK / "best.pt2")
images, labels = zip(*(val_set[i] for i in range(2)))  # two validation images and their labels
probs, ids = torch.export.load(str(path)).module()(torch.stack(images))
print(
    f"exported {path.name}: probabilities {tuple(probs.shape)}, class ids {ids.tolist()} "
    f"(labels {[int(y) for y in labels]})"
)

# %% [markdown]
# ## One-shot: the same space with shared weights and the latency in the loss
#
# One supernet holds every arch of the space (convolutions sliced from the widest kernel and
# width), so one training replaces many. Proxyless adds the table's *expected* latency under
# its architecture distribution to the architecture loss (`CostPenalty`: per-choice latency
# differences from the default arch, a hinge at the target: no pull once under it), as
# ProxylessNAS does. RandomOneShot (SPOS) trains and then searches only archs the predictor puts
# under the target (`ArchCostRange` as its `filter`). The latency hit rate is the share of
# exported archs meeting the target.

# %%
start = time.monotonic()
penalty = CostPenalty.from_space(
    space, SHAPE, "latency_ms", latency=table, target=target, mode="hinge", weight=2.0
)
print(
    f"latency penalty: {sum(len(v) for v in penalty.table.values())} per-choice costs, "
    f"default arch {penalty.base:.2f} ms ({time.monotonic() - start:.1f} s)"
)
under_target = ArchCostRange(space, SHAPE, latency_ms=(None, target), latency=table)
oneshot = {
    "Proxyless + latency penalty": Proxyless(
        arc_learning_rate=1e-2, cost_fn=penalty, penalty_weight=1.0
    ),
    "RandomOneShot + latency range": RandomOneShot(
        num_samples=2 if FAST else 8 if SHORT else 20,
        eval_batches=1 if FAST else 4,
        filter=under_target,
    ),
}
for name, strategy in oneshot.items():
    start = time.monotonic()
    strategy.run(space, classification(1 if FAST else 2 if SHORT else 5))
    archs = strategy.export_top_models(top_k=1 if FAST else 3)
    ms = [arch_cost(space, a, SHAPE, latency=table).latency_ms for a in archs]
    hits = sum(m <= target for m in ms)
    print(
        f"{name}: {time.monotonic() - start:.0f} s, exported {len(archs)} arch(s) at "
        f"{', '.join(f'{m:.2f}' for m in ms)} ms predicted; latency hit rate {hits}/{len(archs)}"
    )
