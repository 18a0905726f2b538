"""Benchmark: how well zero-cost proxies rank NAS-Bench-201 archs, and a proxy warm start.

    OPENBLAS_NUM_THREADS=1 PYTHONPATH=. python benchmarks/nb201_zero_cost.py \\
        --archs 100 --batch 64 --warm-start-seeds 30 --scores /tmp/nb201_zero_cost.npz

1. Scores ``--archs`` archs drawn uniformly (seed 0) from the 15,625 with synflow, NASWOT and
   grad-norm (:mod:`nasx.evaluator.zero_cost`), each on the benchmark-size network (16 channels,
   5 cells per stack, 10 classes), freshly initialised (seed 0), on one minibatch of ``--batch``
   real CIFAR-10 training images (the first of a seeded shuffle; normalised as usual). Prints the
   Spearman rank correlation of each score with the table's CIFAR-10 12-epoch validation and
   200-epoch test accuracy, the seconds per arch, and the mean test accuracy of the proxy's top
   10 % (used as a filter) against the whole sample's.
2. Warm start: for each seed, half of the scored sample is drawn; ``LocalSearch`` proposes the
   proxy's top 10 of those first (its other 10 starting archs are random) and runs 100 queries;
   the mean 200-epoch test accuracy of its pick is compared with the default start (20 random
   archs) on the same seeds. Proxy evaluations are not counted as queries.
   ``--scores`` keeps the proxy scores in an ``.npz`` file and reuses them when it exists.
"""

from __future__ import annotations

import argparse
import random
import time
from pathlib import Path

import numpy as np
import torch

from nasx.evaluator.nasbench201 import NasBench201Evaluator
from nasx.evaluator.zero_cost import PROXIES, ZeroCostEvaluator
from nasx.hub import NasBench201
from nasx.hub.nasbench201 import nb201_string_to_arch
from nasx.space import search_space


def spearman(a: np.ndarray, b: np.ndarray) -> float:
    """Spearman's rho: Pearson correlation of the ranks (ties get their average rank)."""

    def ranks(v: np.ndarray) -> np.ndarray:
        _, inverse, counts = np.unique(v, return_inverse=True, return_counts=True)
        ends = np.cumsum(counts)
        return ((ends - counts + ends - 1) / 2)[inverse]  # mean position of each tied group

    return float(np.corrcoef(ranks(a), ranks(b))[0, 1])


def minibatch(size: int) -> tuple[torch.Tensor, torch.Tensor]:
    from nasx.datasets import cifar10

    data = cifar10("train")
    idx = torch.randperm(len(data), generator=torch.Generator().manual_seed(0))[:size].tolist()
    xs, ys = zip(*(data[i] for i in idx))
    return torch.stack(xs), torch.tensor(ys)


def score_archs(archs, x, y, cache):
    """``({proxy: scores}, {proxy: seconds per arch})`` of every proxy on ``archs`` (the
    benchmark's network, one minibatch ``x, y``); reuses and refreshes the ``cache`` file."""
    space = NasBench201()  # the benchmark's network: 16 channels, 5 cells per stack
    scores, seconds = {}, {}
    cached = np.load(cache) if cache is not None and cache.exists() else None
    for proxy in PROXIES:
        if cached is not None and len(cached[proxy]) == len(archs):
            scores[proxy], seconds[proxy] = cached[proxy], float(cached[f"{proxy}_seconds"])
            continue
        ev = ZeroCostEvaluator(proxy, x, y, seed=0)
        start = time.perf_counter()
        scores[proxy] = np.array([ev.evaluate(space.freeze(a))["default"] for a in archs])
        seconds[proxy] = (time.perf_counter() - start) / len(archs)
        print(f"scored {proxy} ({seconds[proxy]:.2f} s per arch)", flush=True)
    if cache is not None:
        np.savez(cache, **scores, **{f"{p}_seconds": seconds[p] for p in scores})
    return scores, seconds


def print_ranking(args, scores, seconds, valid, test):
    """Each proxy's rank correlation with the table's accuracies, and its top 10 % as a filter."""
    print(
        f"\n{args.archs} archs sampled uniformly (seed 0), one CIFAR-10 minibatch of {args.batch}"
    )
    print(
        "| proxy | Spearman vs valid 12ep | Spearman vs test 200ep | s per arch (incl. build) "
        "| top-10% mean test | sample mean test |"
    )
    print("|---|---|---|---|---|---|")
    top = max(1, args.archs // 10)
    for proxy, s in scores.items():
        best = np.argsort(-s)[:top]
        print(
            f"| {proxy} | {spearman(s, valid):.3f} | {spearman(s, test):.3f} | "
            f"{seconds[proxy]:.2f} | {test[best].mean():.2f} | {test.mean():.2f} |"
        )


def print_warm_start(args, scores, archs, evaluator):
    """LocalSearch from 20 random archs against from each proxy's top 10 of half the sample."""
    from nasx.strategy import LocalSearch
    from nasx.trial import Trial

    choices = search_space(NasBench201(stem_out_channels=2, num_modules_per_stack=1))

    def pick(strategy) -> float:
        strategy.setup(choices)
        best = (-np.inf, None)
        for i in range(100):
            arch = strategy.propose()
            m = evaluator.query(arch)
            strategy.tell(Trial(i, arch, "succeeded", metric=m["default"], metrics=m))
            best = max(best, (m["default"], m["test_200ep"]))
        return best[1]

    print(
        f"\nwarm start of LocalSearch, 100 queries, {args.warm_start_seeds} seeds "
        "(mean +- std of the pick's 200-epoch test accuracy)"
    )
    seeds = range(args.warm_start_seeds)
    cold = [pick(LocalSearch(seed=seed)) for seed in seeds]
    print("| start of the climb | test accuracy of the pick |\n|---|---|")
    print(f"| 20 random archs (default) | {np.mean(cold):.2f} +- {np.std(cold):.2f} |")
    for proxy, s in scores.items():
        warm = []
        for seed in seeds:
            subset = random.Random(seed).sample(range(args.archs), args.archs // 2)
            ranked = sorted(subset, key=lambda i: -s[i])[:10]
            warm.append(pick(LocalSearch(initial_archs=[archs[i] for i in ranked], seed=seed)))
        print(
            f"| {proxy}: its top 10 of {args.archs // 2} + 10 random | {np.mean(warm):.2f} +- "
            f"{np.std(warm):.2f} |",
            flush=True,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--archs", type=int, default=100)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--warm-start-seeds", type=int, default=30)
    parser.add_argument("--scores", type=Path, default=None, help="cache of the proxy scores")
    args = parser.parse_args()

    torch.set_num_threads(1)
    evaluator = NasBench201Evaluator("cifar10")
    table = evaluator.table
    rows = random.Random(0).sample(range(len(table)), args.archs)
    archs = [nb201_string_to_arch(table.archs[i]) for i in rows]
    valid = table.column("cifar10_valid_12ep")[rows]
    test = table.column("cifar10_test_200ep")[rows]
    x, y = minibatch(args.batch)
    scores, seconds = score_archs(archs, x, y, args.scores)
    print_ranking(args, scores, seconds, valid, test)
    if args.warm_start_seeds:
        print_warm_start(args, scores, archs, evaluator)


if __name__ == "__main__":
    main()
