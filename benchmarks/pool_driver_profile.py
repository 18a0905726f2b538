"""Does the process pool's driver do more work per trial late in a long experiment? (issue 18)

    OMP_NUM_THREADS=1 PYTHONPATH=. python benchmarks/pool_driver_profile.py --trials 30000

Wall-time throughput of the pool (``trial_overhead.py --sections scale``) moves with whatever
else runs on the machine, so on a shared machine its last-1k/first-1k ratio cannot tell a
slowdown from a busy neighbour. This runs one pool experiment of ``--trials`` trivial trials on
``trial_overhead``'s 12-label space and profiles the driver (``cProfile``) over two windows of
``--window`` trials: one early (from trial 1,000) and one at the end. It prints, per window, the
Python function calls per trial (the work, which load does not change), the driver's CPU and
wall time per trial, and the top functions by own time. Equal calls per trial in both windows
mean nothing in the driver grows with the number of trials; time spent in ``poll`` is waiting
for the workers.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from trial_overhead import TimedRandom, WideSpace, trivial  # noqa: E402

from nasx.experiment import NasExperiment  # noqa: E402


class WindowProfiler(TimedRandom):
    """A strategy that turns the profiler on and off as results come back."""

    def __init__(self, windows: list[tuple[int, int]], **kwargs):
        super().__init__(**kwargs)
        self.windows, self.told = windows, 0
        self.profiles: dict[int, tuple[cProfile.Profile, float, float]] = {}

    def tell(self, trial) -> None:
        self.told += 1
        for start, end in self.windows:
            if self.told == start:
                p = cProfile.Profile()
                self.profiles[start] = (p, time.process_time(), time.perf_counter())
                p.enable()
            elif self.told == end:
                p, cpu, wall = self.profiles[start]
                p.disable()
                self.profiles[start] = (p, time.process_time() - cpu, time.perf_counter() - wall)
        super().tell(trial)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--trials", type=int, default=30000)
    p.add_argument("--window", type=int, default=2000)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--top", type=int, default=8)
    args = p.parse_args()
    n, w = args.trials, args.window
    windows = [(1000, 1000 + w), (n - w - 500, n - 500)]
    strategy = WindowProfiler(windows, dedup=False, seed=0)
    d = tempfile.mkdtemp(prefix="nasx-pool-profile-")
    try:
        NasExperiment(
            WideSpace(),
            trivial,
            strategy,
            workdir=d,
            max_trials=n,
            max_concurrent_trials=args.workers,
            execution="process",
            progress=False,
        ).run()
    finally:
        shutil.rmtree(d, ignore_errors=True)
    calls = {}
    for start, _ in windows:
        prof, cpu, wall = strategy.profiles[start]
        out = io.StringIO()
        stats = pstats.Stats(prof, stream=out)
        calls[start] = stats.total_calls / w  # type: ignore[attr-defined]
        print(
            f"trials {start}-{start + w}: {calls[start]:.1f} Python calls per trial, driver CPU "
            f"{cpu / w * 1e3:.2f} ms per trial, wall {wall / w * 1e3:.2f} ms per trial"
        )
        stats.sort_stats("tottime").print_stats(args.top)
        lines = out.getvalue().splitlines()
        table = lines[next(i for i, line in enumerate(lines) if "ncalls" in line) :]
        print("\n".join(line for line in table if line.strip()))
    late, early = calls[windows[1][0]], calls[windows[0][0]]
    print(f"calls per trial, late / early window: {late / early:.3f}")


if __name__ == "__main__":
    main()
