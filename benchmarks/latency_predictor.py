"""Benchmark: the error of the per-block latency predictor against measured latency.

    PYTHONPATH=. python benchmarks/latency_predictor.py --archs 30 --resolution 128 \\
        --device cpu --threads 1 --table /tmp/mnasnet_latency.json

Samples ``--archs`` MnasNet archs (seed 1; 10 classes), fills a :class:`LatencyTable` with
``MnasLayer`` blocks for them (every block measured once, median of ``--repeats``), then for each
arch measures the whole model (median of ``--repeats`` after warm-up) and compares it with the
table's prediction. Prints the mean and worst absolute percentage error, the rank correlation
(Spearman) between predicted and measured latency, the time to fill the table and the
prediction speed. ``--device cuda`` measures on the GPU (synchronised).
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import torch

from nasx.hardware.cost import build_on
from nasx.hardware.latency import measure_latency
from nasx.hardware.predictor import LatencyTable
from nasx.hub.mnasnet import MnasLayer, MnasNet
from nasx.space import search_space


def spearman(a: list[float], b: list[float]) -> float:
    ra, rb = np.argsort(np.argsort(a)), np.argsort(np.argsort(b))
    return float(np.corrcoef(ra, rb)[0, 1])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--archs", type=int, default=30)
    p.add_argument("--resolution", type=int, default=128)
    p.add_argument("--batch-size", type=int, default=1)
    p.add_argument("--device", default="cpu")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--repeats", type=int, default=30)
    p.add_argument("--table", default=None, help="JSON file to load the table from and save to")
    p.add_argument("--statistic", choices=("median", "min"), default="median")
    p.add_argument(
        "--clock",
        choices=("wall", "thread"),
        default="wall",
        help="thread: CPU time of the measuring thread (CPU, 1 thread; for a shared machine)",
    )
    p.add_argument("--verbose", action="store_true", help="print every arch's two figures")
    args = p.parse_args()
    torch.manual_seed(0)
    space = MnasNet(num_classes=10)
    ss = search_space(space)
    archs = [ss.sample(seed=1000 + i) for i in range(args.archs)]
    shape = (3, args.resolution, args.resolution)
    table = LatencyTable(
        args.device,
        block_types=(MnasLayer,),
        batch_size=args.batch_size,
        threads=args.threads,
        warmup=5,
        repeats=args.repeats,
        statistic=args.statistic,
        clock=args.clock,
    )
    if args.table:
        table.load(args.table)
    start = time.perf_counter()
    table.fill(space, archs, shape)
    fill_s = time.perf_counter() - start
    if args.table:
        table.save(args.table)
    predicted, measured = [], []
    for arch in archs:
        model = space.freeze(arch)
        result = measure_latency(
            model,
            shape,
            batch_size=args.batch_size,
            device=args.device,
            threads=args.threads,
            warmup=10,
            repeats=args.repeats,
        )
        measured.append(result.median_ms if args.statistic == "median" else result.min_ms)
    start = time.perf_counter()
    predicted = [table.predict(build_on(space, a, "meta"), shape) for a in archs]
    predict_s = (time.perf_counter() - start) / len(archs)
    if args.verbose:
        for i, (p_ms, m_ms) in enumerate(zip(predicted, measured)):
            print(f"arch {i}: predicted {p_ms:.3f} ms, measured {m_ms:.3f} ms")
    errors = [abs(p - m) / m * 100 for p, m in zip(predicted, measured)]
    bias = statistics.fmean((p - m) / m * 100 for p, m in zip(predicted, measured))
    print(
        f"device {table.device_key}, input {args.batch_size} x {shape}, {args.archs} archs, "
        f"{args.statistic} of {args.repeats} runs, {args.clock} clock"
    )
    print(f"table: {len(table)} blocks, {table.measured} measured in {fill_s:.1f} s")
    print(
        f"measured latency: median {statistics.median(measured):.3f} ms "
        f"(range {min(measured):.3f} - {max(measured):.3f})"
    )
    print(
        f"predictor error: mean {statistics.fmean(errors):.1f} %, "
        f"median {statistics.median(errors):.1f} %, max {max(errors):.1f} %, bias {bias:+.1f} %"
    )
    print(f"Spearman(predicted, measured) = {spearman(predicted, measured):.3f}")
    print(f"prediction: {predict_s * 1e3:.1f} ms per arch ({60 / predict_s:.0f} archs/min)")


if __name__ == "__main__":
    main()
