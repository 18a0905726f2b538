"""Does watching an experiment slow it down? Time a multi-trial search alone, then while `nasx
serve` (its own process) answers a browser-like poller, at the page's rate and at 10x that rate.

    PYTHONPATH=. python benchmarks/dashboard_overhead.py [--trials 30] [--repeats 3]

Each trial does a fixed amount of CPU work (~0.1-0.2 s of matrix products, one thread); the figure is
the median wall time of the search over ``--repeats`` runs, and its ratio to the search alone.
"""

from __future__ import annotations

import argparse
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch
import torch.nn as nn

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from nasx.experiment import NasExperiment  # noqa: E402
from nasx.space import ModelSpace, choice  # noqa: E402
from nasx.strategy import Random  # noqa: E402

POLLER = """
import sys, time, urllib.request
port, period = int(sys.argv[1]), float(sys.argv[2])
paths = ['/api/experiments', '/api/exp/0', '/api/exp/0/chart/history.svg', '/api/exp/0/chart/curves.svg']
while True:
    for p in paths:  # what the page fetches when the experiment changed
        try:
            urllib.request.urlopen(f'http://127.0.0.1:{port}{p}', timeout=30).read()
        except Exception:
            pass
    time.sleep(period)
"""


class Space(ModelSpace):
    def __init__(self):
        super().__init__()
        self.width = choice("width", [192, 224, 256])
        self.tag = choice("tag", list(range(16)))  # 48 archs: Random never runs out
        self.fc = nn.Linear(4, 4)


def work(model, report):
    x = torch.randn(model.width, model.width)
    for _epoch in range(4):
        for _ in range(25):
            x = torch.tanh(x @ x.T / model.width)
        report(float(x.mean()))
    return float(x.abs().mean())


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def one_run(trials: int, poll_period: float | None) -> float:
    workdir = Path(tempfile.mkdtemp()) / "exp"
    NasExperiment(
        Space(), work, Random(seed=0), workdir=workdir, max_trials=1, progress=False
    ).run()
    procs = []
    if poll_period is not None:
        port = free_port()
        env = {"PYTHONPATH": str(ROOT)}
        procs.append(
            subprocess.Popen(
                [sys.executable, "-m", "nasx.cli", "serve", str(workdir), "--port", str(port)],
                stdout=subprocess.DEVNULL,
                env={**__import__("os").environ, **env},
            )
        )
        time.sleep(2.0)  # the server imports and binds
        procs.append(subprocess.Popen([sys.executable, "-c", POLLER, str(port), str(poll_period)]))
        time.sleep(1.0)
    exp = NasExperiment(
        Space(),
        work,
        Random(seed=0),
        workdir=workdir,
        max_trials=1 + trials,
        resume=True,
        progress=False,
    )
    start = time.perf_counter()
    exp.run()
    elapsed = time.perf_counter() - start
    for p in procs:
        p.terminate()
        p.wait()
    return elapsed


def median(xs: list[float]) -> float:
    xs = sorted(xs)
    return xs[len(xs) // 2]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=30)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    torch.set_num_threads(1)
    modes = {"alone": None, "dashboard, page rate (2 s)": 2.0, "dashboard, 10x (0.2 s)": 0.2}
    times = {name: [] for name in modes}
    for _ in range(args.repeats):  # interleaved, so drifting machine load hits every mode alike
        for name, period in modes.items():
            times[name].append(one_run(args.trials, period))
    base = median(times["alone"])
    for name, ts in times.items():
        print(
            f"{name:28s} {median(ts):7.2f} s  x{median(ts) / base:.2f}  ({', '.join(f'{t:.2f}' for t in ts)})"
        )


if __name__ == "__main__":
    main()
