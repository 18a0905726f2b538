"""Benchmark: the error of the per-block latency predictor against measured latency.

    OMP_NUM_THREADS=1 PYTHONPATH=. python benchmarks/latency_predictor.py --archs 20 \\
        --calibration 5 --rounds 5 --resolution 128 --repeats 15

Samples ``--archs`` MnasNet archs to evaluate on (seeds 1000 + i, 10 classes) and
``--calibration`` other archs to calibrate on (seeds 5000 + i). The machine may be shared, so
everything is measured in ``--rounds`` rounds; each round visits every arch in a fresh random
order and, for each, back to back: the whole model (median of ``--repeats`` after warm-up), the
same model with every block timed in place by hooks (the blocks "in context"), and the blocks of
the arch the round's :class:`LatencyTable` lacks, each alone (as the table is filled). Every
figure is the median over the rounds, so a burst of load shifts one round of every arch rather
than one arch. Prints, over the evaluation archs, the median and 90th-percentile absolute
percentage error and the bias of the raw table (sum of blocks) and of the table calibrated on
the calibration archs (``LatencyTable.calibrate``: ``scale * sum + offset``), Spearman's rank
correlation, the latency hit rate at a target (``--target-ms``, default: the median measured
latency of the evaluation archs; of the archs a predictor puts under the target, the share that
measure under it, as a latency-constrained search uses the predictor), where the raw sum's gap
comes from (blocks alone vs in context vs the whole model), and the load average seen during the
run. ``--device cuda`` measures on the GPU (synchronised).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import time
from collections import defaultdict

import numpy as np
import torch

from nasx.hardware.cost import build_on
from nasx.hardware.latency import cpu_threads, measure_latency
from nasx.hardware.predictor import LatencyTable
from nasx.hub.mnasnet import MnasLayer, MnasNet
from nasx.space import search_space


def spearman(a: list[float], b: list[float]) -> float:
    ra, rb = np.argsort(np.argsort(a)), np.argsort(np.argsort(b))
    return float(np.corrcoef(ra, rb)[0, 1])


def in_context(table, model, shape, repeats, warmup, clock, device):
    """Sum over blocks of the median time each block takes inside the model's forward pass."""
    now = time.perf_counter if clock == "wall" else time.thread_time
    sync = (lambda: torch.cuda.synchronize(device)) if device.type == "cuda" else (lambda: None)
    units = table._units(model)
    times: dict[int, list[float]] = defaultdict(list)
    start: dict[int, float] = {}

    def pre(m, _):
        sync()
        start[id(m)] = now()

    def post(m, _, __):
        sync()
        times[id(m)].append(now() - start[id(m)])

    hooks = [u.register_forward_pre_hook(pre) for u in units]
    hooks += [u.register_forward_hook(post) for u in units]
    x = torch.randn(table.batch_size, *shape, device=device)
    try:
        with torch.no_grad(), cpu_threads(table.threads):
            for i in range(warmup + repeats):
                if i == warmup:
                    times.clear()
                model(x)
    finally:
        for h in hooks:
            h.remove()
    # a unit called k times per pass (a shared module) has k samples per pass: sum per pass
    return sum(statistics.median(v) * 1e3 for v in times.values())


def errors(pred, meas):
    e = [abs(p - m) / m * 100 for p, m in zip(pred, meas)]
    bias = statistics.fmean((p - m) / m * 100 for p, m in zip(pred, meas))
    return statistics.median(e), float(np.percentile(e, 90)), max(e), bias


def hit_rate(pred, meas, target):
    """(hits, admitted): of the archs predicted at or under ``target`` ms, how many measure so."""
    admitted = [m for p, m in zip(pred, meas) if p <= target]
    return sum(m <= target for m in admitted), len(admitted)


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--archs", type=int, default=20)
    p.add_argument("--calibration", type=int, default=5)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--resolution", type=int, default=128)
    p.add_argument("--batch-size", type=int, default=1)
    p.add_argument("--device", default="cpu")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--repeats", type=int, default=15)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--statistic", choices=("median", "min"), default="median")
    p.add_argument(
        "--clock",
        choices=("wall", "thread"),
        default="wall",
        help="thread: CPU time of the measuring thread (CPU, 1 thread; for a shared machine)",
    )
    p.add_argument(
        "--target-ms",
        type=float,
        default=None,
        help="latency target of the hit rate (default: median measured latency of the eval archs)",
    )
    p.add_argument("--table", default=None, help="save the merged, calibrated table here (JSON)")
    p.add_argument("--json", default=None, help="write every arch's figures here")
    p.add_argument("--verbose", action="store_true", help="print every arch's figures")
    return p.parse_args()


def measure_rounds(args, models, metas, shape, settings, device):
    """``--rounds`` rounds, each visiting every arch in a fresh random order: the whole model, its
    blocks in context, and the blocks this round's table lacks. Returns, per arch, the whole
    model's and the in-context latency of each round; the round tables; the load averages."""
    whole = [[] for _ in models]
    context = [[] for _ in models]
    tables = []
    loads = [os.getloadavg()[0]]
    for r in range(args.rounds):
        table = LatencyTable(args.device, **settings)
        order = list(range(len(models)))
        random.Random(r).shuffle(order)
        for i in order:
            res = measure_latency(
                models[i],
                shape,
                batch_size=args.batch_size,
                device=device,
                threads=args.threads,
                warmup=args.warmup,
                repeats=args.repeats,
                clock=args.clock,
            )
            whole[i].append(res.median_ms if args.statistic == "median" else res.min_ms)
            context[i].append(
                in_context(table, models[i], shape, args.repeats, args.warmup, args.clock, device)
            )
            table.block_sum(metas[i], shape)  # measures the blocks this round lacks
        tables.append(table)
        loads.append(os.getloadavg()[0])
        print(f"round {r + 1}/{args.rounds}: {len(table)} blocks, load average {loads[-1]:.1f}")
    return whole, context, tables, loads


def merge_tables(tables, settings, device_name):
    """One table holding, for every block, the median of the rounds' times."""
    merged = LatencyTable(device_name, measure_missing=False, **settings)
    keys = set().union(*(t.entries for t in tables))
    merged.entries = {k: statistics.median(t.entries[k] for t in tables) for k in keys}
    return merged


def print_errors(args, fig, n):
    """Prediction errors, the latency hit rate and where the raw sum's gap comes from; returns
    the hit rate's target (ms). ``fig``: the figures of every arch (the evaluation archs first)."""
    measured, ctx, raw, cal = (
        fig["measured"],
        fig["in_context"],
        fig["table_sum"],
        fig["calibrated"],
    )
    raw_e, cal_e = errors(raw[:n], measured[:n]), errors(cal, measured[:n])
    for name, (med, p90, worst, bias) in (("table sum ", raw_e), ("calibrated", cal_e)):
        print(
            f"{name}: abs. error median {med:.1f} %, p90 {p90:.1f} %, max {worst:.1f} %, "
            f"bias {bias:+.1f} %"
        )
    print(f"calibration: measured = {fig['scale']:.3f} * sum + {fig['offset_ms']:.3f} ms")
    target = args.target_ms if args.target_ms is not None else statistics.median(measured[:n])
    under = sum(m <= target for m in measured[:n])
    for name, pred in (("table sum ", raw[:n]), ("calibrated", cal)):
        hits, admitted = hit_rate(pred, measured[:n], target)
        share = f"{hits / admitted:.0%}" if admitted else "n/a"
        print(
            f"{name}: latency hit rate at {target:.3f} ms: {hits}/{admitted} ({share}) of the "
            f"archs it puts under the target measure under it ({under}/{n} archs do)"
        )
    print(f"Spearman(table sum, measured) = {spearman(raw[:n], measured[:n]):.3f}")
    alone = statistics.median(c / s for c, s in zip(ctx[:n], raw[:n]))
    outside = statistics.median((m - c) / m * 100 for m, c in zip(measured[:n], ctx[:n]))
    print(
        f"where the gap is: blocks in context / blocks alone = {alone:.2f} (median); "
        f"time outside the blocks (whole - in context) = {outside:.1f} % of the whole"
    )
    return target


def print_report(args, merged, shape, elapsed, loads, fig, n):
    """The run's settings, then the measured latencies, then :func:`print_errors`; returns its
    target."""
    measured = fig["measured"]
    if args.verbose:
        for i in range(n):
            print(
                f"arch {i}: measured {measured[i]:.3f} ms, blocks in context "
                f"{fig['in_context'][i]:.3f}, table sum {fig['table_sum'][i]:.3f}, "
                f"calibrated {fig['calibrated'][i]:.3f}"
            )
    print(
        f"device {merged.device_key}, torch {torch.__version__}, input {args.batch_size} x "
        f"{shape}, {args.statistic} of {args.repeats} runs, {args.clock} clock, "
        f"{args.rounds} interleaved rounds in {elapsed:.0f} s"
    )
    print(
        f"load average (1 min) during the run: {min(loads):.1f} - {max(loads):.1f} "
        f"on {os.cpu_count()} CPUs"
    )
    print(
        f"table: {len(merged)} blocks; {args.archs} evaluation archs, {args.calibration} calibration archs"
    )
    print(
        f"measured latency: median {statistics.median(measured[:n]):.3f} ms "
        f"(range {min(measured[:n]):.3f} - {max(measured[:n]):.3f})"
    )
    return print_errors(args, fig, n)


def main() -> None:
    args = parse_args()
    torch.manual_seed(0)
    device = torch.device(args.device)
    space = MnasNet(num_classes=10)
    ss = search_space(space)
    evals = [ss.sample(seed=1000 + i) for i in range(args.archs)]
    calib = [ss.sample(seed=5000 + i) for i in range(args.calibration)]
    archs = evals + calib
    shape = (3, args.resolution, args.resolution)
    settings = dict(
        block_types=(MnasLayer,),
        batch_size=args.batch_size,
        threads=args.threads,
        warmup=args.warmup,
        repeats=args.repeats,
        statistic=args.statistic,
        clock=args.clock,
    )
    models = [space.freeze(a).to(device).eval() for a in archs]
    metas = [build_on(space, a, "meta") for a in archs]
    started = time.perf_counter()
    whole, context, tables, loads = measure_rounds(args, models, metas, shape, settings, device)
    elapsed = time.perf_counter() - started
    merged = merge_tables(tables, settings, args.device)
    n = len(evals)
    measured = [statistics.median(v) for v in whole]
    raw = [merged.block_sum(m, shape) for m in metas]
    scale, offset = merged.calibrate(space, calib, shape, measured=measured[n:])
    fig = {
        "measured": measured,
        "in_context": [statistics.median(v) for v in context],
        "table_sum": raw,
        "calibrated": [merged.predict(m, shape) for m in metas[:n]],
        "scale": scale,
        "offset_ms": offset,
    }
    if args.table:
        merged.save(args.table)
    target = print_report(args, merged, shape, elapsed, loads, fig, n)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(
                {
                    "args": vars(args),
                    "loads": loads,
                    "measured": measured,
                    "in_context": fig["in_context"],
                    "table_sum": raw,
                    "calibrated": fig["calibrated"],
                    "scale": scale,
                    "target_ms": target,
                    "offset_ms": offset,
                },
                f,
                indent=1,
            )


if __name__ == "__main__":
    main()
