"""Benchmark: how busy ASHA keeps the workers of a process pool (or Ray) when each report asks
the experiment's scheduler and waits for its answer.

    PYTHONPATH=. python benchmarks/scheduled_workers.py [--epoch 0.05] [--trials 60] [--workers 2]
        [--execution process|ray] [--repeats 3]

A trivial evaluator: each epoch sleeps ``--epoch`` seconds then reports the arch's value (a
fixed table), so a job's length is its budget and nothing else. It journals, in the worker, when
each job began and ended and how long each ``report`` waited for the scheduler's answer.

- **utilisation**: the workers' time inside jobs over ``workers x`` the span from the first
  job's start to the last job's end (ASHA's promise: no worker waits for a rung to fill; what
  is left is the experiment's own work between a job's end and the next one's start).
- **report round trip**: a report's wait for its answer (the worker sends it, the experiment's
  process answers while it waits for results), median and 95th percentile.

Every figure is the median over ``--repeats`` runs.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

import torch.nn as nn

from nasx.experiment import NasExperiment
from nasx.experiment.schedulers import ASHA
from nasx.space import ModelSpace, choice
from nasx.strategy import Random


class Net(ModelSpace):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, choice("width", list(range(1, 201))))


class Journaled:
    """Sleeps ``epoch`` s per budget unit and reports ``width / 200``; journals each job's
    start and end and each report's wait, a job the scheduler stopped (``report`` raised)
    too (one ``write`` per line: the workers' lines never mix)."""

    def __init__(self, journal: str, epoch: float):
        self.journal, self.epoch = journal, epoch

    def evaluate(self, model, report=None, arch=None, budget=None):
        began, waits = time.time(), []
        value = arch["width"] / 200
        try:
            for _ in range(budget):
                time.sleep(self.epoch)
                asked = time.perf_counter()
                try:
                    report(value)
                finally:
                    waits.append(time.perf_counter() - asked)
        finally:
            self._write(began, waits)
        return value

    def _write(self, began: float, waits: list[float]) -> None:
        line = " ".join([f"{began:.6f}", f"{time.time():.6f}", *(f"{w:.6f}" for w in waits)])
        fd = os.open(self.journal, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            os.write(fd, (line + "\n").encode())
        finally:
            os.close(fd)


def one_run(args: argparse.Namespace, seed: int) -> tuple[float, list[float], int]:
    """Utilisation, the report waits and the number of jobs of one run."""
    workdir = tempfile.mkdtemp()
    journal = str(Path(workdir) / "journal")
    exp = NasExperiment(
        Net(),
        Journaled(journal, args.epoch),
        Random(seed=seed),
        workdir=Path(workdir) / "exp",
        build_model=False,
        progress=False,
        scheduler=ASHA(1, 9, eta=3),
        max_trials=args.trials,
        execution=args.execution,
        max_concurrent_trials=args.workers,
        trial_resources={"num_cpus": 1} if args.execution == "ray" else None,
    )
    exp.run()
    jobs = [[float(x) for x in line.split()] for line in Path(journal).read_text().splitlines()]
    busy = sum(end - began for began, end, *_ in jobs)
    span = max(end for _, end, *_ in jobs) - min(began for began, *_ in jobs)
    waits = [w for _, _, *ws in jobs for w in ws]
    return busy / (args.workers * span), waits, len(jobs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epoch", type=float, default=0.05, help="seconds per budget unit")
    parser.add_argument("--trials", type=int, default=60)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--execution", choices=["process", "ray"], default="process")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    runs = [one_run(args, seed) for seed in range(args.repeats)]
    utilisation = statistics.median(u for u, _, _ in runs)
    waits = sorted(w for _, ws, _ in runs for w in ws)
    p95 = waits[int(0.95 * (len(waits) - 1))]
    print(
        f"ASHA(1, 9, eta=3), {args.trials} trials, {args.workers} {args.execution} workers, "
        f"{args.epoch:g} s per epoch, {statistics.median(n for *_, n in runs)} jobs: "
        f"utilisation {utilisation:.1%}; report round trip median "
        f"{statistics.median(waits) * 1e3:.2f} ms, p95 {p95 * 1e3:.2f} ms"
    )


if __name__ == "__main__":
    main()
