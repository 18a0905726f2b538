"""How much of a learning-curve table is the arch, and how much the seed? Two seeds per arch.

    PYTHONPATH=. python benchmarks/curve_noise.py [--archs 40 --schedules constant cosine --workers 2]

A table that ranks archs by their final accuracy is only a benchmark for search if that ranking
is the archs', not the training noise's. This script trains ``--archs`` archs of
``learning_curves.CurveSpace`` (a seeded sample) twice each, with two seeds (0 and 1000 added to
the arch's index), for each learning-rate schedule of ``learning_curves.train_one``, and prints:

- the seed noise: the standard deviation of one training's final test accuracy around the arch's
  own mean (``sd(a - b) / sqrt(2)`` over the archs, for the two seeds a and b);
- the arch spread: the standard deviation of the archs' mean final test accuracies;
- Spearman's correlation of the two seeds' final test accuracies (1: the seed does not matter);
- Spearman's correlation of the validation accuracy after each epoch with the final test accuracy
  (mean of the two seeds): how well a scheduler's early rung ranks the archs.

Issue 31 chose the table's schedule with it (``learning_curves.results.md``): the constant rate's
final accuracies were mostly noise, the cosine's are not.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import random
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import audit_figures  # noqa: E402
import learning_curves  # noqa: E402

SEEDS = (0, 1000)


def spearman(a: np.ndarray, b: np.ndarray) -> float:
    """Spearman's rank correlation of two arrays (``audit_figures.spearman``'s ties rule)."""
    return audit_figures.spearman(a.tolist(), b.tolist())


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--archs", type=int, default=40)
    p.add_argument("--schedules", nargs="+", default=["constant", "cosine"])
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--epochs", type=int, default=9)
    p.add_argument("--data-dir", default=None)
    args = p.parse_args(argv)
    data = learning_curves.load_data(
        argparse.Namespace(data_dir=args.data_dir, train=4000, val=2000, test=2000)
    )
    archs = learning_curves.all_archs()
    sample = random.Random(0).sample(range(len(archs)), args.archs)
    jobs = [
        (i, archs[i], data, args.epochs, 64, schedule, seed)
        for schedule in args.schedules
        for seed in SEEDS
        for i in sample
    ]
    with mp.get_context("spawn").Pool(args.workers) as pool:
        curves = pool.map(learning_curves.train_one, jobs)
    # rows of train_one: (arch, epoch, val, test, seconds); per (schedule, seed): (archs, epochs)
    by_run = {(job[5], job[6], job[0]): rows for job, rows in zip(jobs, curves)}
    print(f"{args.archs} archs, {args.epochs} epochs, seeds {SEEDS}")
    for schedule in args.schedules:
        val, test = (
            np.array([[[r[col] for r in by_run[(schedule, s, i)]] for i in sample] for s in SEEDS])
            for col in (2, 3)
        )  # (seeds, archs, epochs)
        a, b = test[0, :, -1], test[1, :, -1]
        final = (a + b) / 2
        print(
            f"{schedule}: final test mean {final.mean():.2f}; seed noise sd "
            f"{np.std(a - b) / np.sqrt(2):.2f}; arch spread sd {np.std(final):.2f}; "
            f"Spearman between the seeds {spearman(a, b):.2f}"
        )
        ranks = " ".join(f"{k + 1}:{spearman(val[0, :, k], final):.2f}" for k in range(args.epochs))
        print(f"  Spearman(validation after epoch k, final test): {ranks}")


if __name__ == "__main__":
    main()
