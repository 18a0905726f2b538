"""Benchmark: RegularizedEvolution's numerical mutation, a local step against NNI's fresh draw.

    PYTHONPATH=. python benchmarks/evolution_numeric.py --seeds 30 --trials 200

A synthetic objective over a space shaped like a joint arch + hyperparameter search (no training,
so many seeds are cheap): a learning rate ``loguniform(1e-5, 1)``, a dropout ``uniform(0, 0.5)``,
a batch size ``qloguniform(16, 512, q=16)``, and two categorical arch labels (4 and 3 values).
The score is a smooth bowl in the numerical coordinates (log10 lr, dropout, log2 batch) with its
optimum inside the ranges, plus a bonus per categorical label::

    score = -(log10 lr + 2.7)**2 - 20 (dropout - 0.13)**2 - 0.2 (log2 batch - 6.3)**2
            + 0.3 [width == 128] + 0.2 [act == 'gelu']

The best possible score is 0.5 (up to the batch's quantisation). Each row is a strategy; the
columns give the median over seeds of the regret (0.5 minus the best score found) after n
trials, and the ratio to the fresh-draw mutation (NNI's behaviour, ``numeric_mutation_scale=None``)
on the same seeds. Random search is the floor. The objective is ours, smooth and noise-free:
this measures what the step is for (refining a good value), not an accuracy gain on a real task.
"""

from __future__ import annotations

import argparse
import math
import statistics

from nasx.space import Categorical, Numerical, SearchSpace
from nasx.strategy import Random, RegularizedEvolution
from nasx.trial import Trial

BEST = 0.5


def make_space() -> SearchSpace:
    return SearchSpace(
        lr=Numerical(1e-5, 1.0, log_distributed=True, label="lr"),
        dropout=Numerical(0.0, 0.5, label="dropout"),
        batch=Numerical(16, 512, log_distributed=True, quantize=16, label="batch"),
        width=Categorical([32, 64, 128, 256], label="width"),
        act=Categorical(["relu", "tanh", "gelu"], label="act"),
    )


def score(arch: dict) -> float:
    return (
        -((math.log10(arch["lr"]) + 2.7) ** 2)
        - 20 * (arch["dropout"] - 0.13) ** 2
        - 0.2 * (math.log2(arch["batch"]) - 6.3) ** 2
        + 0.3 * (arch["width"] == 128)
        + 0.2 * (arch["act"] == "gelu")
    )


def regrets(strategy, trials: int, checkpoints: list[int]) -> dict[int, float]:
    space = make_space()
    strategy.setup(space, direction="maximize")
    best, out = -math.inf, {}
    for i in range(trials):
        arch = strategy.propose()
        value = score(arch)
        best = max(best, value)
        strategy.tell(Trial(i, arch, "succeeded", metric=value))
        if i + 1 in checkpoints:
            out[i + 1] = BEST - best
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=30)
    parser.add_argument("--trials", type=int, default=200)
    parser.add_argument("--population", type=int, default=20)
    parser.add_argument("--sample", type=int, default=5)
    args = parser.parse_args()
    checkpoints = sorted({n for n in (50, 100, args.trials) if n <= args.trials})

    def evolution(scale):
        return lambda seed: RegularizedEvolution(
            population_size=args.population,
            sample_size=args.sample,
            numeric_mutation_scale=scale,
            seed=seed,
        )

    strategies = {
        "evolution, fresh draw (NNI; scale=None)": evolution(None),
        "evolution, step 0.05": evolution(0.05),
        "evolution, step 0.1 (default)": evolution(0.1),
        "evolution, step 0.15": evolution(0.15),
        "evolution, step 0.3": evolution(0.3),
        "random": lambda seed: Random(seed=seed),
    }
    results = {
        name: [regrets(make(seed), args.trials, checkpoints) for seed in range(args.seeds)]
        for name, make in strategies.items()
    }
    print(
        f"median regret over {args.seeds} seeds (population {args.population}, tournament "
        f"{args.sample}); in brackets: ratio to the fresh draw"
    )
    reference = "evolution, fresh draw (NNI; scale=None)"
    header = f"{'strategy':42}" + "".join(f"{'n=' + str(n):>20}" for n in checkpoints)
    print(header)
    for name, runs in results.items():
        cells = []
        for n in checkpoints:
            median = statistics.median(r[n] for r in runs)
            ref = statistics.median(r[n] for r in results[reference])
            cells.append(f"{median:10.4f} ({median / ref:5.2f}x)")
        print(f"{name:42}" + "".join(f"{c:>20}" for c in cells))


if __name__ == "__main__":
    main()
