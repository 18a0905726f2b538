"""Benchmark: how many archs per minute ``arch_cost`` prices (params + MACs) without training.

    OMP_NUM_THREADS=1 PYTHONPATH=. python benchmarks/arch_cost.py --archs 20000 --check 200
    OMP_NUM_THREADS=1 PYTHONPATH=. python benchmarks/arch_cost.py --space proxylessnas

For each ``--space`` (``mnasnet``, ``proxylessnas``, ``mobilenetv3``; default ``all``: the three in
turn), draws ``--archs`` archs (seed i for arch i) and prices each with
:func:`nasx.hardware.cost.arch_cost` three ways: by the space's formulas (its ``analytic_cost``,
from :mod:`nasx.hub.layer_costs`, per-layer costs cached by the layer's choices and input: the
default), by building the model on the ``meta`` device and tracing shapes (``analytic=False``:
what any space gets), and by a real build and forward pass on the CPU (the reference). The two
slower ways price the first ``--check`` archs (the CPU one a quarter of them), the script asserts
all agree on those, and it prints archs per minute (wall clock and per CPU-minute of this
process), the ratios and the load average.
With ``--predictor`` it adds a latency prediction from a ``LatencyTable`` filled beforehand (the
table lookup only; measuring the table is reported separately by ``latency_predictor.py``).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import torch

from nasx.hardware.cost import arch_cost
from nasx.hardware.predictor import LatencyTable
from nasx.hub.mnasnet import MnasLayer, MnasNet
from nasx.hub.mobile_blocks import InvertedResidual
from nasx.hub.mobilenetv3 import MobileNetV3Space
from nasx.hub.proxylessnas import ProxylessNAS
from nasx.space import search_space


def rate(space, archs, shape, device, latency=None, rounds=3, analytic=True):
    """Median archs per minute over ``rounds`` passes (wall clock and this process's CPU time: on
    a shared machine the CPU-time rate is the one an idle core would give), and the costs."""
    per_min, per_cpu_min, costs = [], [], []
    for _ in range(rounds):
        start, cpu = time.perf_counter(), time.process_time()
        costs = [
            arch_cost(space, a, shape, device=device, latency=latency, analytic=analytic)
            for a in archs
        ]
        per_min.append(60 * len(archs) / (time.perf_counter() - start))
        per_cpu_min.append(60 * len(archs) / (time.process_time() - cpu))
    return (statistics.median(per_min), statistics.median(per_cpu_min)), costs


SPACES = {
    "mnasnet": (MnasNet, MnasLayer),
    "proxylessnas": (ProxylessNAS, InvertedResidual),
    "mobilenetv3": (MobileNetV3Space, InvertedResidual),
}
"""``--space`` name -> (space class, the block type a latency table times)."""


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--space", choices=[*SPACES, "all"], default="all")
    p.add_argument("--archs", type=int, default=20000)
    p.add_argument("--check", type=int, default=200, help="archs priced the slow ways too")
    p.add_argument("--resolution", type=int, default=224)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--predictor", action="store_true")
    args = p.parse_args()
    shape = (3, args.resolution, args.resolution)
    torch.set_num_threads(1)  # CPU time then equals the one core's work
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, input {shape}")
    for name in SPACES if args.space == "all" else [args.space]:
        bench(name, args, shape)


def bench(name: str, args: argparse.Namespace, shape: tuple[int, ...]) -> None:
    """Price ``args.archs`` archs of space ``name`` every way and print the rates."""
    cls, block = SPACES[name]
    space = cls()
    ss = search_space(space)
    archs = [ss.sample(seed=i) for i in range(args.archs)]
    arch_cost(space, archs[0], shape)  # first call loads the meta kernels
    arch_cost(space, archs[0], shape, analytic=False)
    fast, fast_costs = rate(space, archs, shape, "meta", rounds=args.rounds)
    sample = archs[: args.check]
    meta, meta_costs = rate(space, sample, shape, "meta", rounds=args.rounds, analytic=False)
    cpu, cpu_costs = rate(space, sample[: max(1, len(sample) // 4)], shape, "cpu", rounds=1)
    assert fast_costs[: len(meta_costs)] == meta_costs, f"{name}: formulas and meta build differ"
    assert meta_costs[: len(cpu_costs)] == cpu_costs, f"{name}: meta and cpu counts differ"
    print(
        f"\nparams + MACs of {cls.__name__} archs; equal on the {len(meta_costs)} priced every way "
        f"({len(cpu_costs)} on the CPU too); load average {os.getloadavg()[0]:.1f}"
    )
    rows = (
        (f"formulas ({args.archs} archs)", fast),
        (f"meta build + shape trace ({len(sample)})", meta),
        (f"real build + forward, cpu ({len(cpu_costs)})", cpu),
    )
    for row, (wall, per_cpu) in rows:
        print(f"{row:40s} {wall:9.0f} archs/min wall, {per_cpu:9.0f} per CPU-minute")
    print(
        f"formulas / meta build: {fast[1] / meta[1]:.0f}x; meta build / cpu: "
        f"{meta[1] / cpu[1]:.2f}x (CPU time)"
    )
    if args.predictor:
        table = LatencyTable(block_types=(block,), warmup=2, repeats=5)
        small = (3, 64, 64)
        table.fill(space, archs, small)
        with_lat, _ = rate(space, archs, small, "meta", latency=table, rounds=args.rounds)
        print(
            f"arch_cost + table latency on meta at {small}: {with_lat[0]:6.0f} archs/min wall, "
            f"{with_lat[1]:6.0f} per CPU-minute"
        )


if __name__ == "__main__":
    main()
