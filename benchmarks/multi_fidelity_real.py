"""Schedulers against full-budget search with real training (no table): does the table's verdict hold?

    OMP_NUM_THREADS=1 PYTHONPATH=. python benchmarks/multi_fidelity_real.py \
        [--seeds 3 --first-seed 0 --trainings 16 --jobs 1 --save runs.json] [--load runs.json ...]

Issue 31's bar asks for the comparison of ``benchmarks/multi_fidelity.py`` once more with real
training: real ``NasExperiment`` runs through the public API, on the space and data recipe of
``benchmarks/learning_curves.py`` (imported, not copied: ``CurveSpace``, ``load_data``,
``accuracy``, 4,000 Fashion-MNIST training images, Adam at 2e-3 on a cosine over 9 epochs,
batch 64, one CPU thread), with
the sequential trial loop:

- full-budget random search and regularized evolution (no scheduler: every trial trains 9
  epochs), ASHA and Hyperband with random search as the proposer (rungs 1, 3, 9, eta 3: the
  scheduler settings of ``multi_fidelity.py``, imported from it), for ``--seeds`` seeds;
- every search stops once it has trained E = ``--trainings`` x 9 epochs (a stop() from the
  evaluator: the job in flight finishes, so a run may train a few epochs past E);
- the cost is the epochs **actually trained**, counted in the store (the ``intermediate`` lines
  of every job in ``trials/<id>/trial.log``: one report per epoch), and checked against the
  evaluator's own count. The evaluator continues a promoted trial from the checkpoint its
  previous job saved (``checkpoint=``: model, optimizer, step and random generators), so it
  pays only the epochs above the budget reached; with ``--restart`` it ignores the checkpoint
  and trains the first epochs again, as an evaluator that cannot continue does. Both
  accountings are printed: **trained** (every epoch trained) and **new** (an arch's epochs
  above the budget it had already reached); they agree unless ``--restart``. Runs go on until E
  new epochs, so both curves reach E;
- the pick after e epochs is the simulator's rule: the trial with the highest budget reached
  and, among those, the best validation accuracy there; scored by its test accuracy after its
  9th epoch (measured in the run; a pick below 9 epochs has none yet: NaN);
- beside each method, what ``simulate`` predicts on ``learning_curves.csv`` for the same
  scheduler, strategy, one worker and E (``--sim-seeds`` seeds: mean and spread);
- and how far one real training lands from the table's for the same arch (the archs the runs
  trained to 9 epochs): the noise that a 3-seed comparison has to beat.

Real runs draw their own training noise (each trial is seeded ``seed + trial id``), so they check
the table's conclusion on curves it has never seen. ``--load`` prints saved runs again (several
files: runs of other seeds, made by other processes with ``--first-seed``, printed together).
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing as mp
import os
import platform
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import learning_curves  # noqa: E402  (the table's space, data and accuracy)
import multi_fidelity  # noqa: E402  (the table comparison's schedulers and strategies)

from nasx.evaluator.checkpoint import restore_rng_state, rng_state  # noqa: E402
from nasx.experiment import NasExperiment  # noqa: E402
from nasx.experiment.schedulers import LearningCurves, Scheduler, simulate  # noqa: E402
from nasx.space import ModelSpace  # noqa: E402
from nasx.trial import arch_key, best_trials, status_counts  # noqa: E402

EPOCHS = 9  # the table's full budget
#: (scheduler, strategy) pairs compared; scheduler names are multi_fidelity.schedulers()'s
METHODS = (
    ("full budget", "Random"),
    ("full budget", "RegularizedEvolution"),
    ("ASHA", "Random"),
    ("Hyperband", "Random"),
)
FRACTIONS = (1 / 3, 2 / 3, 1.0)
INTERMEDIATE = re.compile(r"intermediate \d+: ")

#: per-epoch training: ``(model, arch, budget, checkpoint) -> (epoch, val, test or None)``
Training = Callable[..., Iterator[tuple[int, float, float | None]]]


@dataclass
class EpochLog:
    """Every epoch the evaluator trained, in order (sequential runs: the order they ran in).

    ``records``: ``(arch key, epoch of its job, val, test or None)``. An epoch is **new** when it
    is above the largest epoch its arch had reached before (a restart trains the first ones
    again); ``new`` counts those.

        >>> log = EpochLog()
        >>> for e in (1, 1, 2, 3): log.add('a', e, 50.0 + e, None)
        >>> len(log.records), log.new
        (4, 3)
    """

    records: list[tuple[str, int, float, float | None]] = field(default_factory=list)
    reached: dict[str, int] = field(default_factory=dict)
    new: int = 0

    def add(self, arch: str, epoch: int, val: float, test: float | None) -> None:
        self.records.append((arch, epoch, val, test))
        if epoch > self.reached.get(arch, 0):
            self.reached[arch] = epoch
            self.new += 1


def anytime_history(
    records: Sequence[tuple[str, int, float, float | None]], accounting: str, max_budget: int
) -> list[tuple[int, float]]:
    """``(epochs spent, pick's test)`` each time the pick changed, the simulator's rule: the pick
    is the arch with the largest (budget reached, validation there, earlier first); its test is
    the one measured after ``max_budget`` epochs (NaN below it). ``accounting``: ``'trained'``
    counts every epoch, ``'new'`` only an arch's epochs above what it had reached.

        >>> recs = [('a', 1, 60.0, None), ('b', 1, 70.0, None), ('b', 1, 70.0, None),
        ...         ('b', 2, 75.0, 74.0)]
        >>> anytime_history(recs, 'trained', 2)
        [(1, nan), (2, nan), (4, 74.0)]
        >>> anytime_history(recs, 'new', 2)
        [(1, nan), (2, nan), (3, 74.0)]
    """
    if accounting not in ("trained", "new"):
        raise ValueError(f"accounting must be 'trained' or 'new', got {accounting!r}")
    reached: dict[str, int] = {}
    first_seen: dict[str, int] = {}
    best: tuple[int, float, int] | None = None
    best_arch, history, spent = None, [], 0
    for arch, epoch, val, test in records:
        first_seen.setdefault(arch, len(first_seen))
        is_new = epoch > reached.get(arch, 0)
        if accounting == "trained" or is_new:
            spent += 1
        if not is_new:
            continue  # the same epoch trained again: the pick cannot change
        reached[arch] = epoch
        key = (epoch, val, -first_seen[arch])
        if best is None or key > best:
            score = test if epoch == max_budget and test is not None else math.nan
            if arch != best_arch or epoch == max_budget:
                history.append((spent, score))
            best, best_arch = key, arch
    return history


def store_epochs(workdir: Path) -> int:
    """Epochs trained, counted in the store: the ``intermediate`` lines of every job in every
    trial's log (one report per epoch; a promoted trial's log holds each of its jobs)."""
    return sum(
        len(INTERMEDIATE.findall(log.read_text()))
        for log in (workdir / "trials").glob("*/trial.log")
    )


def make_scheduler(name: str, seed: int) -> Scheduler | None:
    """``name``'s scheduler as ``multi_fidelity.py`` makes it; None for a full-budget search
    (no scheduler: the evaluator trains its full length, as a user without one runs it)."""
    return None if name == "full budget" else multi_fidelity.schedulers(EPOCHS)[name](seed)


def make_strategy(name: str, seed: int, trainings: int) -> Any:
    population = multi_fidelity.population_for(trainings)
    return multi_fidelity.strategies(population)[name](seed)


def run_search(
    space: ModelSpace,
    training: Training,
    scheduler: Scheduler | None,
    strategy: Any,
    seed: int,
    limit: int,
    workdir: Path,
    resume: bool = True,
) -> dict[str, Any]:
    """One real ``NasExperiment`` until ``limit`` new epochs were trained; what it did.
    ``resume=False``: the evaluator ignores its checkpoint, so promoted trials start over."""
    log = EpochLog()
    experiment: list[NasExperiment] = []

    def evaluate(model, arch, budget=None, report=None, checkpoint=None):
        metrics: dict[str, float] = {}
        jobs = training(model, arch, budget or EPOCHS, checkpoint if resume else None)
        for epoch, val, test in jobs:
            log.add(arch_key(arch), epoch, val, test)
            if log.new >= limit:
                experiment[0].stop()  # the job in flight ends as the scheduler says
            metrics = {"default": val, **({"test": test} if test is not None else {})}
            if report is not None:
                report(val)
        return metrics

    exp = NasExperiment(
        space, evaluate, strategy, workdir=workdir, seed=seed, progress=False, scheduler=scheduler
    )
    experiment.append(exp)
    start, cpu = time.monotonic(), time.process_time()
    exp.run()
    trials = exp.trials()
    (best,) = best_trials(trials, "maximize", 1)
    return {
        "records": log.records,
        "store_epochs": store_epochs(workdir),
        "budget_sum": sum(t.budget or EPOCHS for t in trials if t.status != "failed"),
        "statuses": {k: v for k, v in status_counts(trials).items() if v},
        "store_pick": {"arch": best.arch, "val": best.metric, "test": best.metrics.get("test")},
        "wall_s": time.monotonic() - start,
        "cpu_s": time.process_time() - cpu,
        "stop_reason": exp.stop_reason,
    }


def real_training(data: dict, batch: int, schedule: str = "cosine") -> Training:
    """The table's recipe (``learning_curves.train_one``), one epoch at a time, seeded by the
    trial (the loop seeds torch before building the model): ``(epoch, val, test or None)``
    after each epoch, test accuracy after the last of the full budget. The learning rate follows
    the table's ``schedule`` over the full budget (``learning_curves.learning_rate``), whatever
    the job's budget: a job of 3 epochs trains the first third of the 9-epoch cosine, as the
    table's epoch-3 row did.

    Given a :class:`~nasx.evaluator.checkpoint.Checkpoint` holding a state, it continues from it
    (model, optimizer, step, random generators: the data order an uninterrupted run would draw)
    and trains only the epochs above it; it saves its state at the end of the job."""

    def training(model, arch, budget, checkpoint=None):
        x, y = data["train"]
        opt = torch.optim.Adam(model.parameters(), lr=learning_curves.LR)
        factor = learning_curves.learning_rate(schedule, EPOCHS, math.ceil(len(x) / batch))
        state = checkpoint.load() if checkpoint is not None else None
        first, step = 1, 0
        if state is not None:
            model.load_state_dict(state["model"])
            opt.load_state_dict(state["opt"])
            restore_rng_state(state["rng"])
            first, step = state["epoch"] + 1, state["step"]
        for epoch in range(first, budget + 1):
            for idx in torch.randperm(len(x)).split(batch):
                for group in opt.param_groups:
                    group["lr"] = learning_curves.LR * factor(step)
                step += 1
                opt.zero_grad(set_to_none=True)
                F.cross_entropy(model(x[idx]), y[idx]).backward()
                opt.step()
            val = learning_curves.accuracy(model, *data["val"])
            test = learning_curves.accuracy(model, *data["test"]) if epoch == EPOCHS else None
            yield epoch, val, test
        if checkpoint is not None:
            checkpoint.save(
                {
                    "model": model.state_dict(),
                    "opt": opt.state_dict(),
                    "rng": rng_state(),
                    "epoch": budget,
                    "step": step,
                }
            )

    return training


def one_run(job: tuple[str, str, int, int, argparse.Namespace]) -> dict[str, Any]:
    """(scheduler, strategy, seed) trained for real: the worker process's whole job."""
    s_name, st_name, seed, limit, args = job
    torch.set_num_threads(1)
    data = learning_curves.load_data(args)
    with tempfile.TemporaryDirectory(prefix="mf_real_") as tmp:
        run = run_search(
            learning_curves.CurveSpace(),
            real_training(data, args.batch, args.schedule),
            make_scheduler(s_name, seed),
            make_strategy(st_name, seed, args.trainings),
            seed,
            limit,
            Path(tmp) / "exp",
            resume=not args.restart,
        )
    run.update(scheduler=s_name, strategy=st_name, seed=seed)
    print(
        f"  done: {s_name} + {st_name}, seed {seed}: {len(run['records'])} epochs trained "
        f"in {run['wall_s'] / 60:.1f} min ({run['cpu_s'] / 60:.1f} CPU-min)",
        flush=True,
    )
    return run


def curve(run: dict[str, Any], accounting: str, total: int) -> list[float]:
    """The pick's test accuracy after ``e`` epochs, ``e = 0..total``."""
    records = [tuple(r) for r in run["records"]]
    return list(multi_fidelity.curve_of(anytime_history(records, accounting, EPOCHS), total))


def simulated(
    curves: LearningCurves, s_name: str, st_name: str, seeds: int, trainings: int
) -> list[list[float]]:
    """The simulator's test of the pick at each fraction of E, one row per seed."""
    total, rows = trainings * EPOCHS, []
    for seed in range(seeds):
        scheduler = multi_fidelity.schedulers(EPOCHS)[s_name](seed)
        result = simulate(
            scheduler, make_strategy(st_name, seed, trainings), curves, max_epochs=total
        )
        rows.append([result.test_at(round(f * total)) for f in FRACTIONS])
    return rows


def mean_sd(values: Sequence[float]) -> str:
    """Mean +- sd of the values that are known; ``(k of n)`` when some are NaN (a pick below
    the full budget has no test accuracy yet)."""
    known = [v for v in values if not math.isnan(v)]
    if not known:
        return "   n/a      "
    sd = statistics.stdev(known) if len(known) > 1 else math.nan
    partial = f" ({len(known)} of {len(values)})" if len(known) < len(values) else ""
    return f"{statistics.mean(known):6.2f} +-{sd:4.2f}{partial}"


def report(runs: list[dict[str, Any]], args: argparse.Namespace) -> None:
    """Print the comparison: real runs by both accountings, the simulator beside them."""
    total = args.trainings * EPOCHS
    grid = [round(f * total) for f in FRACTIONS]
    table = Path(args.table)
    curves = LearningCurves.from_csv(table) if table.exists() else None
    header = "  ".join(f"{label:>20s}" for label in ("E/3", "2E/3", "E"))
    print(f"\n== test accuracy (%) of the pick at epochs; mean +- sd over seeds; E = {total} ==")
    print(f"{'scheduler':12s} {'strategy':21s} {'what':24s} {header}")
    for s_name, st_name in METHODS:
        mine = [r for r in runs if (r["scheduler"], r["strategy"]) == (s_name, st_name)]
        if not mine:
            continue
        lines = [("real, trained epochs", "trained")]
        if s_name != "full budget":
            lines.append(("real, new epochs", "new"))
        for what, accounting in lines:
            rows = [curve(r, accounting, total) for r in mine]
            cells = "  ".join(f"{mean_sd([row[e] for row in rows]):>20s}" for e in grid)
            print(f"{s_name:12s} {st_name:21s} {what + f' ({len(rows)} seeds)':24s} {cells}")
        if curves is not None:
            sim = simulated(curves, s_name, st_name, args.sim_seeds, args.trainings)
            cells = "  ".join(f"{mean_sd([row[i] for row in sim]):>20s}" for i in range(len(grid)))
            print(f"{'':12s} {'':21s} {f'simulator ({len(sim)} seeds)':24s} {cells}")
    print("\n== each run: epochs trained (store / evaluator / new), trials, pick ==")
    for r in runs:
        records = [tuple(x) for x in r["records"]]
        final = anytime_history(records, "trained", EPOCHS)
        agrees = (
            final
            and r["store_pick"]["test"] is not None
            and (math.isclose(final[-1][1], r["store_pick"]["test"]))
        )
        new = EpochLog()
        for rec in records:
            new.add(*rec)
        print(
            f"{r['scheduler']:12s} {r['strategy']:21s} seed {r['seed']}: "
            f"{r['store_epochs']} / {len(records)} / {new.new} epochs, "
            f"budgets reached sum {r['budget_sum']}, {r['statuses']}; pick test "
            f"{r['store_pick']['test']} (val {r['store_pick']['val']:.2f})"
            f"{'' if agrees else '  [store pick differs from the anytime pick]'}; "
            f"{r['wall_s'] / 60:.1f} min wall, {r['cpu_s'] / 60:.1f} CPU-min"
        )
    if curves is not None:
        replication(runs, curves)


def ranks(values: Sequence[float]) -> list[float]:
    """Each value's rank (0 = smallest; ties share their mean rank): Spearman's input.

    >>> ranks([3.0, 1.0, 3.0, 2.0])
    [2.5, 0.0, 2.5, 1.0]
    """
    order = sorted(values)
    return [order.index(v) + (order.count(v) - 1) / 2 for v in values]


def replication(runs: list[dict[str, Any]], curves: LearningCurves) -> None:
    """How far one real training's final test accuracy lands from the table's, same arch."""
    finals: dict[str, float] = {}
    for r in runs:
        for arch, epoch, _val, test in r["records"]:
            if epoch == EPOCHS and test is not None:
                finals.setdefault(arch, test)
    real = list(finals.values())
    table = [curves.test[curves.row(json.loads(arch))][-1] for arch in finals]
    if len(real) < 3:
        return
    diffs = [a - b for a, b in zip(real, table)]
    print(
        f"\n== real training vs the table, same arch, test after {EPOCHS} epochs ==\n"
        f"{len(diffs)} archs: real - table = {statistics.mean(diffs):+.2f} on average, "
        f"sd {statistics.stdev(diffs):.2f} points, median |difference| "
        f"{statistics.median(abs(d) for d in diffs):.2f} (two trainings' noise together); "
        f"correlation of real and table {statistics.correlation(real, table):.2f}, "
        f"of their ranks {statistics.correlation(ranks(real), ranks(table)):.2f}; "
        f"the table's spread over these archs: sd {statistics.stdev(table):.2f}"
    )


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--trainings", type=int, default=16, help="E = this many x 9 epochs")
    p.add_argument("--jobs", type=int, default=1, help="runs in parallel (one thread each)")
    p.add_argument("--sim-seeds", type=int, default=100)
    p.add_argument("--table", default=str(HERE / "learning_curves.csv"))
    p.add_argument("--save", default=None, help="write every run's records (JSON) here")
    p.add_argument("--first-seed", type=int, default=0, help="seeds first-seed, first-seed + 1...")
    p.add_argument("--only", nargs="+", help="only these schedulers ('full budget', ASHA, ...)")
    p.add_argument("--load", nargs="+", help="print the runs saved by --save; train nothing")
    p.add_argument("--data-dir", default=None)
    p.add_argument("--train", type=int, default=4000)
    p.add_argument("--val", type=int, default=2000)
    p.add_argument("--test", type=int, default=2000)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument(
        "--restart",
        action="store_true",
        help="the evaluator ignores its checkpoint: promoted trials train from scratch again",
    )
    p.add_argument(
        "--schedule", choices=("constant", "cosine"), default="cosine", help="as the table's"
    )
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> list[dict[str, Any]]:
    args = parse_args(argv)
    if args.load:
        saved = [json.loads(Path(path).read_text()) for path in args.load]
        # one run per (scheduler, strategy, seed): a seed two processes both ran counts once
        unique = {
            (r["scheduler"], r["strategy"], r["seed"]): r for one in saved for r in one["runs"]
        }
        runs = list(unique.values())
        # the saved runs' settings, but this command's reporting options (--sim-seeds, --table)
        reporting = {key: getattr(args, key) for key in ("sim_seeds", "table", "load")}
        args = argparse.Namespace(**{**vars(args), **saved[0]["args"], **reporting})
        if {one["args"]["trainings"] for one in saved} != {args.trainings}:
            raise SystemExit("--load: the files were run with different --trainings")
        report(runs, args)
        return runs
    total = args.trainings * EPOCHS
    print(
        f"E = {args.trainings} trainings x {EPOCHS} epochs = {total} epochs per run, "
        f"{args.seeds} seeds, {len(METHODS)} methods, {args.jobs} job(s) in parallel; "
        f"data {args.train}/{args.val}/{args.test}; {platform.machine()}, "
        f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}, Python "
        f"{platform.python_version()}, torch {torch.__version__}",
        flush=True,
    )
    # Hyperband's runs last: on a busy machine the three others are complete first
    jobs = [
        (s, st, seed, total, args)
        for first in (True, False)
        for seed in range(args.first_seed, args.first_seed + args.seeds)
        for s, st in METHODS
        if (s != "Hyperband") == first and (not args.only or s in args.only)
    ]
    start, runs = time.monotonic(), []
    saved_args = {k: v for k, v in vars(args).items() if k not in ("save", "load")}
    with mp.get_context("spawn").Pool(args.jobs) as pool:
        for run in pool.imap_unordered(one_run, jobs):
            runs.append(run)
            if args.save:  # after every run: a killed benchmark keeps the runs it finished
                Path(args.save).write_text(json.dumps({"args": saved_args, "runs": runs}))
    print(f"({(time.monotonic() - start) / 60:.1f} min wall, load {os.getloadavg()[0]:.1f})")
    report(runs, args)
    return runs


if __name__ == "__main__":
    main()
