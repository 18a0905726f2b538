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


def tiny_darts(workdir: Path):
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
    return exp


def dashboard_screenshot(workdirs: list[Path], path: Path, query: str) -> None:
    """Serve the experiments and take a screenshot with headless Chromium (skipped without it)."""
    import shutil
    import subprocess
    import threading

    from nasx.dashboard.server import make_server

    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        print("no chromium: skipping the dashboard screenshot")
        return
    srv = make_server(workdirs, port=0)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    with tempfile.TemporaryDirectory() as profile:
        subprocess.run(
            [
                chromium,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--no-first-run",
                f"--user-data-dir={profile}",
                "--window-size=1300,1250",
                "--virtual-time-budget=8000",
                "--hide-scrollbars",
                f"--screenshot={path}",
                f"http://127.0.0.1:{srv.server_address[1]}/{query}",
            ],
            check=True,
            capture_output=True,
        )
    srv.shutdown()


def shrink(path: Path, width: int | None = None) -> None:
    """A smaller PNG (128 colours, optionally resized): keeps the repository light."""
    from PIL import Image

    if not path.exists():
        return
    img = Image.open(path).convert("RGB")
    if width is not None:
        img = img.resize((width, round(img.height * width / img.width)), Image.LANCZOS)
    img.quantize(colors=128, method=Image.Quantize.MEDIANCUT).save(path, optimize=True)


def main() -> None:
    from nasx.hub import nb201_string_to_arch
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
    nb201 = nb201_string_to_arch(
        "|nor_conv_3x3~0|+|nor_conv_3x3~0|avg_pool_3x3~1|+|skip_connect~0|none~1|nor_conv_1x1~2|"
    )
    plot_cell(nb201, backend="matplotlib").savefig(HERE / "nb201_cell.png", dpi=DPI)
    plot_cell(DARTS_V2, "normal").render(outfile=HERE / "darts_v2_normal.svg", cleanup=True)
    darts = tiny_darts(tmp / "darts")
    plot_double_cells(darts.export_top_models()[0]).savefig(HERE / "searched_cells.png", dpi=DPI)
    plot_arch_weights(darts.workdir, max_labels=4).savefig(HERE / "arch_weights.png", dpi=DPI)
    best = exp.export_top_models(top_k=1)[0]
    best_id = next(t.id for t in exp.trials("succeeded") if t.arch == best)
    dashboard_screenshot([exp.workdir], HERE / "dashboard.png", f"?exp=0&trial={best_id}")
    shrink(HERE / "dashboard.png", width=900)
    for png in HERE.glob("*.png"):
        if png.name != "dashboard.png":
            shrink(png)
    print("wrote", sorted(p.name for p in HERE.iterdir() if p.suffix in (".png", ".svg")))


if __name__ == "__main__":
    main()
