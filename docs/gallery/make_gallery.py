"""Regenerate the figures of docs/gallery (and the README's pictures) from small real runs.

    PYTHONPATH=. python docs/gallery/make_gallery.py        # about a minute on 2 CPU cores

A multi-trial search on a toy space (no data needed: the evaluator scores an arch with a known
formula and reports a short learning curve), a tiny DARTS run on random data for the architecture
weights, and the cells of DARTS-V2 with graphviz and with the matplotlib fallback.
"""

from __future__ import annotations

import math
import random
import sys
import tempfile
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

HERE = Path(__file__).resolve().parent
DPI = 70  # small PNGs keep the repository light


def toy_experiment(workdir: Path):
    import torch.nn as nn

    from nasx.experiment import NasExperiment
    from nasx.space import LayerChoice, ModelSpace, choice
    from nasx.strategy import RegularizedEvolution

    class Toy(ModelSpace):
        def __init__(self):
            super().__init__()
            width = choice("width", [8, 16, 32, 64])
            self.conv = LayerChoice(
                {
                    "conv3": nn.Conv2d(3, width, 3),
                    "conv5": nn.Conv2d(3, width, 5),
                    "pool": nn.MaxPool2d((3, 3)),
                },
                label="op",
            )
            self.depth = choice("depth", [1, 2, 3, 4])

    def evaluate(model, report):
        # A made-up but smooth landscape: wider and deeper is better and slower.
        width = getattr(model.conv, "out_channels", 4)
        kernel = getattr(model.conv, "kernel_size", (1, 1))[0]
        if width == 64 and model.depth == 4 and kernel == 5:
            raise MemoryError("simulated: the widest, deepest model runs out of memory")
        rng = random.Random(width * 100 + kernel * 10 + model.depth)
        acc = (
            0.6
            + 0.08 * math.log2(width / 4) / 4
            + 0.03 * model.depth
            + 0.01 * kernel
            + rng.gauss(0, 0.015)
        )
        for epoch in range(1, 7):
            report(acc * (1 - math.exp(-epoch / 1.8)))
        return {
            "default": acc,
            "latency_ms": width * model.depth * kernel / 20 + rng.uniform(0.5, 1.5),
        }

    exp = NasExperiment(
        Toy(),
        evaluate,
        RegularizedEvolution(population_size=8, sample_size=3, seed=1),
        workdir=workdir,
        max_trials=40,
    )
    exp.run()
    return exp


def tiny_darts(workdir: Path) -> Path:
    import torch
    from pytorch_lightning.loggers import CSVLogger
    from torch.utils.data import DataLoader, TensorDataset

    sys.path.insert(0, str(HERE.parents[1] / "tutorials"))
    from darts_space import DartsLikeSpace  # the tutorials' small DARTS-like space

    from nasx.evaluator import Classification
    from nasx.experiment import NasExperiment
    from nasx.strategy import DARTS

    g = torch.Generator().manual_seed(0)
    x = torch.randn(256, 3, 8, 8, generator=g)
    y = (x.mean((1, 2, 3)) > 0).long()
    data = DataLoader(TensorDataset(x, y), batch_size=32)
    ev = Classification(
        train_dataloaders=data,
        val_dataloaders=data,
        max_epochs=6,
        logger=CSVLogger(str(workdir)),
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    exp = NasExperiment(
        DartsLikeSpace(), ev, DARTS(arc_learning_rate=0.05, log_arch_every=2), workdir=workdir
    )
    exp.run()
    return workdir


def main() -> None:
    from nasx.hub.searched_archs import DARTS_V2
    from nasx.plot import (
        plot_arch_weights,
        plot_cell,
        plot_double_cells,
        plot_learning_curves,
        plot_metric_history,
        plot_pareto,
    )

    tmp = Path(tempfile.mkdtemp())
    exp = toy_experiment(tmp / "toy")
    plot_metric_history(exp).savefig(HERE / "metric_history.png", dpi=DPI)
    plot_pareto(exp, "latency_ms", "default").savefig(HERE / "pareto.png", dpi=DPI)
    plot_learning_curves(exp, top_k=5).savefig(HERE / "learning_curves.png", dpi=DPI)
    plot_double_cells(DARTS_V2).savefig(HERE / "darts_v2_cells.png", dpi=DPI)
    plot_double_cells(DARTS_V2, backend="matplotlib").savefig(
        HERE / "darts_v2_cells_matplotlib.png", dpi=DPI
    )
    plot_cell(DARTS_V2, "normal").render(outfile=HERE / "darts_v2_normal.svg", cleanup=True)
    darts_dir = tiny_darts(tmp / "darts")
    plot_arch_weights(darts_dir, max_labels=4).savefig(HERE / "arch_weights.png", dpi=DPI)
    print("wrote", sorted(p.name for p in HERE.iterdir() if p.suffix in (".png", ".svg")))


if __name__ == "__main__":
    main()
