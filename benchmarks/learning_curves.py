"""Build a learning-curve table: every arch of a 648-arch CNN space trained 9 epochs on real data.

    PYTHONPATH=. python benchmarks/learning_curves.py --out benchmarks/learning_curves.csv \
        [--workers 2 --epochs 9 --train 4000 --val 2000 --test 2000 --batch 64 --schedule cosine]

Issue 31's simulator (``nasx.experiment.schedulers.simulate``) compares schedulers and strategies
over hundreds of seeds by replaying such a table; this script makes one from real training, so
that the comparison is about real learning curves, not made-up ones.

- **Space** (:class:`CurveSpace`, 3 x 6^3 = 648 archs): a stem of width 8, 12 or 16 (stride 2),
  then three blocks, each a 3x3 convolution, a 5x5 convolution or a separable 3x3 convolution
  (``op1..op3``), each widening the channels by 1 or 2 (``mult1..mult3``), max-pooling after
  the first block, global average pooling and a linear head. Large enough that full-budget random search
  with a few dozen trials does not find the best arch.
- **Data**: Fashion-MNIST (Debian's ``dataset-fashion-mnist``, or ``--data-dir``): the first
  ``--train`` training images to train on, the last ``--val`` training images to validate on,
  the first ``--test`` test images to test on.
- **Training**: Adam at 2e-3 on a per-step cosine to 0 at the end of the last epoch
  (``--schedule cosine``, the default, as NAS-Bench-201 trains; ``--schedule constant`` keeps
  2e-3 throughout, the first table's recipe), batch 64, one CPU thread per process, seeded by
  the arch's index plus ``--seed``. The rate depends on the step only, so a trial paused at
  epoch b and continued follows the same curve as one trained straight through (what the
  simulator assumes). Why cosine: with the constant rate, two seeds of the same arch differed
  by a standard deviation of 4.0 points in final test accuracy against a spread of 4.3 between
  archs (Spearman 0.34 between the seeds' rankings, 40 archs): the table mostly recorded noise.
  With the cosine: 1.5 points against 4.0 (Spearman 0.90), and epoch 1 ranks the archs 0.78 by
  their final accuracy instead of 0.35 (``learning_curves.results.md``). After each epoch:
  validation and test accuracy (%), and the epoch's training time as CPU seconds of its one
  thread (``time.thread_time``: unlike wall time, it does not grow when other work shares the
  machine, so the table can be built in the background).

The CSV has one row per (arch, epoch): ``arch`` (JSON), ``epoch`` (1-based), ``val``, ``test``,
``seconds`` (``LearningCurves.from_csv`` reads it). Rows are appended as archs finish, so a
killed run resumes where it stopped (archs already complete are skipped).
"""

from __future__ import annotations

import argparse
import csv
import itertools
import json
import math
import multiprocessing as mp
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import nasx  # noqa: E402
from nasx.datasets import fashion_mnist  # noqa: E402
from nasx.space import LayerChoice, ModelSpace, model_context  # noqa: E402

COLUMNS = ("arch", "epoch", "val", "test", "seconds")
LR = 2e-3  # Adam's peak learning rate
WIDTHS, OPS, MULTS = (8, 12, 16), ("conv3x3", "conv5x5", "sepconv3x3"), (1, 2)


def conv_bn(c_in: int, c_out: int, kernel: int, groups: int = 1) -> nn.Sequential:
    return nn.Sequential(
        nn.Conv2d(c_in, c_out, kernel, padding=kernel // 2, groups=groups, bias=False),
        nn.BatchNorm2d(c_out),
        nn.ReLU(),
    )


def block(c_in: int, c_out: int, label: str) -> LayerChoice:
    return LayerChoice(
        {
            "conv3x3": conv_bn(c_in, c_out, 3),
            "conv5x5": conv_bn(c_in, c_out, 5),
            "sepconv3x3": nn.Sequential(
                conv_bn(c_in, c_in, 3, groups=c_in), conv_bn(c_in, c_out, 1)
            ),
        },
        label=label,
    )


class CurveSpace(ModelSpace):
    """The table's space: stem width, three blocks (operation and widening each)."""

    def __init__(self) -> None:
        super().__init__()
        width = nasx.choice("width", list(WIDTHS))
        self.stem = nn.Sequential(nn.Conv2d(1, width, 3, stride=2, padding=1), nn.ReLU())
        channels = [width]
        for i in (1, 2, 3):
            channels.append(width * nasx.choice(f"mult{i}", list(MULTS)))
        self.blocks = nn.ModuleList(
            block(channels[i], channels[i + 1], f"op{i + 1}") for i in range(3)
        )
        self.head = nn.Linear(channels[-1], 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # x: (B, 1, 28, 28)
        x = self.stem(x)  # (B, W, 14, 14)
        x = F.max_pool2d(self.blocks[0](x), 2)  # (B, W*m1, 7, 7)
        x = self.blocks[1](x)  # (B, W*m2, 7, 7)
        x = self.blocks[2](x).mean((2, 3))  # (B, W*m3)
        return self.head(x)


def all_archs() -> list[dict]:
    """Every arch of :class:`CurveSpace`, in a fixed order (648)."""
    return [
        {"width": w, "op1": o1, "op2": o2, "op3": o3, "mult1": m1, "mult2": m2, "mult3": m3}
        for w, o1, o2, o3, m1, m2, m3 in itertools.product(
            WIDTHS, OPS, OPS, OPS, MULTS, MULTS, MULTS
        )
    ]


def load_data(args: argparse.Namespace) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    train, test = (
        fashion_mnist("train", root=args.data_dir),
        fashion_mnist("test", root=args.data_dir),
    )

    def tensors(ds, start: int, stop: int) -> tuple[torch.Tensor, torch.Tensor]:
        x = torch.from_numpy(np.asarray(ds.images[start:stop], dtype=np.float32) / 255.0)
        return (x - 0.286) / 0.353, torch.from_numpy(np.asarray(ds.targets[start:stop])).long()

    n = len(train)
    return {
        "train": tensors(train, 0, args.train),
        "val": tensors(train, n - args.val, n),
        "test": tensors(test, 0, args.test),
    }


@torch.no_grad()
def accuracy(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> float:
    model.eval()
    correct = sum(
        int((model(x[i : i + 500]).argmax(1) == y[i : i + 500]).sum())
        for i in range(0, len(x), 500)
    )
    model.train()
    return 100.0 * correct / len(x)


def learning_rate(schedule: str, epochs: int, steps_per_epoch: int) -> Callable[[int], float]:
    """The learning-rate factor after ``step`` optimizer steps: 1 throughout (``constant``), or a
    cosine from 1 at step 0 to 0 at the end of epoch ``epochs`` (``cosine``, per step, as
    NAS-Bench-201 trains). Either way it depends on the step only, not on where a trial paused,
    so a trial continued from its checkpoint at epoch b follows the curve of one trained straight
    through (what the simulator assumes)."""
    if schedule == "constant":
        return lambda step: 1.0
    if schedule == "cosine":
        total = epochs * steps_per_epoch
        return lambda step: 0.5 * (1.0 + math.cos(math.pi * min(step, total) / total))
    raise ValueError(f"schedule must be 'constant' or 'cosine', got {schedule!r}")


def train_one(job: tuple[int, dict, dict, int, int, str, int]) -> list[tuple]:
    """Train arch ``index`` for ``epochs`` (seeded by ``index + seed``); its curve's table rows."""
    index, arch, data, epochs, batch, schedule, seed = job
    torch.set_num_threads(1)
    torch.manual_seed(index + seed)
    with model_context(arch):
        model = CurveSpace()
    x, y = data["train"]
    opt = torch.optim.Adam(model.parameters(), lr=LR)
    factor = learning_rate(schedule, epochs, math.ceil(len(x) / batch))
    order = torch.Generator().manual_seed(index + seed)
    rows, step = [], 0
    for epoch in range(1, epochs + 1):
        start = time.thread_time()
        for idx in torch.randperm(len(x), generator=order).split(batch):
            for group in opt.param_groups:
                group["lr"] = LR * factor(step)
            opt.zero_grad(set_to_none=True)
            F.cross_entropy(model(x[idx]), y[idx]).backward()
            opt.step()
            step += 1
        seconds = time.thread_time() - start
        rows.append(
            (
                json.dumps(arch, sort_keys=True),
                epoch,
                round(accuracy(model, *data["val"]), 3),
                round(accuracy(model, *data["test"]), 3),
                round(seconds, 4),
            )
        )
    return rows


def done_archs(path: Path, epochs: int) -> set[str]:
    """Archs whose whole curve is already in ``path``."""
    if not path.exists():
        return set()
    counts: dict[str, int] = {}
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            counts[row["arch"]] = counts.get(row["arch"], 0) + 1
    return {a for a, c in counts.items() if c >= epochs}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True)
    p.add_argument("--data-dir", default=None)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--epochs", type=int, default=9)
    p.add_argument("--train", type=int, default=4000)
    p.add_argument("--val", type=int, default=2000)
    p.add_argument("--test", type=int, default=2000)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--schedule", choices=("constant", "cosine"), default="cosine")
    p.add_argument("--seed", type=int, default=0, help="added to each arch's index to seed it")
    p.add_argument("--limit", type=int, default=None, help="only the first N archs (a smoke run)")
    args = p.parse_args(argv)
    out = Path(args.out)
    archs = all_archs()[: args.limit]
    done = done_archs(out, args.epochs)
    todo = [(i, a) for i, a in enumerate(archs) if json.dumps(a, sort_keys=True) not in done]
    print(f"{len(archs)} archs, {len(archs) - len(todo)} already in {out}, {len(todo)} to train")
    if not todo:
        return
    data = load_data(args)
    new_file = not out.exists()
    start = time.monotonic()
    with open(out, "a", newline="") as f, mp.get_context("spawn").Pool(args.workers) as pool:
        writer = csv.writer(f)
        if new_file:
            writer.writerow(COLUMNS)
        jobs = ((i, a, data, args.epochs, args.batch, args.schedule, args.seed) for i, a in todo)
        for n, rows in enumerate(pool.imap_unordered(train_one, jobs), 1):
            writer.writerows(rows)
            f.flush()  # an arch's rows are on disk before the next: a kill loses at most the archs in flight
            if n % 10 == 0 or n == len(todo):
                elapsed = time.monotonic() - start
                print(
                    f"  {n}/{len(todo)} archs, {elapsed / 60:.1f} min, "
                    f"about {elapsed / n * (len(todo) - n) / 60:.0f} min left",
                    flush=True,
                )


if __name__ == "__main__":
    main()
