"""Schedulers against full-budget search and Optuna's pruners, replayed on a learning-curve table.

    PYTHONPATH=. python benchmarks/multi_fidelity.py [--table benchmarks/learning_curves.csv \
        --seeds 50 --workers 1,2,8 --reference-trials 60]

Issue 31's bar, measured with ``nasx.experiment.schedulers.simulate`` on the table that
``benchmarks/learning_curves.py`` builds (real training; ``--synthetic`` uses made-up curves, to
try the script without the table):

1. The reference: full-budget regularized evolution with ``--reference-trials`` trials (every
   trial trains all epochs). Its mean final-pick test accuracy over the seeds, at its epochs E.
2. Every scheduler x strategy (x workers) at fractions of E: the mean final-pick test accuracy,
   and the smallest fraction at which it reaches the reference's mean (goal for ASHA and
   Hyperband: a third of E or less).
3. Optuna's ``SuccessiveHalvingPruner`` and ``HyperbandPruner`` (with its ``RandomSampler`` and
   ``TPESampler``) driven over the same table in this process, one trial at a time, stopped at
   the same epoch budgets: nasx's schedulers should be at least as good at equal epochs.
4. Worker utilisation of ASHA with 8 simulated workers (goal: 95% or more, no barrier).

The final pick of a search is its best trial by validation accuracy at the highest budget any
trial reached; it is scored by the table's test accuracy at the full budget.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from nasx.experiment.schedulers import (  # noqa: E402
    ASHA,
    FullBudget,
    Hyperband,
    LearningCurves,
    MedianStopping,
    Scheduler,
    SuccessiveHalving,
    simulate,
)
from nasx.strategy import TPE, Random, RegularizedEvolution  # noqa: E402

FRACTIONS = (1 / 9, 1 / 6, 1 / 3, 1 / 2, 1.0)


def schedulers(epochs: int) -> dict[str, Callable[[], Scheduler]]:
    return {
        "full budget": lambda: FullBudget(epochs),
        "ASHA": lambda: ASHA(1, epochs, eta=3),
        "ASHA stopping": lambda: ASHA(1, epochs, eta=3, mode="stopping"),
        "Hyperband": lambda: Hyperband(1, epochs, eta=3),
        "SuccessiveHalving": lambda: SuccessiveHalving(1, epochs, eta=3),
        "MedianStopping": lambda: MedianStopping(1, epochs, min_trials=5),
    }


def strategies() -> dict[str, Callable[[int], Any]]:
    return {
        "Random": lambda seed: Random(seed=seed),
        "RegularizedEvolution": lambda seed: RegularizedEvolution(
            population_size=20, sample_size=5, seed=seed
        ),
        "TPE": lambda seed: TPE(seed=seed),
    }


def optuna_pick(
    curves: LearningCurves, pruner_name: str, sampler_name: str, seed: int, budget: int
) -> float:
    """Test accuracy of Optuna's best complete trial after ``budget`` epochs, one trial at a time."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.ERROR)  # the budget stop is a "failed" trial
    epochs = curves.epochs
    pruner = (
        optuna.pruners.SuccessiveHalvingPruner(min_resource=1, reduction_factor=3)
        if pruner_name == "SuccessiveHalvingPruner"
        else optuna.pruners.HyperbandPruner(min_resource=1, max_resource=epochs, reduction_factor=3)
    )
    sampler = (
        optuna.samplers.RandomSampler(seed=seed)
        if sampler_name == "Random"
        else optuna.samplers.TPESampler(seed=seed)
    )
    study = optuna.create_study(direction="maximize", sampler=sampler, pruner=pruner)
    space = curves.search_space()
    spent = 0
    rows: dict[int, int] = {}

    class OutOfEpochs(Exception):
        pass

    def objective(trial: optuna.Trial) -> float:
        nonlocal spent
        arch = {
            label: trial.suggest_categorical(label, list(c.values)) for label, c in space.items()
        }
        row = rows[trial.number] = curves.row(arch)
        for epoch in range(1, epochs + 1):
            if spent >= budget:
                raise OutOfEpochs
            spent += 1
            value = curves.val[row][epoch - 1]
            trial.report(value, epoch)
            if trial.should_prune():
                raise optuna.TrialPruned
        return value

    try:
        study.optimize(objective, catch=())
    except OutOfEpochs:
        pass
    complete = [t for t in study.trials if t.state == optuna.trial.TrialState.COMPLETE]
    if not complete:  # no trial reached the full budget: the best at the highest step reached
        reached = [t for t in study.trials if t.intermediate_values]
        top = max(max(t.intermediate_values) for t in reached)
        best = max(
            (t for t in reached if top in t.intermediate_values),
            key=lambda t: t.intermediate_values[top],
        )
    else:
        best = max(complete, key=lambda t: t.value)
    return curves.test[rows[best.number]][-1]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--table", default=str(Path(__file__).with_name("learning_curves.csv")))
    p.add_argument("--synthetic", action="store_true", help="made-up curves instead of the table")
    p.add_argument("--seeds", type=int, default=50)
    p.add_argument(
        "--workers", default="1,2,8", help="1 compares with Optuna (one trial at a time)"
    )
    p.add_argument("--reference-trials", type=int, default=60)
    p.add_argument("--no-optuna", action="store_true")
    args = p.parse_args()
    if args.synthetic or not Path(args.table).exists():
        import itertools

        archs = [dict(zip("abcdefg", v)) for v in itertools.product(range(3), *[range(6)] * 3)]
        curves = LearningCurves.synthetic(archs, epochs=9, seed=0)
        print(f"SYNTHETIC curves ({len(archs)} archs): numbers say nothing about real training")
    else:
        curves = LearningCurves.from_csv(args.table)
        print(f"table {args.table}: {len(curves.archs)} archs x {curves.epochs} epochs")
        if len(curves.archs) < 500:  # benchmarks/learning_curves.py builds 648; it resumes
            print(
                "PARTIAL table: issue 31's comparison needs the whole space (at least 500 archs); "
                "finish it with benchmarks/learning_curves.py first"
            )
    epochs, seeds = curves.epochs, range(args.seeds)
    print(f"oracle (best test accuracy at the full budget): {curves.best_test():.2f}")
    reference_epochs = args.reference_trials * epochs
    t0 = time.monotonic()
    for workers in [int(w) for w in args.workers.split(",")]:
        ref = statistics.mean(
            simulate(
                FullBudget(epochs),
                strategies()["RegularizedEvolution"](s),
                curves,
                workers=workers,
                max_epochs=reference_epochs,
            ).pick_test
            for s in seeds
        )
        print(
            f"\n{workers} workers; reference: full-budget RegularizedEvolution, "
            f"{args.reference_trials} trials = {reference_epochs} epochs: mean test {ref:.2f}"
        )
        header = " ".join(f"{f'{f:.2f}E':>7s}" for f in FRACTIONS)
        print(f"{'scheduler':18s} {'strategy':21s} {header}  reaches ref at  busy(8w)")
        for s_name, make_scheduler in schedulers(epochs).items():
            for st_name, make_strategy in strategies().items():
                means, busy = [], []
                for fraction in FRACTIONS:
                    runs = [
                        simulate(
                            make_scheduler(),
                            make_strategy(s),
                            curves,
                            workers=workers,
                            max_epochs=round(fraction * reference_epochs),
                        )
                        for s in seeds
                    ]
                    means.append(statistics.mean(r.pick_test for r in runs))
                    busy.append(statistics.mean(r.utilisation for r in runs))
                reach = next((f"{f:.2f}E" for f, m in zip(FRACTIONS, means) if m >= ref), "-")
                row = " ".join(f"{m:7.2f}" for m in means)
                print(
                    f"{s_name:18s} {st_name:21s} {row}  {reach:>14s}  {busy[-1]:7.1%}", flush=True
                )
    if not args.no_optuna:
        print("\nOptuna over the same table (one trial at a time), mean test of its pick:")
        print(f"{'pruner':24s} {'sampler':8s} " + " ".join(f"{f'{f:.2f}E':>7s}" for f in FRACTIONS))
        for pruner in ("SuccessiveHalvingPruner", "HyperbandPruner"):
            for sampler in ("Random", "TPE"):
                means = [
                    statistics.mean(
                        optuna_pick(curves, pruner, sampler, s, round(f * reference_epochs))
                        for s in seeds
                    )
                    for f in FRACTIONS
                ]
                print(
                    f"{pruner:24s} {sampler:8s} " + " ".join(f"{m:7.2f}" for m in means), flush=True
                )
    print(f"\n({time.monotonic() - t0:.0f} s)")


if __name__ == "__main__":
    main()
