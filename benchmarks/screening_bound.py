"""What a learning-curve table allows any early-stopping scheduler to reach: issue 31's E/3 goal.

    PYTHONPATH=. python benchmarks/screening_bound.py [--table benchmarks/learning_curves27.csv \
        --fractions 0.111,0.333,0.5,1 --samples 400] [--fast]

``benchmarks/multi_fidelity.py`` measures nasx's schedulers against full-budget regularized
evolution (RE). Where a scheduler misses the goal (RE's mean final-pick test accuracy in at most
a third of RE's epochs E), this script asks whether the table allows it at all, with the simplest
scheduler there is, a two-stage screen with random proposals:

- sample ``N`` archs, train each ``r`` epochs, train the ``k`` best by validation accuracy at
  epoch ``r`` to the full budget, and pick the best of those ``k`` by final validation accuracy
  (the pick rule of ``multi_fidelity.py``); ``N * r + k * (epochs - r)`` epochs in all;
- for each budget, the best mean test accuracy of the pick over all ``(r, k)`` (``--samples``
  random draws of the archs each). Chosen in hindsight, so it is an upper bound on what such a
  screen reaches, not a scheduler a user could run; a bound above RE's mean says the table
  allows the goal.

It also prints what limits any pick by validation: the standard error of one validation accuracy
(binomial, from ``--val-images``, the split size the table was built with) against the spread of
the archs at the top of the table, and how often the best-validation arch is the best-test one.

``--fast`` runs a small made-up table (the test suite runs it, seconds).
"""

from __future__ import annotations

import argparse
import itertools
import math
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from nasx.experiment.schedulers import LearningCurves  # noqa: E402


def screen(
    val: np.ndarray, test: np.ndarray, n: int, r: int, k: int, samples: int, seed: int = 0
) -> float:
    """Mean test accuracy of the two-stage screen's pick: ``n`` random archs, the ``k`` best at
    epoch ``r`` trained fully, the best of those by final validation accuracy.

    >>> val = np.array([[1.0, 1.0], [2.0, 3.0], [3.0, 2.0]]); test = val.copy()
    >>> screen(val, test, n=3, r=1, k=1, samples=5)  # epoch 1 keeps the arch that ends at 2
    2.0
    >>> screen(val, test, n=3, r=1, k=2, samples=5)  # two kept: the best final one
    3.0
    """
    rng = np.random.default_rng(seed)
    picks = []
    for _ in range(samples):
        drawn = rng.choice(len(val), size=n, replace=False)
        kept = drawn[np.argsort(-val[drawn, r - 1], kind="stable")[:k]]
        picks.append(test[kept[np.argmax(val[kept, -1])], -1])
    return float(np.mean(picks))


def best_screen(
    val: np.ndarray, test: np.ndarray, budget: int, samples: int, at: Sequence[int] = ()
) -> tuple[float, int, int, int]:
    """``(mean test, r, k, n)`` of the best two-stage screen that spends at most ``budget``
    epochs (the full-budget pick of ``budget // epochs`` random archs when no screen fits),
    screening at the epochs ``at`` only (default: any)."""
    archs, epochs = val.shape
    full = min(archs, budget // epochs)  # no screen: every arch trained fully, the best kept
    best = (screen(val, test, full, epochs, full, samples), epochs, full, full)
    for r, k in itertools.product(at or range(1, epochs), range(1, 61)):
        n = min(archs, (budget - k * (epochs - r)) // r)
        if n < k:
            continue
        mean = screen(val, test, n, r, k, samples)
        if mean > best[0]:
            best = (mean, r, k, n)
    return best


def main(argv: Sequence[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--table", default=str(Path(__file__).with_name("learning_curves27.csv")))
    p.add_argument("--reference-trials", type=int, default=60, help="E, in full trainings")
    p.add_argument("--fractions", default="0.111,0.333,0.5,1", help="budgets, as fractions of E")
    p.add_argument("--samples", type=int, default=400, help="random draws per (r, k)")
    p.add_argument("--val-images", type=int, default=2000, help="the table's validation split")
    p.add_argument("--fast", action="store_true", help="a small made-up table, few draws")
    args = p.parse_args(argv)

    if args.fast:
        archs = [{"a": a, "b": b, "c": c} for a in range(4) for b in range(4) for c in range(4)]
        curves = LearningCurves.synthetic(archs, epochs=9, seed=0)
        args.samples, args.reference_trials, args.val_images = 20, 12, 2000
        print("FAST: made-up curves, 64 archs: the numbers say nothing about real training")
    else:
        curves = LearningCurves.from_csv(args.table)
        print(f"table {args.table}: {len(curves.archs)} archs x {curves.epochs} epochs")
    val, test = np.array(curves.val), np.array(curves.test)
    epochs = curves.epochs
    total = args.reference_trials * epochs
    print(f"E = {args.reference_trials} full trainings = {total} epochs; {args.samples} draws")

    print("\nbest two-stage screen (hindsight (r, k): an upper bound for such a screen)")
    print(f"{'budget':>8} {'epochs':>7} {'mean test':>10} {'r':>3} {'k':>3} {'N':>5}")
    for fraction in (float(f) for f in args.fractions.split(",")):
        budget = int(round(fraction * total))
        mean, r, k, n = best_screen(val, test, budget, args.samples)
        print(f"{fraction:>7.3f}E {budget:>7} {mean:>10.2f} {r:>3} {k:>3} {n:>5}")

    third = int(round(total / 3))
    print(f"\nscreening at one epoch only, at E/3 ({third} epochs):")
    for r in (e for e in (1, 3, 9, 27, 81) if e < epochs):
        mean, _, k, n = best_screen(val, test, third, args.samples, at=(r,))
        print(f"  epoch {r:>2}: {mean:.2f} (k {k}, N {n})")

    final_val, final_test = val[:, -1], test[:, -1]
    top = np.sort(final_test)[::-1][:10]
    scale = 100.0 if final_val.max() > 1 else 1.0  # accuracies in % or as fractions
    mean_acc = float(np.mean(np.sort(final_val)[::-1][:10])) / scale
    se = scale * math.sqrt(mean_acc * (1 - mean_acc) / args.val_images)
    print(
        f"\nvalidation noise: one accuracy on {args.val_images} images has a standard error of "
        f"{se:.2f} points at the top ({100 * mean_acc:.1f}%); the 10 best final test "
        f"accuracies span {top[0] - top[-1]:.2f} points ({top[-1]:.2f}-{top[0]:.2f})"
    )
    best_val = int(np.argmax(final_val))
    print(
        f"the best-validation arch tests at {final_test[best_val]:.2f} "
        f"(rank {1 + int(np.sum(final_test > final_test[best_val]))} by test); "
        f"the oracle: {final_test.max():.2f}"
    )


if __name__ == "__main__":
    main()
