"""Schedulers against full-budget search and Optuna's pruners, replayed on a learning-curve table.

    PYTHONPATH=. python benchmarks/multi_fidelity.py [--table benchmarks/learning_curves.csv \
        --seeds 50 --workers 1,2,8 --reference-trials 60] [--fast] [--auto]

Issue 31's bar, measured with ``nasx.experiment.schedulers.simulate`` on the table that
``benchmarks/learning_curves.py`` builds (real training):

1. The reference: full-budget regularized evolution with ``--reference-trials`` trials (every
   trial trains all epochs). Its mean final-pick test accuracy over the seeds, at its epochs E.
2. Every scheduler x strategy (x workers): the mean final-pick test accuracy at fractions of E,
   and the fewest epochs (in steps of one full training) at which the mean reaches the
   reference's (goal for ASHA and Hyperband: E/3 or less). BOHB proposes its own archs, so it
   runs without a strategy.
3. Optuna's ``SuccessiveHalvingPruner`` and ``HyperbandPruner`` (with its ``RandomSampler`` and
   ``TPESampler``) driven over the same table in this process, one trial at a time, stopped at
   the same epoch budgets: nasx's schedulers should be at least as good at equal epochs.
4. Worker utilisation of ASHA with 8 simulated workers (goal: 95% or more, no barrier).

The final pick of a search is its best trial by validation accuracy at the highest budget any
trial reached; it is scored by the table's test accuracy at the full budget. Each (scheduler,
strategy, workers, seed) runs once, to E epochs; the pick at a smaller budget is read off that
run (``SimulationResult.test_at``: the same as a run stopped there), and likewise for Optuna.

``--auto`` adds :class:`~nasx.experiment.schedulers.AutoASHA` (rungs chosen during the run from
the first trials' curves) beside ASHA, and issue 44's bar for it: full-budget RE's mean reached
within E/2, and ASHA's (rungs 1, 3, 9(, 27)) beaten at E/3, each with its paired difference over
the seeds and that difference's standard error, and the rungs it chose.

``--fast`` runs a small made-up table with a few seeds (the test suite runs it, seconds); its
numbers say nothing about real training.
"""

from __future__ import annotations

import argparse
import itertools
import math
import platform
import statistics
import sys
import time
import warnings
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from nasx.experiment.schedulers import (  # noqa: E402
    ASHA,
    BOHB,
    AutoASHA,
    CurveFitting,
    FullBudget,
    Hyperband,
    LearningCurves,
    MedianStopping,
    Scheduler,
    SuccessiveHalving,
    simulate,
)
from nasx.experiment.schedulers.base import RANK_BY, RankBy  # noqa: E402
from nasx.strategy import Random, RegularizedEvolution  # noqa: E402

FRACTIONS = (1 / 9, 1 / 6, 1 / 4, 1 / 3, 1 / 2, 2 / 3, 1.0)
OWN_MODEL = "(its own model)"


def schedulers(
    epochs: int, variants: bool = False, rank_by: RankBy = "last", auto: bool = False
) -> dict[str, Callable[[int], Scheduler]]:
    """Scheduler name -> factory of a fresh scheduler for one seed (``variants``: other rungs
    for ASHA and Hyperband only, to see whether their settings decide the bar). ``rank_by``:
    what the rung schedulers' rungs rank (the last value, or the mean or best of the curve).
    ``auto``: AutoASHA too, its rungs chosen from the curves (one setting for every table)."""
    r = rank_by
    if auto:
        return {
            "full budget": lambda seed: FullBudget(epochs),
            "ASHA": lambda seed: ASHA(1, epochs, eta=3, rank_by=r),
            "AutoASHA": lambda seed: AutoASHA(epochs, rank_by=r),
        }
    if variants:
        return {
            "full budget": lambda seed: FullBudget(epochs),
            "ASHA eta=2": lambda seed: ASHA(1, epochs, eta=2, rank_by=r),
            "ASHA min=3": lambda seed: ASHA(3, epochs, eta=3, rank_by=r),
            "ASHA min=2 eta=2": lambda seed: ASHA(2, epochs, eta=2, rank_by=r),
            "ASHA stop min=3": lambda seed: ASHA(3, epochs, eta=3, mode="stopping", rank_by=r),
            "Hyperband eta=2": lambda seed: Hyperband(1, epochs, eta=2, rank_by=r),
            "Hyperband min=3": lambda seed: Hyperband(3, epochs, eta=3, rank_by=r),
            # two rungs, the first epoch and the last: what screening_bound.py finds best
            "ASHA eta=max": lambda seed: ASHA(1, epochs, eta=epochs, rank_by=r),
            "SH eta=max": lambda seed: SuccessiveHalving(1, epochs, eta=epochs, rank_by=r),
            "Hyperband eta=max": lambda seed: Hyperband(1, epochs, eta=epochs, rank_by=r),
        }
    return {
        "full budget": lambda seed: FullBudget(epochs),
        "ASHA": lambda seed: ASHA(1, epochs, eta=3, rank_by=r),
        "ASHA stopping": lambda seed: ASHA(1, epochs, eta=3, mode="stopping", rank_by=r),
        "Hyperband": lambda seed: Hyperband(1, epochs, eta=3, rank_by=r),
        "SuccessiveHalving": lambda seed: SuccessiveHalving(1, epochs, eta=3, rank_by=r),
        "MedianStopping": lambda seed: MedianStopping(1, epochs, min_trials=5),
        "BOHB": lambda seed: BOHB(1, epochs, eta=3, seed=seed, rank_by=r),
        "CurveFitting": lambda seed: CurveFitting(epochs, start_step=3, threshold=0.95),
    }


def population_for(reference_trials: int) -> int:
    """Regularized evolution's population for a search of ``reference_trials`` full trainings
    (a third of them, between 4 and 20)."""
    return max(4, min(20, reference_trials // 3))


def strategies(population: int) -> dict[str, Callable[[int], Any]]:
    return {
        "Random": lambda seed: Random(seed=seed),
        "RegularizedEvolution": lambda seed: RegularizedEvolution(
            population_size=population, sample_size=max(2, population // 4), seed=seed
        ),
    }


def curve_of(history: Sequence[tuple[int, float]], max_epochs: int) -> np.ndarray:
    """``curve[E]`` = the pick's test accuracy had the search stopped after E epochs
    (E = 0..max_epochs; NaN before the first epoch ended), from ``(epochs, test)`` changes."""
    curve = np.full(max_epochs + 1, math.nan)
    for (spent, test), (following, _) in zip(history, [*history[1:], (max_epochs + 1, 0.0)]):
        if spent <= max_epochs:
            curve[spent : min(following, max_epochs + 1)] = test
    return curve


def run_nasx(
    make_scheduler: Callable[[int], Scheduler],
    make_strategy: Callable[[int], Any],
    curves: LearningCurves,
    workers: int,
    seeds: Sequence[int],
    max_epochs: int,
    decisions: Counter | None = None,
) -> tuple[np.ndarray, list[float]]:
    """Anytime curves (one row per seed) and each run's worker utilisation; ``decisions``
    counts the rungs an AutoASHA chose, ``(grace period, eta)`` (None: not decided by the end)."""
    rows, busy = [], []
    for seed in seeds:
        scheduler = make_scheduler(seed)
        result = simulate(
            scheduler,
            make_strategy(seed),
            curves,
            workers=workers,
            max_epochs=max_epochs,
        )
        rows.append(curve_of(result.history, max_epochs))
        busy.append(result.utilisation)
        if decisions is not None and isinstance(scheduler, AutoASHA):
            d = scheduler.decision
            decisions[None if d is None else (d["grace_period"], d["eta"])] += 1
    return np.array(rows), busy


def run_optuna(
    curves: LearningCurves, pruner_name: str, sampler_name: str, seed: int, max_epochs: int
) -> np.ndarray:
    """Optuna's anytime curve over the table, one trial at a time (ask/tell, in memory).

    The pick after E epochs is Optuna's best complete trial among those that ended by then
    (``study.best_trial``'s rule), else the best value at the highest step any trial reached.
    """
    import optuna

    optuna.logging.set_verbosity(optuna.logging.ERROR)
    epochs = curves.epochs
    pruner: optuna.pruners.BasePruner = (
        optuna.pruners.SuccessiveHalvingPruner(min_resource=1, reduction_factor=3)
        if pruner_name == "SuccessiveHalvingPruner"
        else optuna.pruners.HyperbandPruner(min_resource=1, max_resource=epochs, reduction_factor=3)
    )
    sampler: optuna.samplers.BaseSampler = (
        optuna.samplers.RandomSampler(seed=seed)
        if sampler_name == "Random"
        else optuna.samplers.TPESampler(seed=seed)
    )
    # HyperbandPruner puts a trial in a bracket by a hash of the study name: an unnamed study
    # gets a random name, and the run would not reproduce
    name = f"{pruner_name}-{sampler_name}-{seed}"
    study = optuna.create_study(
        study_name=name, direction="maximize", sampler=sampler, pruner=pruner
    )
    space = curves.search_space()
    sign = 1.0 if curves.direction == "maximize" else -1.0
    history: list[tuple[int, float]] = []
    best_complete: tuple[float, int] | None = None  # (signed val, -number)
    best_partial: tuple[int, float, int] | None = None  # (step, signed val, -number)
    spent = 0
    while spent < max_epochs:
        trial = study.ask()
        arch = {label: trial.suggest_categorical(label, c.grid()) for label, c in space.items()}
        row = curves.row(arch)
        for epoch in range(1, epochs + 1):
            if spent >= max_epochs:
                break
            spent += 1
            value = curves.val[row][epoch - 1]
            trial.report(value, epoch)
            key = (epoch, sign * value, -trial.number)
            pruned = epoch < epochs and trial.should_prune()
            if epoch == epochs:
                study.tell(trial, value)
                if best_complete is None or (sign * value, -trial.number) > best_complete:
                    best_complete = (sign * value, -trial.number)
                    history.append((spent, curves.test[row][-1]))
            elif best_complete is None and (best_partial is None or key > best_partial):
                best_partial = key
                history.append((spent, curves.test[row][-1]))
            if pruned:
                study.tell(trial, state=optuna.trial.TrialState.PRUNED)
                break
    return curve_of(history, max_epochs)


def column_means(runs: np.ndarray) -> np.ndarray:
    """Mean over seeds at each epoch count, ignoring seeds with no pick yet (NaN)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # epoch 0: no seed has a pick
        return np.asarray(np.nanmean(runs, axis=0))


def mean_se(values: np.ndarray) -> tuple[float, float]:
    values = values[~np.isnan(values)]
    if len(values) < 2:
        return (float(values.mean()) if len(values) else math.nan), math.nan
    return float(values.mean()), float(values.std(ddof=1) / math.sqrt(len(values)))


def reaches(mean_curve: np.ndarray, target: float, step: int) -> int | None:
    """The fewest epochs, in steps of ``step``, at which ``mean_curve`` reaches ``target``."""
    for e in range(step, len(mean_curve), step):
        if mean_curve[e] >= target - 1e-9:
            return e
    return None


def stays_from(mean_curve: np.ndarray, target: float, step: int) -> int | None:
    """The fewest epochs, in steps of ``step``, from which ``mean_curve`` stays at or above
    ``target`` through its end (a curve that reaches it and falls back reaches it, but does not
    stay there)."""
    below = np.flatnonzero(~(mean_curve >= target - 1e-9))  # NaN (no pick yet) counts as below
    if not len(below):
        return step
    first_after = int(below[-1]) + 1
    if first_after >= len(mean_curve):
        return None
    return math.ceil(first_after / step) * step


def fraction_label(f: float) -> str:
    return {
        1 / 9: "E/9",
        1 / 6: "E/6",
        1 / 4: "E/4",
        1 / 3: "E/3",
        1 / 2: "E/2",
        2 / 3: "2E/3",
    }.get(f, "E")


def load_curves(args: argparse.Namespace) -> tuple[LearningCurves, str]:
    if args.fast:
        archs = [{"a": a, "b": b, "c": c} for a in range(4) for b in range(4) for c in range(4)]
        return LearningCurves.synthetic(archs, epochs=9, seed=0), "FAST: made-up curves, 64 archs"
    if args.synthetic or not Path(args.table).exists():
        archs = [dict(zip("abcd", v)) for v in itertools.product(range(3), *[range(6)] * 3)]
        return (
            LearningCurves.synthetic(archs, epochs=9, seed=0),
            f"SYNTHETIC curves ({len(archs)} archs): numbers say nothing about real training",
        )
    curves = LearningCurves.from_csv(args.table)
    note = f"table {args.table}: {len(curves.archs)} archs x {curves.epochs} epochs"
    if len(curves.archs) < 500:
        note += " (PARTIAL: issue 31's comparison needs the whole space; finish the table)"
    return curves, note


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--table", default=str(Path(__file__).with_name("learning_curves.csv")))
    p.add_argument("--synthetic", action="store_true", help="made-up curves instead of the table")
    p.add_argument("--fast", action="store_true", help="a small made-up table, 3 seeds (tests)")
    p.add_argument("--seeds", type=int, default=50)
    p.add_argument("--workers", default="1,2,8", help="1 is what Optuna does (one at a time)")
    p.add_argument("--reference-trials", type=int, default=60)
    p.add_argument("--no-optuna", action="store_true")
    p.add_argument("--no-optuna-tpe", action="store_true", help="Optuna's RandomSampler only")
    p.add_argument(
        "--variants", action="store_true", help="ASHA / Hyperband with other rungs (no Optuna)"
    )
    p.add_argument(
        "--auto",
        action="store_true",
        help="full budget, ASHA and AutoASHA (rungs from the curves) only, and issue 44's bar",
    )
    p.add_argument(
        "--schedulers",
        default="",
        help="comma-separated scheduler names to run (default: all; full budget always runs)",
    )
    p.add_argument(
        "--rank-by",
        choices=RANK_BY,
        default="last",
        help="what the rungs of ASHA, Hyperband, SuccessiveHalving and BOHB rank",
    )
    args = p.parse_args(argv)
    known = set(schedulers(1, args.variants, auto=args.auto))
    args.only = {name for name in args.schedulers.split(",") if name}
    unknown = args.only - known
    if unknown:
        p.error(f"--schedulers: unknown {sorted(unknown)}; known: {sorted(known)}")
    if args.fast:
        args.seeds, args.workers, args.reference_trials = 3, "1,8", 8
    return args


def compare_nasx(
    curves: LearningCurves,
    workers: int,
    seeds: Sequence[int],
    ref_epochs: int,
    population: int,
    found: dict[str, Any],
) -> None:
    """Every scheduler x strategy with ``workers`` workers: print the table, fill ``found``."""
    epochs, grid = curves.epochs, [round(f * ref_epochs) for f in FRACTIONS]
    print(f"\n== {workers} simulated worker(s): mean test accuracy of the pick at epochs ==")
    header = " ".join(f"{fraction_label(f):>7s}" for f in FRACTIONS)
    print(f"{'scheduler':18s} {'strategy':21s} {header}   busy")
    listed = schedulers(epochs, found["variants"], found["rank_by"], found["auto"])
    for s_name, make_scheduler in listed.items():
        if found["only"] and s_name not in found["only"] and s_name != "full budget":
            continue  # (the full-budget rows are the reference: always run)
        for st_name, make_strategy in strategies(population).items():
            if s_name == "BOHB" and st_name != "Random":
                continue  # BOHB proposes its own archs: one row
            chosen: Counter = Counter()
            runs, busy = run_nasx(
                make_scheduler, make_strategy, curves, workers, seeds, ref_epochs, chosen
            )
            means = column_means(runs)
            if s_name == "full budget" and st_name == "RegularizedEvolution":
                found["reference"][workers] = float(means[ref_epochs])
            label = OWN_MODEL if s_name == "BOHB" else st_name
            found["nasx"][(workers, s_name, label)] = {
                "means": [float(means[e]) for e in grid],
                "se": [mean_se(runs[:, e])[1] for e in grid],
                "curve": means,
                "runs": runs,  # one row per seed: the paired differences of issue 44's bar
                "chosen": chosen,
            }
            if s_name == "ASHA":
                found["utilisation"][(workers, st_name)] = (min(busy), statistics.mean(busy))
            row = " ".join(f"{means[e]:7.2f}" for e in grid)
            print(f"{s_name:18s} {label:21s} {row}  {statistics.mean(busy):5.1%}")
    ref = found["reference"][workers]
    print(
        f"reference: full-budget RegularizedEvolution at E = {ref_epochs} epochs, mean test {ref:.2f}"
    )
    print(
        "fewest epochs (steps of one full training) at which the mean reaches it, and from "
        "which it stays there through E:"
    )
    for (w, s_name, label), data in found["nasx"].items():
        if w == workers:
            e = data["reaches"] = reaches(data["curve"], ref, epochs)
            kept = data["stays"] = stays_from(data["curve"], ref, epochs)
            at = "never" if e is None else f"{e} ({e / ref_epochs:.2f} E)"
            stays = "never" if kept is None else f"{kept} ({kept / ref_epochs:.2f} E)"
            print(f"  {s_name:18s} {label:21s} {at:16s} stays from {stays}")


def optuna_available() -> bool:
    try:
        import optuna  # noqa: F401
    except ImportError:
        print("\nOptuna is not installed: its pruners are not compared")
        return False
    return True


def compare_optuna(
    curves: LearningCurves, seeds: Sequence[int], ref_epochs: int, tpe: bool, found: dict[str, Any]
) -> None:
    grid = [round(f * ref_epochs) for f in FRACTIONS]
    print("\n== Optuna over the same table (one trial at a time), mean test of its pick ==")
    print(
        f"{'pruner':24s} {'sampler':8s} " + " ".join(f"{fraction_label(f):>7s}" for f in FRACTIONS)
    )
    for pruner in ("SuccessiveHalvingPruner", "HyperbandPruner"):
        for sampler in ("Random", "TPE") if tpe else ("Random",):
            runs = np.array([run_optuna(curves, pruner, sampler, s, ref_epochs) for s in seeds])
            means = column_means(runs)
            found["optuna"][(pruner, sampler)] = {
                "means": [float(means[e]) for e in grid],
                "se": [mean_se(runs[:, e])[1] for e in grid],
            }
            print(f"{pruner:24s} {sampler:8s} " + " ".join(f"{means[e]:7.2f}" for e in grid))


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Run the comparison, print it, and return its figures (for the test of ``--fast``)."""
    args = parse_args(argv)
    t0 = time.monotonic()
    curves, note = load_curves(args)
    seeds, ref_epochs = list(range(args.seeds)), args.reference_trials * curves.epochs
    print(note)
    print(
        f"{args.seeds} seeds; E = {args.reference_trials} full trainings = {ref_epochs} epochs; "
        f"oracle (best test at the full budget) {curves.best_test():.2f}; "
        f"rungs rank by {args.rank_by!r}; "
        f"machine: {platform.machine()}, Python {platform.python_version()}"
    )
    found: dict[str, Any] = {"reference": {}, "nasx": {}, "optuna": {}, "utilisation": {}}
    found["variants"] = args.variants
    found["auto"] = args.auto
    found["rank_by"] = args.rank_by
    found["only"] = args.only
    population = population_for(args.reference_trials)
    for workers in [int(w) for w in args.workers.split(",")]:
        compare_nasx(curves, workers, seeds, ref_epochs, population, found)
    no_optuna = args.no_optuna or args.variants or args.auto or not optuna_available()
    if not no_optuna:
        compare_optuna(curves, seeds, ref_epochs, not args.no_optuna_tpe, found)
    if args.auto:
        print_auto_goals(found, ref_epochs, curves.epochs)
    else:
        print_goals(found, ref_epochs, no_optuna)
    print(f"\n({time.monotonic() - t0:.0f} s)")
    return found


def print_goals(found: dict[str, Any], ref_epochs: int, no_optuna: bool) -> None:
    """Issue 31's three goals, each with its numbers."""
    print("\n== issue 31's bar ==")
    for (workers, s_name, label), data in found["nasx"].items():
        if s_name.startswith(("ASHA", "Hyperband")) and label == "Random":
            e, ref = data.get("reaches"), found["reference"][workers]
            met = e is not None and e <= ref_epochs / 3
            at = "never within E" if e is None else f"at {e} epochs = {e / ref_epochs:.2f} E"
            kept = data.get("stays")
            if e is not None:
                at += " and stays " + ("below by E" if kept is None else f"from {kept}")
            print(
                f"[{'met' if met else 'NOT met'}] {s_name} + Random, {workers} worker(s), reaches "
                f"full-budget RE's mean {ref:.2f} {at} (goal: <= E/3 = {ref_epochs / 3:.0f})"
            )
    if not no_optuna:
        pairs = [
            ("ASHA stopping", "SuccessiveHalvingPruner"),
            ("ASHA", "SuccessiveHalvingPruner"),
            ("Hyperband", "HyperbandPruner"),
        ]
        for workers in sorted(found["reference"]):
            for ours, theirs in pairs:
                if (workers, ours, "Random") not in found["nasx"]:
                    continue  # left out by --schedulers
                mine = found["nasx"][(workers, ours, "Random")]
                other = found["optuna"][(theirs, "Random")]
                diffs = [a - b for a, b in zip(mine["means"], other["means"])]
                ses = [math.hypot(a, b) for a, b in zip(mine["se"], other["se"])]
                worst = min(range(len(diffs)), key=lambda i: diffs[i])
                met = all(d >= 0 for d in diffs)
                print(
                    f"[{'met' if met else 'NOT met'}] {ours} + Random ({workers} worker(s)) vs "
                    f"Optuna {theirs} + RandomSampler at equal epochs: differences "
                    + " ".join(f"{d:+.2f}" for d in diffs)
                    + f" (worst {diffs[worst]:+.2f} +- {ses[worst]:.2f} s.e. at "
                    f"{fraction_label(FRACTIONS[worst])})"
                )
    for (workers, strategy), (low, mean) in found["utilisation"].items():
        if workers == 8:
            print(
                f"[{'met' if low >= 0.95 else 'NOT met'}] ASHA + {strategy}, 8 workers: "
                f"utilisation mean {mean:.1%}, lowest seed {low:.1%} (goal: >= 95%)"
            )


def paired(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    """Mean and standard error of the per-seed differences ``a - b`` (seeds with no pick yet
    on either side left out)."""
    return mean_se(np.asarray(a, dtype=float) - np.asarray(b, dtype=float))


def print_auto_goals(found: dict[str, Any], ref_epochs: int, epochs: int) -> None:
    """Issue 44 item 3's bar for AutoASHA, each line with its paired difference over the seeds
    (the same seeds drive every row) and that difference's standard error."""
    print("\n== issue 44's bar: AutoASHA's rungs from the curves ==")
    half, third = ref_epochs // 2, ref_epochs // 3
    for (workers, s_name, label), data in found["nasx"].items():
        if s_name != "AutoASHA":
            continue
        ref = found["reference"][workers]
        reference = found["nasx"][(workers, "full budget", "RegularizedEvolution")]["runs"]
        runs = data["runs"]
        e, kept = data.get("reaches"), data.get("stays")
        at = "never within E" if e is None else f"at {e} epochs = {e / ref_epochs:.2f} E"
        if e is not None:
            at += " and stays " + (
                "below by E" if kept is None else f"from {kept / ref_epochs:.2f} E"
            )
        d, se = paired(runs[:, half], reference[:, ref_epochs])
        print(
            f"[{'met' if e is not None and e <= half else 'NOT met'}] AutoASHA + {label}, "
            f"{workers} worker(s), reaches full-budget RE's mean {ref:.2f} {at} (goal: <= E/2 "
            f"= {half}); at E/2 minus RE at E, paired: {d:+.2f} +- {se:.2f}"
        )
        asha = found["nasx"].get((workers, "ASHA", label))
        if asha is not None:
            d, se = paired(runs[:, third], asha["runs"][:, third])
            print(
                f"[{'met' if d > 0 else 'NOT met'}] AutoASHA + {label}, {workers} worker(s), "
                f"at E/3 minus ASHA (rungs {', '.join(map(str, asha_rungs(epochs)))}) at E/3, "
                f"paired: {d:+.2f} +- {se:.2f} ({np.nanmean(runs[:, third]):.2f} against "
                f"{np.nanmean(asha['runs'][:, third]):.2f})"
            )
        chosen = ", ".join(
            f"{'undecided' if k is None else f'{k[0]}/{k[1]}'}: {n}"
            for k, n in sorted(data["chosen"].items(), key=lambda kv: (-kv[1], str(kv[0])))
        )
        print(f"      rungs chosen (grace period/eta: seeds): {chosen}")


def asha_rungs(epochs: int) -> list[int]:
    """The default ASHA's rungs (1, 3, 9, ... up to ``epochs``)."""
    return list(ASHA(1, epochs, eta=3).budgets)


if __name__ == "__main__":
    main()
