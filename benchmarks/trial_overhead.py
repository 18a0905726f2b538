"""Benchmark: per-trial overhead of NasExperiment, sequential and with a process pool, and throughput
scaling with the number of workers.

    PYTHONPATH=. python benchmarks/trial_overhead.py [--repeats 5] [--trials 200]

1. Sequential overhead: a trivial evaluator (returns a constant) on a tiny space. The figure is the
   experiment's wall time per trial (strategy, validation, SQLite writes, trial folder and log,
   model construction); the reference is the bare loop that only builds each model under
   ``model_context`` and calls the evaluator, in this process.
2. Process-pool overhead: the same trivial trials on 2 workers; wall time per trial, worker start
   included, and the steady-state time per trial (over the second half of the trials).
3. Scaling: trials doing a fixed amount of CPU work (~50 ms of Python); steady-state throughput
   (second half of the trials) on 1 and N workers, and the sequential in-process throughput.

Every figure is the median of ``--repeats`` runs. Targets (from the issue): sequential < 5 ms per
trial; process pool < 200 ms per trial with near-linear scaling up to the number of cores.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

import torch.nn as nn

from nasx.experiment import NasExperiment
from nasx.space import LayerChoice, ModelSpace, choice, model_context
from nasx.strategy import Random


class TinySpace(ModelSpace):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, choice("width", [2, 4, 8, 16]))
        self.act = LayerChoice([nn.ReLU(), nn.Tanh()], label="act")


def trivial(model) -> float:
    return 1.0


WORK_ITERS = 1


def cpu_work(model) -> float:
    """A fixed amount of pure-Python work (calibrated to ~50 ms on an idle core)."""
    total = 0
    for i in range(WORK_ITERS):
        total += i * i % 7
    return float(total % 3)


def raw_work(iters: int) -> int:
    """The same work as :func:`cpu_work`, for the reference pool."""
    total = 0
    for i in range(iters):
        total += i * i % 7
    return total % 3


def raw_pool_throughput(workers: int, n_tasks: int, iters: int) -> float:
    """Reference: tasks/s of the same work on a warm ``concurrent.futures.ProcessPoolExecutor``."""
    from concurrent.futures import ProcessPoolExecutor as StdPool

    with StdPool(workers) as pool:
        list(pool.map(raw_work, [iters] * workers))  # start the processes
        t = time.perf_counter()
        list(pool.map(raw_work, [iters] * n_tasks))
        return n_tasks / (time.perf_counter() - t)


def calibrate(seconds: float = 0.05) -> int:
    n = 200_000
    t = time.perf_counter()
    total = 0
    for i in range(n):
        total += i * i % 7
    per_iter = (time.perf_counter() - t) / n
    return max(1, int(seconds / per_iter))


def run_experiment(
    evaluator, n_trials: int, workers: int, execution: str | None = None
) -> tuple[float, float, float]:
    """(wall seconds, seconds until the first trial finished (worker start), trials/s over the
    second half of the trials (steady state, worker start excluded)) of one experiment."""
    with tempfile.TemporaryDirectory() as d:
        exp = NasExperiment(
            TinySpace(),
            evaluator,
            Random(dedup=False, seed=0),
            workdir=d,
            max_trials=n_trials,
            max_concurrent_trials=workers,
            execution=execution,
        )
        t0 = time.time()
        exp.run()
        wall = time.time() - t0
        trials = exp.trials()
        assert len(trials) == n_trials and all(t.status == "succeeded" for t in trials), (
            exp.trial_table()
        )
        ends = sorted(tr.end_time for tr in trials)
        half = n_trials // 2
        return wall, ends[0] - t0, (n_trials - 1 - half) / (ends[-1] - ends[half])


def bare_loop(evaluator, n_trials: int) -> float:
    """Reference: build each model under model_context and evaluate it, nothing else."""
    space = TinySpace()
    from nasx.space import search_space

    ss = search_space(space)
    import random

    rng = random.Random(0)
    t = time.perf_counter()
    for _ in range(n_trials):
        with model_context(ss.sample(rng)):
            evaluator(TinySpace())
    return time.perf_counter() - t


def median(values):
    return statistics.median(values)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--trials", type=int, default=200, help="trials per sequential run")
    parser.add_argument("--pool-trials", type=int, default=100, help="trials per process-pool run")
    parser.add_argument("--scaling-trials", type=int, default=80)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    args = parser.parse_args()
    print(f"machine: {os.cpu_count()} CPU cores; medians of {args.repeats} runs")

    # 1. sequential
    seq = median(
        [run_experiment(trivial, args.trials, 1)[0] / args.trials for _ in range(args.repeats)]
    )
    ref = median([bare_loop(trivial, args.trials) / args.trials for _ in range(args.repeats)])
    print(
        f"sequential: {seq * 1e3:.2f} ms per trivial trial (target < 5 ms); bare build+evaluate loop "
        f"{ref * 1e3:.3f} ms; framework overhead {(seq - ref) * 1e3:.2f} ms per trial, ratio {seq / ref:.1f}x"
    )

    # 2. process pool, trivial trials
    runs = [
        run_experiment(trivial, args.pool_trials, args.workers, "process")
        for _ in range(args.repeats)
    ]
    wall = median([w for w, _, _ in runs])
    first = median([f for _, f, _ in runs])
    steady = median([1 / tp for _, _, tp in runs])
    print(
        f"process pool ({args.workers} workers): {wall / args.pool_trials * 1e3:.1f} ms per trivial trial "
        f"over {args.pool_trials} trials, worker start included (target < 200 ms); first result after "
        f"{first:.2f} s; steady state {steady * 1e3:.2f} ms per trial; "
        f"ratio to sequential {wall / args.pool_trials / seq:.1f}x"
    )

    # 3. scaling with CPU-bound trials
    global WORK_ITERS
    WORK_ITERS = calibrate()
    n = args.scaling_trials
    seq_tp = median([run_experiment(cpu_work, n, 1)[2] for _ in range(args.repeats)])
    line = f"scaling ({n} trials of ~50 ms CPU each): sequential {seq_tp:.1f} trials/s"
    one = raw_one = None
    for workers in sorted({1, args.workers}):
        runs = [run_experiment(cpu_work, n, workers, "process") for _ in range(args.repeats)]
        tp = median([n / w for w, _, _ in runs])
        tp_steady = median([t for _, _, t in runs])  # second half of the trials: workers started
        raw = median(
            [raw_pool_throughput(workers, n // 2, WORK_ITERS) for _ in range(args.repeats)]
        )
        one, raw_one = one or tp_steady, raw_one or raw
        line += (
            f"\n  {workers} worker(s): {tp:.1f} trials/s with worker start, {tp_steady:.1f} in steady "
            f"state = {tp_steady / one:.2f}x of 1 worker; reference concurrent.futures pool "
            f"{raw:.1f} tasks/s = {raw / raw_one:.2f}x of 1 process; nasx/reference {tp_steady / raw:.2f}"
        )
    print(line)


if __name__ == "__main__":
    main()
