"""Recompute the small figures of README, docs and results files that had no command of their own.

Run: OMP_NUM_THREADS=1 PYTHONPATH=. python benchmarks/audit_figures.py   (CPU, about a minute)

Sections (``--sections``, comma-separated; default all):

- ``curves``: the statistics of ``benchmarks/learning_curves.csv`` quoted in
  ``learning_curves.results.md`` and ``docs/multi_fidelity.md`` (deterministic: a fixed table);
- ``spinenet``: backbone sizes of ``spinenet_detection.results.md`` (the SpineNet-49 arch and the
  searched arch at the tutorial's tiny widths; deterministic);
- ``darts``: DARTS-V2's weights with and without the auxiliary head the retraining benchmarks
  train with (``retrain_step`` / ``train_pretrained`` results; deterministic);
- ``weights``: the shipped DARTS-V2 weights' accuracy on all 10,000 CIFAR-10 test images
  (README, ``train_pretrained.results.md``; deterministic; several CPU-minutes, so not in the
  default run: name it);
- ``import``: CPU and wall time of ``import nasx`` in fresh interpreters (README; timing);
- ``budget``: the cost of one parameter-budget check on README's small space
  (``docs/constraints.md``; timing).

benchmarks/AUDIT.md lists every figure with its command; this script is the command of these.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent

# The searched backbone of the tutorial's full CPU run (spinenet_detection.results.md).
SPINENET_SEARCHED = json.loads(
    '{"output_levels": [7, 4, 3, 5, 6], '
    '"block0/type": "bottleneck", "block0/level": 5, "block0/parents": [0, 1], '
    '"block1/type": "residual", "block1/level": 5, "block1/parents": [0, 2], '
    '"block2/type": "bottleneck", "block2/level": 3, "block2/parents": [0, 3], '
    '"block3/type": "residual", "block3/level": 3, "block3/parents": [0, 1], '
    '"block4/type": "bottleneck", "block4/level": 3, "block4/parents": [2, 3], '
    '"block5/type": "bottleneck", "block5/level": 4, "block5/parents": [0, 4], '
    '"block6/type": "bottleneck", "block6/level": 4, "block6/parents": [3, 4], '
    '"block7/type": "bottleneck", "block7/level": 7, "block7/parents": [0, 1], '
    '"block8/type": "residual", "block8/level": 2, "block8/parents": [5, 9], '
    '"block9/type": "residual", "block9/level": 3, "block9/parents": [2, 6], '
    '"block10/type": "residual", "block10/parents": [2, 8], '
    '"block11/type": "bottleneck", "block11/parents": [6, 9], '
    '"block12/type": "bottleneck", "block12/parents": [5, 9], '
    '"block13/type": "bottleneck", "block13/parents": [10, 14], '
    '"block14/type": "residual", "block14/parents": [0, 2]}'
)


# The searched backbone of the re-runs of 2026-11-27 (trial 6 of the same 8 archs: the seeded
# training scored them otherwise after the code changes since the first run).
SPINENET_SEARCHED_RERUN = json.loads(
    '{"output_levels": [4, 6, 3, 5, 7], '
    '"block0/type": "residual", "block0/level": 5, "block0/parents": [0, 1], '
    '"block1/type": "residual", "block1/level": 3, "block1/parents": [0, 1], '
    '"block2/type": "residual", "block2/level": 2, "block2/parents": [1, 2], '
    '"block3/type": "residual", "block3/level": 4, "block3/parents": [2, 4], '
    '"block4/type": "residual", "block4/level": 3, "block4/parents": [0, 3], '
    '"block5/type": "bottleneck", "block5/level": 2, "block5/parents": [1, 4], '
    '"block6/type": "residual", "block6/level": 3, "block6/parents": [3, 4], '
    '"block7/type": "bottleneck", "block7/level": 4, "block7/parents": [4, 6], '
    '"block8/type": "residual", "block8/level": 3, "block8/parents": [1, 2], '
    '"block9/type": "residual", "block9/level": 5, "block9/parents": [5, 9], '
    '"block10/type": "bottleneck", "block10/parents": [2, 10], '
    '"block11/type": "residual", "block11/parents": [1, 6], '
    '"block12/type": "bottleneck", "block12/parents": [7, 13], '
    '"block13/type": "bottleneck", "block13/parents": [3, 11], '
    '"block14/type": "residual", "block14/parents": [0, 13]}'
)


def spearman(xs: list[float], ys: list[float]) -> float:
    """Spearman's rank correlation, ties given their average rank (as scipy does).

    >>> spearman([1, 2, 3, 4], [10, 20, 30, 40]), spearman([1, 2, 2, 3], [3, 2, 2, 1])
    (1.0, -1.0)
    """

    def ranks(v: list[float]) -> list[float]:
        order = sorted(range(len(v)), key=v.__getitem__)
        r = [0.0] * len(v)
        i = 0
        while i < len(v):
            j = i
            while j + 1 < len(v) and v[order[j + 1]] == v[order[i]]:
                j += 1
            for k in range(i, j + 1):
                r[order[k]] = (i + j) / 2 + 1
            i = j + 1
        return r

    rx, ry = ranks(xs), ranks(ys)
    mx, my = statistics.fmean(rx), statistics.fmean(ry)
    cov = sum((a - mx) * (b - my) for a, b in zip(rx, ry, strict=True))
    return cov / math.sqrt(sum((a - mx) ** 2 for a in rx) * sum((b - my) ** 2 for b in ry))


def curves(path: Path = HERE / "learning_curves.csv") -> None:
    by: dict[str, dict[int, tuple[float, float, float]]] = defaultdict(dict)
    rows = list(csv.DictReader(path.open()))
    for r in rows:
        by[r["arch"]][int(r["epoch"])] = (float(r["val"]), float(r["test"]), float(r["seconds"]))
    last = max(max(v) for v in by.values())
    val = [v[last][0] for v in by.values()]
    test = [v[last][1] for v in by.values()]
    best = max(test)
    best_val = max(by.values(), key=lambda v: v[last][0])[last]
    print(f"{path.name}: {len(rows):,} rows, {len(by)} archs x {last} epochs")
    print(f"  final val {min(val):.1f}-{max(val):.1f}% (mean {statistics.fmean(val):.1f}%)")
    print(
        f"  final test {min(test):.1f}-{max(test):.1f}% (mean {statistics.fmean(test):.1f}%, "
        f"median {statistics.median(test):.1f}%)"
    )
    n_best = sum(t == best for t in test)
    print(
        f"  best test {best:.2f}% shared by {n_best}; within 0.5 points: "
        f"{sum(best - t <= 0.5 for t in test)}, within 1: {sum(best - t <= 1 for t in test)}"
    )
    print(f"  best val {best_val[0]:.2f}%, which tests at {best_val[1]:.1f}%")
    for epoch in sorted({1, 3, 9, last} & set(range(1, last + 1))):
        rho = spearman([v[epoch][0] for v in by.values()], test)
        print(f"  Spearman(val after epoch {epoch}, final test) = {rho:.3f}")
    seconds = [s for v in by.values() for (_, _, s) in v.values()]
    per_arch = [sum(s for (_, _, s) in v.values()) for v in by.values()]
    print(
        f"  thread CPU time: {sum(seconds):,.0f} s in all, {statistics.fmean(seconds):.2f} s per "
        f"epoch, {statistics.fmean(per_arch):.1f} s per arch ({min(per_arch):.1f}-{max(per_arch):.1f})"
    )
    n, k = len(by), n_best
    distinct = 1 - math.comb(n - k, 60) / math.comb(n, 60)
    print(
        f"  P(60 random trials include one of the {k} best): {distinct:.3f} (distinct archs), "
        f"{1 - (1 - k / n) ** 60:.3f} (with repeats)"
    )


def spinenet() -> None:
    import torch

    from nasx.hub import SpineNet
    from nasx.hub.spinenet import SPINENET_49
    from nasx.profiler import count_parameters
    from nasx.space import model_context

    tiny = {"filter_size_scale": 0.125, "endpoints_num_filters": 16, "stem_filters": 8}
    sizes = {}
    archs = {
        "SpineNet-49 arch": SPINENET_49,
        "searched arch (first run, trial 2)": SPINENET_SEARCHED,
        "searched arch (re-runs, trial 6)": SPINENET_SEARCHED_RERUN,
    }
    for name, arch in archs.items():
        with torch.device("meta"), model_context(arch):
            sizes[name] = count_parameters(SpineNet("49S", **tiny))
        print(f"  {name} at the tutorial's tiny widths (49S): {sizes[name]:,} backbone parameters")
    published, *searched = sizes.values()
    for name, size in zip(list(archs)[1:], searched):
        print(
            f"  {name} / published: {size / published:.3f} ({size / published - 1:+.1%}); "
            f"published / searched: {published / size:.3f}"
        )


def darts() -> None:
    import torch

    from nasx.hub.pretrained import SEARCHED_MODELS
    from nasx.space import model_context

    entry = SEARCHED_MODELS["darts-v2"]
    module_name, cls_name = entry.space.split(":")
    cls = getattr(__import__(module_name, fromlist=[cls_name]), cls_name)
    with torch.device("meta"), model_context(entry.arch()):
        model = cls(**entry.kwargs, auxiliary_loss=True)  # as the retraining benchmarks build it
    total = sum(p.numel() for p in model.parameters())
    aux = sum(p.numel() for n, p in model.named_parameters() if n.startswith("auxiliary"))
    print(f"  darts-v2: {total:,} weights with the auxiliary head, {total - aux:,} without")


def weights(batch: int = 100) -> None:
    import torch

    from nasx.datasets import cifar10
    from nasx.hub import load_searched_model

    test = cifar10("test")
    model = load_searched_model("darts-v2", pretrained=True).eval()
    correct, start = 0, time.process_time()
    with torch.no_grad():
        for i in range(0, len(test), batch):
            xs, ys = zip(*(test[j] for j in range(i, min(i + batch, len(test)))), strict=True)
            correct += int((model(torch.stack(xs)).argmax(1) == torch.tensor(ys)).sum())
    print(
        f"  darts-v2 shipped weights: {correct:,} of {len(test):,} CIFAR-10 test images "
        f"({100 * correct / len(test):.2f}%), {time.process_time() - start:.0f} CPU-s"
    )


def import_time(runs: int = 7) -> None:
    code = (
        "import time; c = time.process_time(); w = time.perf_counter(); import nasx; "
        "print(time.process_time() - c, time.perf_counter() - w)"
    )
    cpu, wall = [], []
    for _ in range(runs):
        out = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True
        )
        c, w = map(float, out.stdout.split())
        cpu.append(c * 1e3)
        wall.append(w * 1e3)
    print(
        f"  import nasx, {runs} fresh interpreters: CPU median {statistics.median(cpu):.1f} ms "
        f"({min(cpu):.1f}-{max(cpu):.1f}), wall median {statistics.median(wall):.1f} ms "
        f"({min(wall):.1f}-{max(wall):.1f}); load average {os.getloadavg()[0]:.1f}"
    )


def budget(rounds: int = 5) -> None:
    import torch.nn as nn

    from nasx.experiment.filters import CostFilter
    from nasx.space import (
        InputChoice,
        LayerChoice,
        ModelSpace,
        Repeat,
        add_constraint,
        choice,
        search_space,
    )

    class Net(ModelSpace):  # README's space
        def __init__(self):
            super().__init__()
            width = choice("width", [16, 32])
            self.stem = nn.Conv2d(3, width, 3, padding=1)
            self.body = Repeat(
                lambda i: LayerChoice(
                    {
                        "conv3": nn.Conv2d(width, width, 3, padding=1),
                        "conv5": nn.Conv2d(width, width, 5, padding=2),
                    },
                    label=f"op{i}",
                ),
                depth=(1, 3),
                label="depth",
            )
            self.skip = InputChoice(2, label="skip")
            self.head = nn.Linear(width, 10)

        def forward(self, x):
            x = self.stem(x)
            x = self.skip([x, self.body(x)])
            return self.head(x.mean((2, 3)))

    per_arch = []
    for _ in range(rounds):  # a fresh space each round: nothing cached in the constraint
        net = Net()
        add_constraint(net, CostFilter((3, 16, 16), params=(None, 40_000)), label="params")
        space = search_space(net)
        cpu, wall = time.process_time(), time.perf_counter()
        space.count_valid()  # builds every arch once on the meta device
        per_arch.append(
            (
                (time.process_time() - cpu) * 1e3 / space.size,
                (time.perf_counter() - wall) * 1e3 / space.size,
            )
        )
    print(
        "  one parameter-budget check (CostFilter, README's space, per arch of a full enumeration):"
        f" CPU ms per round {[round(c, 1) for c, _ in per_arch]}, wall ms "
        f"{[round(w, 1) for _, w in per_arch]}; load average {os.getloadavg()[0]:.1f}"
    )


SECTIONS = {
    "curves": curves,
    "spinenet": spinenet,
    "darts": darts,
    "weights": weights,
    "import": import_time,
    "budget": budget,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    slow = {"weights"}
    parser.add_argument("--sections", default=",".join(s for s in SECTIONS if s not in slow))
    parser.add_argument(
        "--table", default=None, help="the learning-curve CSV of section curves (default: 9 epochs)"
    )
    args = parser.parse_args()
    for name in args.sections.split(","):
        print(f"== {name}")
        if name == "curves" and args.table:
            curves(Path(args.table))
        else:
            SECTIONS[name]()
    print(json.dumps({"python": sys.version.split()[0]}))


if __name__ == "__main__":
    main()
