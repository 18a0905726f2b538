"""Benchmark: search quality of every multi-trial strategy on NAS-Bench-201, from the table.

    OPENBLAS_NUM_THREADS=1 PYTHONPATH=. python benchmarks/nb201_search.py run \\
        --datasets cifar10 --seeds 30 --queries 300 --runs-dir /tmp/nb201_runs
    PYTHONPATH=. python benchmarks/nb201_search.py report --runs-dir /tmp/nb201_runs \\
        --plot benchmarks/nb201_search.png

``run`` searches each (dataset, strategy) with seeds ``0 .. seeds-1`` for ``--queries`` queries and
saves, per seed and query, the 200-epoch test accuracy of the arch with the best 12-epoch
validation accuracy so far (the strategy's pick) in ``<runs-dir>/<dataset>__<strategy>.npy``
(``[seeds, queries]``). ``report`` prints, at 100 and 300 queries, the mean and standard
deviation over seeds of that test accuracy and the mean regret to the table's optimum, and plots
best-so-far versus queries (mean, with a band of one standard error of the mean).

The protocol: a strategy sees only ``<dataset>_valid_12ep`` (the metric of
:class:`~nasx.evaluator.nasbench201.NasBench201Evaluator`); the pick is judged by
``<dataset>_test_200ep``; the budget is counted in queries of distinct archs (every strategy
deduplicates). No strategy knows its budget, so the 100-query figure is read off the first 100
queries of the 300-query runs. Each run drives the strategy exactly as ``NasExperiment`` does
(``setup``, then ``propose`` / evaluate / ``tell``) without the storage, which adds 2.5 ms per
trial and nothing to the result (``benchmarks/nb201_overhead.py``).
Set ``OPENBLAS_NUM_THREADS=1`` on a shared machine: LocalSearch's GP solves are tiny and BLAS
threads only contend.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from nasx.evaluator.nasbench201 import DATASETS, NasBench201Evaluator
from nasx.trial import Trial

OPTIMUM_NAMES = {"cifar10": "CIFAR-10", "cifar100": "CIFAR-100", "imagenet16": "ImageNet16-120"}


def strategies() -> dict:
    """Name -> factory(seed). Defaults everywhere, plus REA with the small population that is
    common on NAS-Bench-201 (nasx's default population of 100 makes its first 100 queries random)."""
    from nasx.strategy import TPE, LocalSearch, PolicyGradient, Random, RegularizedEvolution

    return {
        "Random": lambda seed: Random(seed=seed),
        "RegularizedEvolution": lambda seed: RegularizedEvolution(seed=seed),
        "RegularizedEvolution(10,3)": lambda seed: RegularizedEvolution(
            population_size=10, sample_size=3, seed=seed
        ),
        "PolicyGradient": lambda seed: PolicyGradient(seed=seed),
        "TPE": lambda seed: TPE(seed=seed),
        "LocalSearch": lambda seed: LocalSearch(seed=seed),
        "LocalSearch(predictor='gp')": lambda seed: LocalSearch(predictor="gp", seed=seed),
    }


def search(strategy, evaluator: NasBench201Evaluator, space, queries: int) -> np.ndarray:
    """``[queries]``: test_200ep of the best-valid arch after each query."""
    strategy.setup(space)
    best_valid, picks = -np.inf, np.empty(queries)
    for i in range(queries):
        arch = strategy.propose()
        metrics = evaluator.evaluate(None, arch=arch)
        strategy.tell(Trial(i, arch, "succeeded", metric=metrics["default"], metrics=metrics))
        if metrics["default"] > best_valid:
            best_valid, pick = metrics["default"], metrics["test_200ep"]
        picks[i] = pick
    return picks


def run(args: argparse.Namespace) -> None:
    from nasx.hub import NasBench201
    from nasx.space import search_space

    space = search_space(NasBench201(stem_out_channels=2, num_modules_per_stack=1))
    factories = strategies()
    names = args.strategies or list(factories)
    args.runs_dir.mkdir(parents=True, exist_ok=True)
    for dataset in args.datasets:
        evaluator = NasBench201Evaluator(dataset)
        for name in names:
            start = time.perf_counter()
            runs = np.stack(
                [
                    search(factories[name](seed), evaluator, space, args.queries)
                    for seed in range(args.seeds)
                ]
            )
            np.save(args.runs_dir / f"{dataset}__{name}.npy", runs)
            print(
                f"{dataset:10s} {name:28s} {args.seeds} seeds x {args.queries} queries: "
                f"{time.perf_counter() - start:6.1f} s, final mean {runs[:, -1].mean():.2f}",
                flush=True,
            )


def report(args: argparse.Namespace) -> None:
    files = sorted(args.runs_dir.glob("*__*.npy"))
    by_dataset: dict[str, dict[str, np.ndarray]] = {}
    for f in files:
        dataset, name = f.stem.split("__", 1)
        by_dataset.setdefault(dataset, {})[name] = np.load(f)
    order = list(strategies())
    for dataset in [d for d in DATASETS if d in by_dataset]:
        optimum = float(NasBench201Evaluator(dataset).table.column(f"{dataset}_test_200ep").max())
        print(f"\n{OPTIMUM_NAMES[dataset]} (optimum {optimum:.2f}); test accuracy (%) of the pick")
        print(
            "| strategy | seeds | 100 queries: mean +- std | regret | 300 queries: mean +- std | regret |"
        )
        print("|---|---|---|---|---|---|")
        runs = by_dataset[dataset]
        for name in sorted(runs, key=lambda n: order.index(n) if n in order else len(order)):
            r = runs[name]
            cells = []
            for q in (100, 300):
                if r.shape[1] >= q:
                    col = r[:, q - 1]
                    cells += [f"{col.mean():.2f} +- {col.std():.2f}", f"{optimum - col.mean():.2f}"]
                else:
                    cells += ["-", "-"]
            print(f"| {name} | {r.shape[0]} | " + " | ".join(cells) + " |")
    if args.plot:
        plot(by_dataset, order, args.plot)


def plot(by_dataset: dict, order: list[str], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    datasets = [d for d in DATASETS if d in by_dataset]
    fig, axes = plt.subplots(1, len(datasets), figsize=(6 * len(datasets), 4.5), squeeze=False)
    for ax, dataset in zip(axes[0], datasets):
        runs = by_dataset[dataset]
        lows = []
        for name in sorted(runs, key=lambda n: order.index(n) if n in order else len(order)):
            r = runs[name]
            x = np.arange(1, r.shape[1] + 1)
            mean = r.mean(0)
            sem = r.std(0) / np.sqrt(r.shape[0])
            color = f"C{order.index(name) % 10}" if name in order else None  # same in every panel
            (line,) = ax.plot(x, mean, label=name, lw=1.5, color=color)
            ax.fill_between(x, mean - sem, mean + sem, color=line.get_color(), alpha=0.2)
            lows.append(mean[min(19, len(mean) - 1)])
        optimum = float(NasBench201Evaluator(dataset).table.column(f"{dataset}_test_200ep").max())
        ax.axhline(optimum, color="k", ls="--", lw=0.8, label=f"optimum {optimum:.2f}")
        ax.set_ylim(min(lows) - 0.3, optimum + 0.2)
        ax.set_xlabel("queries (distinct archs)")
        ax.set_ylabel("200-epoch test accuracy of the pick (%)")
        ax.set_title(f"NAS-Bench-201 {OPTIMUM_NAMES[dataset]}: mean over seeds +- 1 s.e.m.")
        ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print(f"\nplot written to {path}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("run", help="search and save the best-so-far curves")
    p.add_argument("--datasets", nargs="+", default=["cifar10"], choices=DATASETS)
    p.add_argument("--strategies", nargs="+", default=None, help="default: all")
    p.add_argument("--seeds", type=int, default=30)
    p.add_argument("--queries", type=int, default=300)
    p.add_argument("--runs-dir", type=Path, required=True)
    p = sub.add_parser("report", help="tables (markdown) and the plot from saved runs")
    p.add_argument("--runs-dir", type=Path, required=True)
    p.add_argument("--plot", type=Path, default=None)
    args = parser.parse_args()
    run(args) if args.command == "run" else report(args)


if __name__ == "__main__":
    main()
